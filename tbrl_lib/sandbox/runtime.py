"""Where tbrl's own runtime sits inside every sandbox, whatever the backend.

A backend mounts tbrl's runtime (a loader, Python 3.13, bash, pytest) read-only at
`RUNTIME_MOUNT` in each sandbox; the verifier runs its programs through `interpreter_argv`,
so it never trusts the task image's interpreter. How the runtime gets there is the
backend's business (the Docker backend: a volume, `backends/docker/runtime_volume.py`).
"""

from __future__ import annotations

RUNTIME_MOUNT = "/.tbrl-rt"
"""Where the runtime volume is mounted (read-only) in every sandbox container."""


def loader_argv(runtime_dir: str = RUNTIME_MOUNT) -> list[str]:
    """Argv prefix that runs a runtime binary through the runtime's own loader and libraries."""
    rt = runtime_dir + "/rt"
    return [rt + "/lib/ld.so", "--inhibit-cache", "--library-path", rt + "/lib"]


def interpreter_argv(runtime_dir: str = RUNTIME_MOUNT) -> list[str]:
    """The runtime's Python 3.13 (add `-I -S` to keep the container's paths out)."""
    return [*loader_argv(runtime_dir), runtime_dir + "/rt/usr/bin/interp"]
