"""Offline base images: Debian packages -> debootstrap -> `docker import` -> a small layer.

No container registry is reachable from this workspace's machines, yet upstream task
Dockerfiles start `FROM ghcr.io/laude-institute/t-bench/...`. We build one base image from
Debian trixie (Python 3.13, like the image it stands for), then tag each public name onto
a one-line layer whose labels say what it substitutes, so those Dockerfiles build
unchanged and `tbrl doctor` can tell a substitute from the real thing. With a reachable
registry, `bootstrap(pull=True)` pulls the real images instead.

Rebuilds happen only when the recipe (suite, packages, layer) changes: the recipe hash
is stored as a label and compared on every call, so a second call is a no-op.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import docker
from docker.errors import DockerException, ImageNotFound

SUITE = "trixie"
MIRROR = os.environ.get("TBRL_DEBIAN_MIRROR", "http://deb.debian.org/debian")
ROOTFS_IMAGE = f"tbrl/rootfs:{SUITE}"
BASE_IMAGE = f"tbrl/base:{SUITE}"
PACKAGES = [
    "bash", "coreutils", "procps", "psmisc", "findutils", "grep", "sed", "gawk", "less",
    "ca-certificates", "curl", "wget", "git", "tmux", "xz-utils", "gzip", "tar", "unzip",
    "python3", "python3-pip", "python3-venv", "python3-pytest", "file", "jq", "sqlite3",
]
"""What tasks and tests expect to find (bash, coreutils, python3, pip, pytest, git, curl, tmux)."""

BASE_LAYER = """\
FROM {rootfs}
# Behave like the python/ubuntu images upstream Dockerfiles expect:
# `python` and `pip` on PATH, and `pip install` allowed system-wide (PEP 668 guard lifted).
RUN rm -f /usr/lib/python3*/EXTERNALLY-MANAGED \\
 && ln -sf /usr/bin/python3 /usr/local/bin/python \\
 && ln -sf /usr/bin/pip3 /usr/local/bin/pip \\
 && mkdir -p /app /logs
ENV LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
CMD ["bash"]
"""

SUBSTITUTES = {
    "ghcr.io/laude-institute/t-bench/python-3-13:20250620": "Python 3.13, pip, pytest",
    "ghcr.io/laude-institute/t-bench/python-3-13:latest": "Python 3.13, pip, pytest",
    "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest": "tmux, curl, git, python3",
}
"""Public base-image names used by upstream Dockerfiles -> what the substitute provides."""

LABEL_RECIPE = "tbrl.recipe"
LABEL_SUBSTITUTE = "tbrl.substitute-for"


@dataclass(frozen=True)
class ImageStatus:
    name: str
    present: bool
    substitute: bool
    detail: str


HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
"""Extra CAs the host trusts (e.g. a TLS-inspecting egress proxy). Copied into the base
image so `pip install` and `curl https://...` in task builds work where the host's do."""


def recipe_hash() -> str:
    cas = [p.read_bytes().decode(errors="replace") for p in _host_cas()]
    blob = "\n".join([SUITE, MIRROR, *PACKAGES, BASE_LAYER, *cas]).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _host_cas() -> list[Path]:
    return sorted(HOST_CA_DIR.glob("*.crt")) if HOST_CA_DIR.is_dir() else []


def status(client: docker.DockerClient) -> list[ImageStatus]:
    """One row per image tbrl needs: the base and each public name."""
    rows = []
    for name in [BASE_IMAGE, *SUBSTITUTES]:
        labels = _labels(client, name)
        if labels is None:
            rows.append(ImageStatus(name, False, False, "missing: run `tbrl images bootstrap`"))
            continue
        substitute = LABEL_SUBSTITUTE in labels
        detail = "local Debian substitute" if substitute else "present"
        if labels.get(LABEL_RECIPE) not in (None, recipe_hash()):
            detail += " (stale recipe: `tbrl images bootstrap` rebuilds)"
        rows.append(ImageStatus(name, True, substitute, detail))
    return rows


def bootstrap(client: docker.DockerClient, pull: bool = False, force: bool = False,
              log=print) -> list[str]:
    """Make every image in `status()` present. Returns the names it (re)built or pulled."""
    done: list[str] = []
    if pull:
        for name in SUBSTITUTES:
            log(f"pulling {name}")
            client.images.pull(name)
            done.append(name)
        return done
    recipe = recipe_hash()
    if force or _labels(client, BASE_IMAGE, {}).get(LABEL_RECIPE) != recipe:
        if force or _labels(client, ROOTFS_IMAGE, {}).get(LABEL_RECIPE) != recipe:
            _import_rootfs(client, recipe, log)
            done.append(ROOTFS_IMAGE)
        log(f"building {BASE_IMAGE}")
        _build(client, BASE_LAYER.format(rootfs=ROOTFS_IMAGE), BASE_IMAGE,
               {LABEL_RECIPE: recipe})
        done.append(BASE_IMAGE)
    for name, provides in SUBSTITUTES.items():
        labels = _labels(client, name)
        if labels is not None and not force and labels.get(LABEL_RECIPE) == recipe:
            continue
        if labels is not None and LABEL_SUBSTITUTE not in labels and not force:
            continue  # the real image was pulled; leave it alone
        _build(client, f"FROM {BASE_IMAGE}\n", name,
               {LABEL_RECIPE: recipe, LABEL_SUBSTITUTE: name, "tbrl.provides": provides})
        done.append(name)
    return done


def _import_rootfs(client: docker.DockerClient, recipe: str, log) -> None:
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
                [debootstrap, "--variant=minbase", f"--include={','.join(PACKAGES)}",
                 SUITE, str(rootfs), MIRROR],
                capture_output=True, text=True,
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
            subprocess.run(["chroot", str(rootfs), "update-ca-certificates"],
                           capture_output=True, check=True)
        tarball = Path(tmp) / "rootfs.tar"
        log(f"docker import -> {ROOTFS_IMAGE}")
        subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tarball), "."],
                       check=True)
        repo, tag = ROOTFS_IMAGE.split(":")
        client.api.import_image(
            src=str(tarball), repository=repo, tag=tag,
            changes=[f'LABEL {LABEL_RECIPE}="{recipe}"', 'CMD ["bash"]'],
        )


def _unmount_below(root: Path) -> None:
    """Unmount anything mounted under `root`, deepest first, before it is deleted."""
    prefix = str(root.resolve()) + "/"
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for point in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False)


def _build(client: docker.DockerClient, dockerfile: str, tag: str, labels: dict[str, str]) -> None:
    try:
        client.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, labels=labels,
                            rm=True, forcerm=True)
    except DockerException as err:
        raise RuntimeError(f"building {tag} failed: {err}") from err


def _labels(client: docker.DockerClient, name: str, default=None) -> dict[str, str] | None:
    try:
        return client.images.get(name).labels or {}
    except ImageNotFound:
        return default
