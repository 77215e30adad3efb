"""Training through a Docker engine outage: wait for the engine, rerun, or stop resumably.

When rollouts of a step come back as infra errors, `EngineWait.after_infra_errors` pings
the run's sandbox backend (`SandboxBackend.wait`: the Docker engines, or the Ray cluster).
It answers: nothing to do (the errors were not an outage; they stay masked). It does not:
the run waits for it, bounded by `rollout.sandbox.engine_wait_s`, saying so (as evaluation
does), then

- it is back: the containers the outage stranded are removed (`idle=True`) and
  the caller reruns the step's rollouts that failed (`StepRunner.run_all`): a rollout
  the outage broke says nothing about the policy, and the weights have not moved, so the
  rerun is the same on-policy sample. A rerun that fails again stays an infra error
  (masked, counted by the infra-rate stop);
- it is not: `EngineOutage` stops the run with one line saying how to resume
  (`resume_hint`). The step in progress is not trained on or logged, so the checkpoints and
  metrics.jsonl up to the last completed step stay valid; the stranded containers' owner
  is then dead, so the resumed run's automatic reap removes them.

Left out: several training processes (each waits on its own; one that gives up while
another's engine came back leaves the other waiting at the next gather).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from tbrl_lib.sandbox import SandboxBackend, backend_for
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.config.presets import overrides_of
from tbrl_lib.train.plan.resume import complete_checkpoints

WHO = "tbrl train"


class EngineWait:
    """Waits out an outage of the run's sandbox backend (see the module docstring)."""

    def __init__(
        self, backend: SandboxBackend, wait_s: float, resume_command: str, out: Path
    ) -> None:
        self.backend = backend
        self.wait_s, self.resume_command, self.out = wait_s, resume_command, out

    @classmethod
    def for_run(cls, config: TrainConfig, out: Path) -> EngineWait:
        sandbox = config.rollout.sandbox
        return cls(backend_for(sandbox), sandbox.engine_wait_s, resume_command(config, out), out)

    async def after_infra_errors(self, why: str) -> bool:
        """True when the backend did not answer and is back (rerun what failed); False when
        it answers; `EngineOutage` when it stays down past the wait."""
        return await self.backend.wait(why, self.wait_s, WHO, self.resume(), idle=True)

    def resume(self) -> str:
        """What to do if the run stops now (ends `EngineOutage`'s one line)."""
        if not complete_checkpoints(self.out):
            return f"no checkpoint is saved in {self.out} yet: start the run again"
        return f"the checkpoints are kept; resume with: {self.resume_command}"


def resume_command(config: TrainConfig, out: Path) -> str:
    """`tbrl train run --preset P --set ... --out OUT --resume latest`: how to continue this
    run, the `--set` items being the settings that differ from preset P's."""
    sets = [arg for item in overrides_of(config) for arg in ("--set", item)]
    args = ["tbrl", "train", "run", "--preset", config.preset, *sets]
    return shlex.join([*args, "--out", str(out), "--resume", "latest"])
