"""Offline base images: Debian packages -> debootstrap -> `docker import` -> small layers.

No container registry is reachable from this workspace's machines, yet task Dockerfiles
start `FROM ghcr.io/laude-institute/t-bench/...` with many tags (`:latest`, `:20250620`,
`:20250624`, ...). One Debian trixie root filesystem (Python 3.13) becomes two images, one
per family of public images, each shaped like what it stands for, judged by what Dockerfiles
written for the original do with it: what the distribution's package manager installed and
what pip installed must match closely enough that pinning, upgrading or uninstalling a
package with pip or apt works as it does there.

- `tbrl/base:trixie-r2` (`BASE_IMAGE`) for `t-bench/python-3-13:*`: `python`, `python3` and
  `pip` on PATH, `pip install` allowed system-wide, and pip itself installed *by pip*, with
  no Python package left to Debian's package manager, so a Dockerfile may pin, upgrade or
  uninstall any of them (as in the python images, whose packages are all pip's).
- `tbrl/ubuntu-like:trixie-r2` (`UBUNTU_IMAGE`) for `t-bench/ubuntu-24-04:*`: `python3` but no
  `python` alias (Dockerfiles add one with `ln -s /usr/bin/python3 /usr/bin/python`), the
  PEP 668 guard kept as Ubuntu keeps it (`pip install --break-system-packages`), no Python
  test runner (so `pip3 install --break-system-packages pytest==8.4.1` has nothing to
  replace), and `apt-get install python3-pip` a no-op that works offline (the package is
  installed and the package lists are present).

What tbrl itself needs beyond the originals lives where no task's install reaches it: the
verifier's pytest is copied from the root filesystem (`RUNTIME_SOURCE`, which keeps Debian's
python3-pytest) into its own read-only runtime (`runtime_volume.py`); the ubuntu family has
no jq or sqlite3 CLI, like the original. The python family keeps those two apt-installed
programs (the bundled tasks and the synthetic families build and solve with them; a task's
own `apt-get install jq` is a no-op and `apt-get remove` works; pip never touches them).

A task build never depends on which image a public name is tagged to: `resolve` maps every
FROM of a known family to its local image (unless the real image is on the engine), and the
sandbox builds the rewritten Dockerfile. `bootstrap` also tags the names the upstream data
use (`PRETAGGED`) as one-line layers labelled `tbrl.substitute-for`, so a plain `docker build`
of those works outside tbrl and `tbrl doctor` tells a substitute from the real thing. With a
reachable registry, `bootstrap(pull=True)` pulls the real images instead.

What remains different from the originals (measured, see docs/sandbox.md): Debian trixie, not
Ubuntu noble (`/etc/os-release`, package names and versions; Python 3.13 where Ubuntu has
3.12, since no offline Python 3.12 exists here); the ubuntu family's python3-pip is
preinstalled without its Recommends, and with Debian's python3-wheel and python3-packaging;
the python family carries jq and sqlite3; no asciinema.

Rebuilds happen only when a recipe changes: the root filesystem's recipe (suite, mirror,
packages, CAs) and the full recipe (plus the layers) are stored as labels and compared on
every call, so a second call is a no-op. `REVISION` is in the family images' tags: a change
of what they hold gets new names, so another checkout on the same engine keeps its images
(and the volumes and task images made from them). A substitute also records the id of the
image it was made from (`tbrl.source-id`) and is made again when that image was rebuilt.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException, ImageNotFound

SUITE = "trixie"
MIRROR = os.environ.get("TBRL_DEBIAN_MIRROR", "http://deb.debian.org/debian")
REVISION = "r2"
"""Revision of the family layers, part of their tags: bump it with any change of what they hold."""
ROOTFS_IMAGE = f"tbrl/rootfs:{SUITE}"
BASE_IMAGE = f"tbrl/base:{SUITE}-{REVISION}"
UBUNTU_IMAGE = f"tbrl/ubuntu-like:{SUITE}-{REVISION}"
RUNTIME_SOURCE = ROOTFS_IMAGE
"""The image the verifier's runtime is copied from (it keeps Debian's pytest)."""
PACKAGES = [
    "bash",
    "coreutils",
    "procps",
    "psmisc",
    "findutils",
    "grep",
    "sed",
    "gawk",
    "less",
    "ca-certificates",
    "curl",
    "wget",
    "git",
    "tmux",
    "xz-utils",
    "gzip",
    "tar",
    "unzip",
    "python3",
    "python3-pip",
    "python3-venv",
    "python3-pytest",
    "file",
    "jq",
    "sqlite3",
]
"""The root filesystem: what tasks expect (bash, coreutils, python3, pip, git, curl, tmux, ...)
plus what the verifier's runtime copies (python3-pytest); each family layer removes what its
original lacks."""
TEST_RUNNER_PACKAGES = (
    "python3-pytest python3-pluggy python3-iniconfig python3-exceptiongroup python3-tomli"
)
"""Debian's pytest and what only it needs: in no original image, and in the way of pip."""

BASE_LAYER = f"""\
FROM {{rootfs}}
# Shaped like the python images: `python`, `python3`, `pip` on PATH, `pip install` allowed
# system-wide (PEP 668 guard lifted), pip itself installed by pip (from Debian's pip wheel,
# offline) and no Python package left to Debian's package manager, so pip can pin,
# upgrade and uninstall anything a Dockerfile asks for.
RUN python3 -m pip install --no-index --no-cache-dir --break-system-packages --ignore-installed \\
      --root-user-action=ignore /usr/share/python-wheels/pip-*.whl \\
 && dpkg --purge python3-pip python3-wheel python3-packaging {TEST_RUNNER_PACKAGES} \\
 && rm -f /usr/lib/python3*/EXTERNALLY-MANAGED \\
 && ln -sf /usr/bin/python3 /usr/local/bin/python \\
 && mkdir -p /app /logs
ENV LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
CMD ["bash"]
"""

UBUNTU_LAYER = f"""\
FROM {{rootfs}}
# Shaped like the Terminal-Bench Ubuntu 24.04 image as published: python3 without a
# `python` alias, the PEP 668 guard in place (pip needs --break-system-packages),
# python3-pip installed (so `apt-get install python3-pip` works offline), and nothing the
# original lacks that a Dockerfile would install itself: no pytest, jq or sqlite3 CLI.
RUN dpkg --purge {TEST_RUNNER_PACKAGES} jq libjq1 libonig5 sqlite3 \\
 && mkdir -p /app /logs
ENV LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
CMD ["bash"]
"""


@dataclass(frozen=True)
class Family:
    """Every tag of one public repository, and the local image its substitutes are built from."""

    repository: str
    source: str
    provides: str


FAMILIES = (
    Family(
        "ghcr.io/laude-institute/t-bench/python-3-13",
        BASE_IMAGE,
        "Python 3.13: python, python3, pip (pip-managed) on PATH, pip installs system-wide; "
        "git, curl, tmux, jq, sqlite3",
    ),
    Family(
        "ghcr.io/laude-institute/t-bench/ubuntu-24-04",
        UBUNTU_IMAGE,
        "python3 without a python alias, python3-pip (apt), PEP 668 guard, no pytest; "
        "curl, git, tmux",
    ),
)
PRETAGGED = (
    "ghcr.io/laude-institute/t-bench/python-3-13:20250620",
    "ghcr.io/laude-institute/t-bench/python-3-13:latest",
    "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest",
)
"""Names the upstream data use, tagged at bootstrap for `docker build` outside tbrl."""

LABEL_RECIPE = "tbrl.recipe"
LABEL_ROOTFS_RECIPE = "tbrl.rootfs-recipe"
LABEL_SUBSTITUTE = "tbrl.substitute-for"
LABEL_SOURCE_ID = "tbrl.source-id"
LAYERS = {BASE_IMAGE: BASE_LAYER, UBUNTU_IMAGE: UBUNTU_LAYER}


class SubstituteError(RuntimeError):
    """A base image a build needs cannot be substituted; the message says what to do.
    `task_fault`: the task must change (a digest pin), not the machine (a missing image)."""

    def __init__(self, message: str, task_fault: bool = False) -> None:
        super().__init__(message)
        self.task_fault = task_fault


@dataclass(frozen=True)
class ImageStatus:
    name: str
    present: bool
    substitute: bool
    detail: str


HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
"""Extra CAs the host trusts (e.g. a TLS-inspecting egress proxy). Copied into the base
image so `pip install` and `curl https://...` in task builds work where the host's do."""


def rootfs_recipe() -> str:
    """Hash of what goes into the root filesystem (a change means a new debootstrap)."""
    cas = [p.read_bytes().decode(errors="replace") for p in _host_cas()]
    blob = "\n".join([SUITE, MIRROR, *PACKAGES, *cas]).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def recipe_hash() -> str:
    """Hash of the whole recipe: the root filesystem and the layers on it."""
    blob = f"{rootfs_recipe()}\n{BASE_LAYER}\n{UBUNTU_LAYER}".encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _host_cas() -> list[Path]:
    return sorted(HOST_CA_DIR.glob("*.crt")) if HOST_CA_DIR.is_dir() else []


def family_of(name: str) -> Family | None:
    """The family a public image name (`repo[:tag][@digest]`) belongs to, if any."""
    repository = name.split("@")[0]
    if ":" in repository.rsplit("/", 1)[-1]:
        repository = repository.rsplit(":", 1)[0]
    return next((f for f in FAMILIES if f.repository == repository), None)


def substitutes(client: docker.DockerClient) -> list[str]:
    """Every local image name tagged as a substitute: its label names that very tag (images
    built on a substitute inherit the label, naming their base, not themselves)."""
    names = {
        tag
        for image in client.images.list(filters={"label": LABEL_SUBSTITUTE})
        for tag in image.tags
        if (image.labels or {}).get(LABEL_SUBSTITUTE) == tag
    }
    return sorted(names)


def status(client: docker.DockerClient) -> list[ImageStatus]:
    """One row per image tbrl needs or made: the family images and each public name."""
    rows = []
    for name in [BASE_IMAGE, UBUNTU_IMAGE, *sorted({*PRETAGGED, *substitutes(client)})]:
        labels = _labels(client, name)
        if labels is None:
            rows.append(ImageStatus(name, False, False, "missing: run `tbrl images bootstrap`"))
            continue
        substitute = LABEL_SUBSTITUTE in labels
        source = labels.get("tbrl.source", "local Debian")
        detail = f"substitute ({source})" if substitute else "present"
        recipe = recipe_hash()
        stale = (
            _stale(client, name, labels, recipe)
            if substitute
            else labels.get(LABEL_RECIPE) not in (None, recipe)
        )
        if stale:
            detail += " (stale: `tbrl images bootstrap` rebuilds it)"
        rows.append(ImageStatus(name, True, substitute, detail))
    return rows


def bootstrap(
    client: docker.DockerClient,
    pull: bool = False,
    force: bool = False,
    log: Callable[[str], object] = print,
) -> list[str]:
    """Make every image in `status()` present and current. Returns the names it (re)built."""
    done: list[str] = []
    if pull:
        for name in PRETAGGED:
            log(f"pulling {name}")
            client.images.pull(name)
            done.append(name)
        return done
    recipe, rootfs = recipe_hash(), rootfs_recipe()
    if force or _labels(client, ROOTFS_IMAGE, {}).get(LABEL_ROOTFS_RECIPE) != rootfs:
        _import_rootfs(client, rootfs, log)
        done.append(ROOTFS_IMAGE)
    for image, layer in LAYERS.items():
        if force or ROOTFS_IMAGE in done or _labels(client, image, {}).get(LABEL_RECIPE) != recipe:
            log(f"building {image}")
            _build(client, layer.format(rootfs=ROOTFS_IMAGE), image, {LABEL_RECIPE: recipe})
            done.append(image)
    for name in sorted({*PRETAGGED, *substitutes(client)}):
        labels = _labels(client, name)
        if labels is not None and LABEL_SUBSTITUTE not in labels:
            continue  # the real image was pulled; leave it alone
        if labels is None or force or _stale(client, name, labels, recipe):
            tag_substitute(client, name, recipe)
            done.append(name)
    return done


def resolve(client: docker.DockerClient, name: str) -> str:
    """The image a `FROM name` builds on here: `name` itself when it belongs to no known
    family or is the real image (pulled or loaded onto this engine); else its family's local
    image, whatever the tag. A digest of a family is refused (the task's to fix); a family
    image that is missing is refused with the command that makes it."""
    family = family_of(name)
    if family is None:
        return name
    labels = _labels(client, name)
    if labels is not None and LABEL_SUBSTITUTE not in labels:
        return name
    if "@" in name:
        raise SubstituteError(
            f"FROM {name} pins a digest of {family.repository}, which no local substitute "
            f"can carry: use a tag instead (e.g. {family.repository}:latest)",
            task_fault=True,
        )
    if _labels(client, family.source) is None:
        raise SubstituteError(
            f"FROM {name} needs the local image {family.source}, which is missing: "
            "run `tbrl images bootstrap` (or `tbrl setup`)"
        )
    return family.source


def tag_substitute(client: docker.DockerClient, name: str, recipe: str) -> None:
    """Tag `name` as a one-line layer on its family's image, labelled as a substitute."""
    family = family_of(name)
    if family is None:
        raise SubstituteError(
            f"{name} belongs to no known image family ({', '.join(f.repository for f in FAMILIES)})"
        )
    _build(
        client,
        f"FROM {family.source}\n",
        name,
        {
            LABEL_RECIPE: recipe,
            LABEL_SUBSTITUTE: name,
            "tbrl.source": family.source,
            LABEL_SOURCE_ID: client.images.get(family.source).id,
            "tbrl.provides": family.provides,
        },
    )


def _stale(client: docker.DockerClient, name: str, labels: dict[str, str], recipe: str) -> bool:
    """A substitute made by another recipe, or from an image that has been rebuilt since."""
    family = family_of(name)
    source = _image_id(client, family.source) if family else None
    return labels.get(LABEL_RECIPE) != recipe or labels.get(LABEL_SOURCE_ID) != source


def _image_id(client: docker.DockerClient, name: str) -> str | None:
    try:
        return client.images.get(name).id
    except ImageNotFound:
        return None


def _import_rootfs(client: docker.DockerClient, recipe: str, log: Callable[[str], object]) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise RuntimeError(
            "debootstrap is not installed; run: apt-get install -y debootstrap "
            "(or `tbrl images bootstrap --pull` where a registry is reachable)"
        )
    if os.geteuid() != 0:
        raise RuntimeError("debootstrap needs root: run `sudo tbrl images bootstrap`")
    with tempfile.TemporaryDirectory(prefix="tbrl-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        log(f"debootstrap {SUITE} from {MIRROR} (about a minute)")
        try:
            proc = subprocess.run(
                [
                    debootstrap,
                    "--variant=minbase",
                    f"--include={','.join(PACKAGES)}",
                    SUITE,
                    str(rootfs),
                    MIRROR,
                ],
                capture_output=True,
                text=True,
            )
        finally:
            _unmount_below(rootfs)  # a failed debootstrap can leave /proc mounted inside
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
            raise RuntimeError(f"debootstrap failed (exit {proc.returncode}):\n{tail}")
        for item in (rootfs / "var/cache/apt/archives").glob("*.deb"):
            item.unlink()
        if _host_cas():
            for ca in _host_cas():
                shutil.copy(ca, rootfs / "usr/local/share/ca-certificates" / ca.name)
            subprocess.run(
                ["chroot", str(rootfs), "update-ca-certificates"], capture_output=True, check=True
            )
        tarball = Path(tmp) / "rootfs.tar"
        log(f"docker import -> {ROOTFS_IMAGE}")
        subprocess.run(
            ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tarball), "."], check=True
        )
        repo, tag = ROOTFS_IMAGE.split(":")
        client.api.import_image(
            src=str(tarball),
            repository=repo,
            tag=tag,
            changes=[f'LABEL {LABEL_ROOTFS_RECIPE}="{recipe}"', 'CMD ["bash"]'],
        )


def _unmount_below(root: Path) -> None:
    """Unmount anything mounted under `root`, deepest first, before it is deleted."""
    prefix = str(root.resolve()) + "/"
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for point in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False)


def _build(client: docker.DockerClient, dockerfile: str, tag: str, labels: dict[str, str]) -> None:
    try:
        client.images.build(
            fileobj=io.BytesIO(dockerfile.encode()), tag=tag, labels=labels, rm=True, forcerm=True
        )
    except DockerException as err:
        raise RuntimeError(f"building {tag} failed: {err}") from err


def _labels(client: docker.DockerClient, name: str, default=None) -> dict[str, str] | None:
    try:
        return client.images.get(name).labels or {}
    except ImageNotFound:
        return default
