"""`SandboxConfig`: every knob of the sandbox in one validated place.

A trainer builds one config and passes it to `open_sandbox` for every rollout. Values
that come from the task (cpus, memory, pids, storage, internet, timeouts) live on
`Task.limits`; this config only holds what is a property of the *run*: output caps, the
storage cap of tasks that state none, default timeouts, which backend runs the sandboxes
(`backend`, with each backend's own settings under its name: `docker.max_concurrency`,
`ray.address`, ...), the warm pool size and overrides. Validation errors say which field is
wrong and how to fix it.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from tbrl_lib.sandbox.registry import BACKENDS, registered, settings_model


class DockerHost(BaseModel):
    """One Docker engine and how many rollouts it may hold at once (the docker backend's
    engine, `DockerSettings.hosts`; a test's or a tool's own engine)."""

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


class DockerSettings(BaseModel):
    """The `docker` backend: containers on this machine's Docker engine (`DOCKER_HOST`, else
    the local socket). Sandboxes across machines go through the `ray` backend."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    max_concurrency: int = Field(default=64, gt=0)
    """Most containers tbrl runs on the engine at once, counted across this machine's processes
    (`slots.py`); more rollouts wait for a slot."""

    @model_validator(mode="before")
    @classmethod
    def _no_hosts(cls, data):
        if isinstance(data, dict) and "hosts" in data:
            raise ValueError(
                "sandbox.docker.hosts (several Docker engines) is gone: place sandboxes across "
                "machines with sandbox.backend=ray (each node runs its share on its own engine; "
                "docs/sandbox.md); the docker backend uses this machine's engine (DOCKER_HOST), "
                "at most sandbox.docker.max_concurrency at once"
            )
        return data

    @property
    def hosts(self) -> tuple[DockerHost, ...]:
        """The engine as the slot and image code sees it: one `DockerHost` (`DOCKER_HOST`, else
        the local socket) with this cap."""
        return (DockerHost(max_concurrency=self.max_concurrency),)


class RaySettings(BaseModel):
    """The `ray` backend: each rollout's sandbox placed by Ray on a node with a free unit of
    `resource`, run on that node's own Docker engine (`backends/ray/`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    address: str | None = None
    """The cluster: None = `RAY_ADDRESS`, or a local `ray.init()` when that is unset too."""
    namespace: str = "tbrl"
    """Ray namespace of the per-node host actors (jobs in one namespace share them)."""
    resource: str = "sandbox"
    """The custom resource each node declares as its sandbox capacity
    (`ray start --resources '{\"sandbox\": 8}'`)."""
    placement_timeout_s: float = Field(default=900.0, gt=0)
    """How long a rollout waits for a free `resource` unit before it is an infra error
    (`no_capacity`)."""
    keep_idle_s: float = Field(default=10.0, ge=0)
    """How long a finished sandbox's actor, and the unit it holds, waits for this process's
    next rollout before it ends and the unit is freed (a new actor is a new process on its
    node: 1-3 s here); 0 = end at once."""


class SandboxConfig(BaseModel):
    """What a run asks of its sandboxes (task-specific limits come from `Task.limits`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    backend: str = "docker"
    """Where sandboxes run: `docker` (this machine's engine), `ray` (placed across a Ray
    cluster's nodes by their `sandbox` resource, each on its node's engine), or another
    backend of `sandbox/registry.py`."""
    docker: DockerSettings = Field(default_factory=DockerSettings)
    """Settings of the `docker` backend."""
    ray: RaySettings = Field(default_factory=RaySettings)
    """Settings of the `ray` backend."""
    max_output_bytes: int = Field(default=64 * 1024, ge=256)
    """Output kept per command: first half and last half; the middle is dropped with a notice."""
    command_timeout_s: float = Field(default=180.0, gt=0)
    """Default per-command timeout when `run()` gets none."""
    wall_clock_s: float | None = Field(default=None, gt=0)
    """Hard limit for the whole rollout; None = task agent timeout + test timeout + 60 s."""
    allow_internet: bool | None = None
    """Override the task's network policy (None = follow `task.limits.allow_internet`)."""
    pool_size: int = Field(default=0, ge=0)
    """Warm containers kept ready per image by the docker backend's `open_sandbox` (0 = start on
    demand; the ray backend always starts on demand)."""
    default_storage_mb: int | None = Field(default=10240, gt=0)
    """Storage cap (MB) of a sandbox whose task states no `storage_mb` (Harbor and TB1 tasks
    often do not); None = no cap for those. Held like a task's own (`docs/sandbox.md`), and a
    sandbox does not start where the engine's disk has less free space than the caps of the
    sandboxes it would hold: lower it to run many at once on a small disk."""
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
    """How long a run waits for its backend to answer again (a restarted Docker engine; a Ray
    cluster with no sandbox node) before it stops, resumably (`SandboxBackend.wait`);
    training reruns the rollouts the outage failed once it is back."""
    run_id: str = "adhoc"
    """Label `tbrl.run` put on every container (group a run's containers; the ray backend
    adds `tbrl.node`)."""
    _registered: dict[str, BaseModel] = PrivateAttr(default_factory=dict)
    """Settings of a backend registered beyond docker and ray (by its name)."""

    @model_validator(mode="wrap")
    @classmethod
    def _registered_sections(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """A registered backend without a field here keeps its settings under its name too,
        validated by its own model (`registry.Registered.settings`)."""
        sections = {}
        if isinstance(data, dict):
            data = dict(data)
            for name in [k for k in data if k in BACKENDS and k not in cls.model_fields]:
                sections[name] = settings_model(name).model_validate(data.pop(name))
        config = handler(data)
        config._registered.update(sections)
        return config

    @field_validator("backend")
    @classmethod
    def _registered_backend(cls, value: str) -> str:
        registered(value)
        return value

    def backend_settings(self, name: str | None = None) -> BaseModel:
        """The settings of backend `name` (default: the run's) as its model validates them."""
        name = name or self.backend
        if name in type(self).model_fields:
            return getattr(self, name)
        return self._registered.get(name) or settings_model(name)()

    @field_validator("workdir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError(f"workdir {value!r} must be an absolute path such as /app")
        return value
