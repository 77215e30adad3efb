"""tbrl's agent as a Harbor agent: `harbor run -a tbrl_lib.harbor.agent:TbrlAgent -m SPEC`.

Imported by Harbor only (Python >= 3.12, the `harbor` extra); tbrl's own code never imports
this module. One trial is tbrl's one episode function, `run_episode`, with the same system
prompt, action language, tools and limits as `tbrl eval run`, a policy made by
`make_policy`, and Harbor's environment behind tbrl's `Sandbox` (`environment.py`).

The policy: `--ak policy=SPEC` or `-m SPEC`, where SPEC is a tbrl policy spec (`oracle`,
`noop`, `openai:BASE_URL+MODEL`, `anthropic:MODEL`, `hf:FOLDER`); Harbor's own model names
`openai/MODEL` (served at `--ak base_url=...`, default `$OPENAI_BASE_URL`) and
`anthropic/MODEL` are translated. `--ak token_ids=true` asks an OpenAI-compatible server
(vLLM) for the exact token ids, which then fill `AgentContext.rollout_details`.

The task: Harbor hands the agent the instruction and the environment, whose
`environment_dir` is the task's `environment/` folder; tbrl reads the whole task folder
from its parent (limits, metadata, and `solution/solve.sh`, which is what the oracle acts
out, as Harbor's own oracle does). A folder tbrl cannot read still runs, with the
instruction alone (no oracle).

What lands in `AgentContext`: input/output tokens summed over turns, the cost where
`tbrl_lib.pricing` knows the model, `rollout_details` (one entry: per turn the full
prompt ids and the completion ids, with logprobs when the policy gave them), and
`metadata` (termination, turns, tbrl's sandbox stats). The trajectory is saved as
`tbrl-trajectory.json` in the trial's agent log folder. Left out: Harbor's ATIF trajectory
format, resuming, and the judge (Harbor scores with the task's tests only).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from harbor.agents.base import BaseAgent
from harbor.environments.base import BaseEnvironment
from harbor.models.agent.context import AgentContext

import tbrl_lib
from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.agent.episode import run_episode
from tbrl_lib.agent.trajectory import Trajectory
from tbrl_lib.harbor import TRAJECTORY_FILE
from tbrl_lib.harbor.environment import HarborSandbox
from tbrl_lib.harbor.policy import RecordingPolicy, policy_spec
from tbrl_lib.models.policy_spec import make_policy
from tbrl_lib.pricing import cost_usd, price_for
from tbrl_lib.tasks.harbor_format import read_harbor_dir
from tbrl_lib.tasks.model import Environment, Task, Tests


class TbrlAgent(BaseAgent):
    """See the module docstring. Agent kwargs (`--ak KEY=VALUE`): `policy`, `api_base`,
    `token_ids`, `episode` (a JSON object of `EpisodeLimits` fields, e.g. `{"max_turns": 20}`),
    `timeout_scale` (the job's `--timeout-multiplier`, so the episode's own time limit, the
    task's agent timeout, scales with Harbor's)."""

    def __init__(
        self,
        logs_dir: Path,
        model_name: str | None = None,
        policy: str | None = None,
        token_ids: bool | str = False,
        episode: str | dict[str, Any] | None = None,
        api_base: str | None = None,
        timeout_scale: float | str = 1.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(logs_dir=logs_dir, model_name=model_name, **kwargs)
        self.spec = policy_spec(policy or model_name, api_base or os.environ.get("OPENAI_BASE_URL"))
        self.token_ids = str(token_ids).lower() in ("1", "true", "yes")
        fields = json.loads(episode) if isinstance(episode, str) else (episode or {})
        self.limits = EpisodeLimits.model_validate(fields)
        self.timeout_scale = float(timeout_scale)

    @staticmethod
    def name() -> str:
        return "tbrl"

    def version(self) -> str:
        return tbrl_lib.__version__

    async def setup(self, environment: BaseEnvironment) -> None:
        return None  # nothing to install: tbrl drives the shell from outside

    async def run(
        self, instruction: str, environment: BaseEnvironment, context: AgentContext
    ) -> None:
        task = self._task(instruction, Path(environment.environment_dir).parent)
        asks_ids = self.token_ids and self.spec.startswith("openai:")  # vLLM's return_token_ids
        options = {"return_token_ids": True} if asks_ids else {}
        policy = RecordingPolicy(make_policy(self.spec, **options))
        workdir = environment.task_env_config.workdir or "/app"
        started = time.monotonic()
        traj: Trajectory | None = None
        try:
            async with HarborSandbox(environment, workdir=workdir) as sandbox:
                traj = await run_episode(task, policy, sandbox, self.limits)
                context.metadata = {"sandbox": vars(sandbox.stats)}
        finally:
            self._fill(context, traj, policy, time.monotonic() - started)

    def _task(self, instruction: str, task_dir: Path) -> Task:
        """The task folder as tbrl reads it, with Harbor's instruction; a folder tbrl cannot
        read gives a task of the instruction alone (logged)."""
        try:
            task = read_harbor_dir(task_dir, lenient=True)
        except ValueError as err:  # TaskFormatError: a task.toml tbrl does not model
            self.logger.warning("tbrl could not read %s (%s); running without it", task_dir, err)
            return Task(
                id=task_dir.name,
                instruction=instruction,
                environment=Environment(dockerfile="FROM scratch\n"),
                tests=Tests(script="exit 1\n"),
            )
        timeout = task.limits.agent_timeout_sec * self.timeout_scale
        limits = task.limits.model_copy(update={"agent_timeout_sec": timeout})
        return task.model_copy(update={"instruction": instruction, "limits": limits})

    def _fill(
        self,
        context: AgentContext,
        traj: Trajectory | None,
        policy: RecordingPolicy,
        seconds: float,
    ) -> None:
        turns = traj.turns if traj else []
        tokens_in = sum(t.prompt_tokens for t in turns)
        tokens_out = sum(t.completion_tokens for t in turns)
        context.n_input_tokens, context.n_output_tokens = tokens_in, tokens_out
        price = price_for(getattr(policy.inner, "model", policy.name))
        context.cost_usd = cost_usd(price, tokens_in, tokens_out) if price else None
        context.rollout_details = policy.rollout_details() or None
        context.metadata = {
            **(context.metadata or {}),
            "policy": self.spec,
            "termination": traj.termination.value if traj and traj.termination else None,
            "termination_message": traj.termination_message if traj else None,
            "turns": len(turns),
            "agent_seconds": seconds,
        }
        if traj is not None:
            self.logs_dir.mkdir(parents=True, exist_ok=True)
            (self.logs_dir / TRAJECTORY_FILE).write_text(traj.to_json())
