"""tbrl_lib.sandbox: Docker rollouts with a persistent shell, warm pool and leak-proof cleanup.

Public API (everything above the sandbox uses only these and `base.Sandbox`):
`open_sandbox(task, config)`, `ensure_image(task)`, `SandboxConfig`, `DockerHost`,
`SandboxPool`, `prewarm`, `close_pools`, and the errors in `base`.
"""

from tbrl_lib.sandbox.base import (
    CommandResult,
    Sandbox,
    SandboxError,
    SandboxLimitExceeded,
    SandboxStats,
)
from tbrl_lib.sandbox.config import DockerHost, SandboxConfig
from tbrl_lib.sandbox.container import DockerSandbox
from tbrl_lib.sandbox.files import FileTooLarge
from tbrl_lib.sandbox.images import ImageBuildError, ensure_image, image_tag
from tbrl_lib.sandbox.pool import SandboxPool, close_pools, open_sandbox, prewarm

__all__ = [
    "CommandResult",
    "DockerHost",
    "DockerSandbox",
    "FileTooLarge",
    "ImageBuildError",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxLimitExceeded",
    "SandboxPool",
    "SandboxStats",
    "close_pools",
    "ensure_image",
    "image_tag",
    "open_sandbox",
    "prewarm",
]
