"""Where a model name resolves: the tiny model tbrl builds, a model a package ships (fetched
and converted once), a local folder, or a hub id. `resolve_model(spec)` is the one entry;
`tbrl models fetch|list` (`cli.py`) manage the cache. Sits beside `policies` (it imports
only `policies.tiny_model`, and nothing above)."""

from tbrl_lib.models.packaged import PACKAGED, PackagedModel, fetch
from tbrl_lib.models.resolve import (
    ENV_VAR,
    ModelNotFound,
    is_local,
    model_config,
    model_kind,
    models_dir,
    resolve_model,
    tiny_size,
)

__all__ = [
    "ENV_VAR",
    "PACKAGED",
    "ModelNotFound",
    "PackagedModel",
    "fetch",
    "is_local",
    "model_config",
    "model_kind",
    "models_dir",
    "resolve_model",
    "tiny_size",
]
