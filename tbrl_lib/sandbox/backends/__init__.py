"""The process's sandbox backends: `SandboxConfig.backend` names one of `registry.BACKENDS`,
built here once per settings, on first use (a backend's SDK loads only when it is used).

Adding a backend: its package and one line in `sandbox/registry.py`.
"""

from __future__ import annotations

from tbrl_lib.sandbox.backend import SandboxBackend
from tbrl_lib.sandbox.config import SandboxConfig
from tbrl_lib.sandbox.registry import backend_class

_MADE: dict[tuple[str, str], SandboxBackend] = {}


def backend_for(config: SandboxConfig | None = None) -> SandboxBackend:
    """The process's backend for `config.backend` with `config`'s settings for it (one
    object per name and settings: the Ray connection, its actors, are made once)."""
    config = config or SandboxConfig()
    settings = config.backend_settings()
    key = (config.backend, settings.model_dump_json())
    if key not in _MADE:
        _MADE[key] = backend_class(config.backend)(settings)
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
