"""`SandboxConfig`: every knob of the sandbox in one validated place.

A trainer builds one config and passes it to `open_sandbox` for every rollout. Values
that come from the task (cpus, memory, pids, storage, internet, timeouts) live on
`Task.limits`; this config only holds what is a property of the *run*: output caps,
default timeouts, which Docker hosts to use, the warm pool size and overrides.
Validation errors say which field is wrong and how to fix it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator


class DockerHost(BaseModel):
    """One Docker engine and how many rollouts it may hold at once."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    base_url: str | None = None
    """unix:///var/run/docker.sock, tcp://host:2375, ssh://user@host; None = DOCKER_HOST/default."""
    max_concurrency: int = Field(default=64, gt=0)
    """Most containers tbrl runs on this host at once, counted across this machine's processes
    (`slots.py`); more rollouts wait for a slot."""

    @field_validator("base_url")
    @classmethod
    def _known_scheme(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(
            ("unix://", "tcp://", "ssh://", "http://", "https://")
        ):
            raise ValueError(
                f"docker host {value!r} has no known scheme; use unix:///path/docker.sock, "
                "tcp://HOST:2375 or ssh://USER@HOST"
            )
        return value


class SandboxConfig(BaseModel):
    """What a run asks of its sandboxes (task-specific limits come from `Task.limits`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    max_output_bytes: int = Field(default=64 * 1024, ge=256)
    """Output kept per command: first half and last half; the middle is dropped with a notice."""
    command_timeout_s: float = Field(default=180.0, gt=0)
    """Default per-command timeout when `run()` gets none."""
    wall_clock_s: float | None = Field(default=None, gt=0)
    """Hard limit for the whole rollout; None = task agent timeout + test timeout + 60 s."""
    allow_internet: bool | None = None
    """Override the task's network policy (None = follow `task.limits.allow_internet`)."""
    hosts: tuple[DockerHost, ...] = (DockerHost(),)
    """Docker engines to place containers on (least loaded first)."""
    pool_size: int = Field(default=0, ge=0)
    """Warm containers kept ready per image by `open_sandbox` (0 = start on demand)."""
    max_file_bytes: int = Field(default=64 * 1024 * 1024, gt=0)
    """Largest file `write_file`/`read_file` moves."""
    workdir: str = "/app"
    """Where the shell starts (created if missing)."""
    cap_add: tuple[str, ...] = ()
    """Capabilities added back on top of the minimal default set."""
    start_timeout_s: float = Field(default=120.0, gt=0)
    """Creating + starting a container and its shell must finish within this; past it the
    rollout is an infra error (masked). Raise it on busy hosts."""
    engine_wait_s: float = Field(default=300.0, ge=0)
    """How long a run waits for a Docker engine that stopped answering (a restart) before it
    stops, resumably (`sandbox/engine.py`: `wait_for_engine`); training reruns the rollouts
    the outage failed once the engine is back."""
    run_id: str = "adhoc"
    """Label `tbrl.run` put on every container (group a training run's containers)."""

    @field_validator("hosts", mode="before")
    @classmethod
    def _hosts(cls, value):
        if isinstance(value, (str, DockerHost)):
            value = [value]
        out = []
        for item in value:
            if isinstance(item, str):
                item = DockerHost(base_url=item)
            elif isinstance(item, (tuple, list)):
                if len(item) != 2:
                    raise ValueError(
                        f"host {item!r} must be (base_url, max_concurrency), e.g. "
                        "('unix:///var/run/docker.sock', 32)"
                    )
                item = DockerHost(base_url=item[0], max_concurrency=item[1])
            out.append(item)
        if not out:
            raise ValueError("hosts is empty; give at least one, e.g. [(None, 64)] for the default")
        return tuple(out)

    @field_validator("workdir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"workdir {value!r} must be an absolute path such as /app")
        return value
