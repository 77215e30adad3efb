"""The sandbox backends by name, as strings: nothing here imports a backend, so the settings
(`SandboxConfig.backend` and its section) are checked against it without loading Docker's or
Ray's SDK, and a backend whose extra is missing is named with the command that installs it.

Adding a backend: its package (a class meeting `sandbox.backend.SandboxBackend`, a pydantic
model of its settings) and one line in `BACKENDS` (docs/architecture.md, "How to add").
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Registered:
    """One backend: where its class and its settings model are, and what it needs installed."""

    backend: str
    """`module:Class` of the backend, built with its settings (`backend_for`)."""
    settings: str
    """`module:Model` of its settings: `SandboxConfig.<name>` (`rollout.sandbox.<name>.*`)."""
    sdk: str | None = None
    """The import its SDK provides: absent means its extra is not installed."""
    extra: str | None = None
    """The extra of `pyproject.toml` that installs the SDK (None: the base install has it)."""

    def missing(self) -> str | None:
        """What to install before this backend can load, or None when it can."""
        if self.sdk is None or importlib.util.find_spec(self.sdk) is not None:
            return None
        where = f"pip install -e '.[{self.extra}]'" if self.extra else f"pip install {self.sdk}"
        return f"its SDK ({self.sdk}) is not installed: {where}"


BACKENDS: dict[str, Registered] = {
    "docker": Registered(
        "tbrl_lib.sandbox.backends.docker.backend:DockerBackend",
        "tbrl_lib.sandbox.config:DockerSettings",
        sdk="docker",
    ),
    "ray": Registered(
        "tbrl_lib.sandbox.backends.ray.backend:RayBackend",
        "tbrl_lib.sandbox.config:RaySettings",
        sdk="ray",
        extra="ray",
    ),
}
"""name -> where the backend is; `SandboxConfig.backend` takes these names."""


class BackendNotInstalled(RuntimeError):
    """The backend's SDK is missing; the message names the extra that installs it."""


def load(target: str) -> Any:
    """The object `module:attribute` names, imported now."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def registered(name: str) -> Registered:
    """The backend `name`, or `ValueError` listing the names there are."""
    if name not in BACKENDS:
        raise ValueError(f"unknown sandbox backend {name!r}; registered: {', '.join(BACKENDS)}")
    return BACKENDS[name]


def backend_class(name: str) -> type:
    """The backend's class, imported on first use; `BackendNotInstalled` saying what to install."""
    entry = registered(name)
    why = entry.missing()
    if why:
        raise BackendNotInstalled(f"sandbox backend {name}: {why}")
    return load(entry.backend)


def settings_model(name: str) -> type:
    return load(registered(name).settings)
