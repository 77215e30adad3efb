"""The Harbor image: Python 3.13 with Harbor, the Docker CLI and what tbrl's agent imports.

Harbor needs Python >= 3.12 and the project runs on 3.11, so Harbor runs in a container
built once from the offline Debian 13 base image (`base_images.BASE_IMAGE`, Python
3.13): Debian's `docker-cli` and `docker-compose` (Harbor drives the host's engine through
the mounted socket), `harbor==HARBOR_VERSION` and the few packages tbrl's agent imports
(not torch: the agent runs API and scripted policies; `hf:` models stay on the host).
tbrl itself is not copied in: the checkout is mounted read-only at its own path and put on
PYTHONPATH (`run.py`), so the image does not change when tbrl's code does.

The tag carries the hash of the recipe (`tbrl/harbor:<hash>`, label `tbrl.recipe`): a
second call finds it and returns at once; a changed recipe gets a new tag. Building needs
PyPI (reachable here through the host's CA bundle, given to pip as `PIP_CERT`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.docker.tool_containers import ensure_recipe_image

HARBOR_VERSION = "0.25.0"
AGENT_PACKAGES = (
    "pydantic>=2.7",
    "pyyaml>=6.0",
    "tomli-w>=1.0",
    "typer>=0.12",
    "rich>=13.7",
    "docker>=7.1",
    "requests>=2.31",
    "tenacity>=8.3",
    "tqdm>=4.66",
    "numpy>=1.26",
    "pyarrow>=16",
    "anthropic>=0.40",
    "openai>=1.50",
)
"""What `tbrl_lib.harbor.agent` pulls in (tasks, sandbox.base, agent, models.policy_spec and
the API policies), measured with `sys.modules` after importing it; pinned as pyproject pins."""
RECIPE = f"""\
FROM {BASE_IMAGE}
RUN apt-get update \\
 && apt-get install -y --no-install-recommends docker-cli docker-compose \\
 && rm -rf /var/lib/apt/lists/*
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_ROOT_USER_ACTION=ignore
RUN pip install --no-cache-dir harbor=={HARBOR_VERSION} {" ".join(repr(p) for p in AGENT_PACKAGES)}
ENV LITELLM_LOCAL_MODEL_COST_MAP=True PYTHONDONTWRITEBYTECODE=1
"""


def recipe_hash() -> str:
    return hashlib.sha256(RECIPE.encode()).hexdigest()[:12]


def image_name() -> str:
    return f"tbrl/harbor:{recipe_hash()}"


def ensure_harbor_image(log: Callable[[str], object] = print) -> tuple[str, float]:
    """The Harbor image's name, built when missing; and the seconds spent building (0 when
    it was cached). A failed build raises `RuntimeError` with the engine's message."""
    name = image_name()
    try:
        seconds = ensure_recipe_image(name, RECIPE, recipe_hash(), log=log)
    except RuntimeError as err:
        raise RuntimeError(
            f"{err}; the Harbor image needs PyPI and Debian's mirror (check `pip download "
            "harbor` on this machine)"
        ) from err
    return name, seconds
