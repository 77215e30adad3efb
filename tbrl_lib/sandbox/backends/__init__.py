"""The sandbox backends by name: `SandboxConfig.backend` picks one from `BACKENDS`.

Adding a backend: one module (or sub-package) whose class meets `sandbox.backend.SandboxBackend`
and takes its settings (a model under its name in `SandboxConfig`), then one line here and its
name in `SandboxConfig.backend`'s `Literal`.
"""

from __future__ import annotations

from tbrl_lib.sandbox.backend import SandboxBackend
from tbrl_lib.sandbox.backends.docker.backend import DockerBackend
from tbrl_lib.sandbox.backends.ray.backend import RayBackend
from tbrl_lib.sandbox.config import SandboxConfig

BACKENDS = {"docker": DockerBackend, "ray": RayBackend}
"""name -> backend class, built with its settings (`config.<name>`)."""
_MADE: dict[tuple[str, str], SandboxBackend] = {}


def backend_for(config: SandboxConfig | None = None) -> SandboxBackend:
    """The process's backend for `config.backend` with `config`'s settings for it (one
    object per name and settings: the Ray connection, its actors, are made once)."""
    config = config or SandboxConfig()
    settings = getattr(config, config.backend)
    key = (config.backend, settings.model_dump_json())
    if key not in _MADE:
        _MADE[key] = BACKENDS[config.backend](settings)
    return _MADE[key]


def reap_run(config: SandboxConfig) -> list[str]:
    """Remove what the run `config.run_id` left behind (containers of dead owners carrying its
    label) on its backend, for a run that ended; one line per place where some were (a lost
    node's, say). A backend that does not answer is a line too, not an error: the run's
    results stand, and `tbrl docker reap` finishes the job."""
    try:
        lines = backend_for(config).reap(config.run_id)
        return [line for line in lines if not line.endswith(": removed 0")]
    except Exception as err:  # noqa: BLE001 - a backstop after the run; never fails it
        return [f"run {config.run_id}: leftovers not reaped ({type(err).__name__}: {err})"]


async def close_backends() -> None:
    """`close()` every backend this process made (warm pools drained, placements freed)."""
    for backend in list(_MADE.values()):
        await backend.close()
