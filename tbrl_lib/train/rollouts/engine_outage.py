"""Training through a Docker engine outage: wait for the engine, rerun, or stop resumably.

When rollouts of a step come back as infra errors, `EngineWait.after_infra_errors` pings
the run's engines (`rollout.sandbox.hosts`). Every engine answers: nothing to do (the
errors were not an outage; they stay masked). One does not: the run waits for it, bounded
by `rollout.sandbox.engine_wait_s`, saying so (`sandbox.engine.wait_for_engine`, as
evaluation does), then

- it is back: the containers the outage stranded are removed (`reaper.reap_stranded`) and
  the caller reruns the step's rollouts that failed (`RolloutRunner.run_all`): a rollout
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

import asyncio
import json
import shlex
from collections.abc import Sequence
from pathlib import Path

import yaml
from docker.errors import DockerException
from tqdm.auto import tqdm

from tbrl_lib.sandbox import reaper
from tbrl_lib.sandbox.engine import client, wait_for_engine
from tbrl_lib.train.config.config import TrainConfig
from tbrl_lib.train.config.presets import load_preset, preset_names
from tbrl_lib.train.plan.resume import complete_checkpoints, flat_settings

WHO = "tbrl train"


class EngineWait:
    """Waits out an outage of the run's engines (see the module docstring)."""

    def __init__(
        self, base_urls: Sequence[str | None], wait_s: float, resume_command: str, out: Path
    ) -> None:
        self.base_urls = list(dict.fromkeys(base_urls))
        self.wait_s, self.resume_command, self.out = wait_s, resume_command, out

    @classmethod
    def for_run(cls, config: TrainConfig, out: Path) -> EngineWait:
        sandbox = config.rollout.sandbox
        hosts = [h.base_url for h in sandbox.hosts]
        return cls(hosts, sandbox.engine_wait_s, resume_command(config, out), out)

    async def after_infra_errors(self, why: str) -> bool:
        """True when an engine did not answer and is back (rerun what failed); False when
        all answer; `EngineOutage` when one stays down past the wait."""
        waited = False
        for url in self.base_urls:
            waited |= await wait_for_engine(why, self.wait_s, WHO, self.resume(), base_url=url)
        if waited:
            for url in self.base_urls:
                stranded = await asyncio.to_thread(_reap_stranded, url)
                if stranded:
                    tqdm.write(f"{WHO}: removed {len(stranded)} containers the outage stranded")
        return waited

    def resume(self) -> str:
        """What to do if the run stops now (ends `EngineOutage`'s one line)."""
        if not complete_checkpoints(self.out):
            return f"no checkpoint is saved in {self.out} yet: start the run again"
        return f"the checkpoints are kept; resume with: {self.resume_command}"


def _reap_stranded(base_url: str | None) -> list[str]:
    """`reaper.reap_stranded` on one engine; one that fails again leaves them to the reaper."""
    try:
        docker_client = client(base_url)
        try:
            return reaper.reap_stranded(docker_client)
        finally:
            docker_client.close()
    except (DockerException, OSError) as err:
        tqdm.write(f"{WHO}: could not remove the containers the outage stranded yet: {err}")
        return []


def resume_command(config: TrainConfig, out: Path) -> str:
    """`tbrl train run --preset P --set ... --out OUT --resume latest`: how to continue this
    run, the `--set` items being the settings that differ from preset P's."""
    args = ["tbrl", "train", "run", "--preset", config.preset]
    if config.preset in preset_names():
        preset = flat_settings(load_preset(config.preset).to_dict())
        for key, value in flat_settings(config.to_dict()).items():
            if preset.get(key) != value:
                args += ["--set", f"{key}={_yaml_value(value)}"]
    return shlex.join([*args, "--out", str(out), "--resume", "latest"])


def _yaml_value(value: object) -> str:
    """`value` as `--set` reads it back (YAML): plain when that round-trips, else JSON."""
    if isinstance(value, str) and yaml.safe_load(value) == value:
        return value
    return json.dumps(value)
