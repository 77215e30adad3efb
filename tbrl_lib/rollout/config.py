"""`RolloutConfig`: everything one rollout needs besides the task, the policy and the judge.

The same object drives training, evaluation and validation, so the three cannot disagree
about limits, sandboxes or how the reward is combined. Per-task numbers (the agent and test
timeouts) come from the task; `timeout_scale` multiplies both (evaluation records it, since
Terminal-Bench forbids changing them).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.rewards.reward import RewardConfig
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.tasks.model import Task

GRACE_SECONDS = 60.0
"""Extra time past a limit before the rollout itself stops a step that should have ended."""


class RolloutConfig(BaseModel):
    """Episode limits, sandbox settings, reward weights and the verifier's time limit."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    episode: EpisodeLimits = Field(default_factory=EpisodeLimits)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    verify_timeout_s: float | None = Field(default=None, gt=0)
    """Time limit of the tests; None: the task's `test_timeout_sec` (x `timeout_scale`)."""
    timeout_scale: float = Field(default=1.0, gt=0)
    """Multiplies the task's own agent and test timeouts."""
    verify_repeats: int = Field(default=1, ge=1, le=20)
    """Test runs on the finished container (validation: >1 shows whether tests are flaky)."""
    grace_s: float = Field(default=GRACE_SECONDS, ge=0)
    """How long past its own limit an episode or the verifier may run before it is stopped."""

    def for_run(self, run_id: str) -> RolloutConfig:
        """This config with its sandboxes labelled `tbrl.run=<run_id>` (a run's containers)."""
        return self.model_copy(
            update={"sandbox": self.sandbox.model_copy(update={"run_id": run_id})}
        )

    def agent_limit(self, task: Task) -> float:
        if self.episode.time_limit_s is not None:
            return self.episode.time_limit_s
        return task.limits.agent_timeout_sec * self.timeout_scale

    def test_limit(self, task: Task) -> float:
        if self.verify_timeout_s is not None:
            return self.verify_timeout_s
        return task.limits.test_timeout_sec * self.timeout_scale

    def for_task(self, task: Task) -> tuple[EpisodeLimits, SandboxConfig]:
        """The episode limits and sandbox config of one rollout of `task`: the episode's
        time limit resolved, and a container wall clock that covers episode + tests."""
        agent, tests = self.agent_limit(task), self.test_limit(task)
        episode = self.episode.model_copy(update={"time_limit_s": agent})
        sandbox = self.sandbox
        if sandbox.wall_clock_s is None:
            sandbox = sandbox.model_copy(update={"wall_clock_s": agent + tests + 3 * self.grace_s})
        return episode, sandbox
