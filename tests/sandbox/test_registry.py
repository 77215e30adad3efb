"""A third backend is its package plus one registry line: a throw-away one, registered here,
is chosen by name with its own settings, answers `tbrl doctor` and training's preflight, and a
backend whose SDK is missing is named with the extra that installs it."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
from pydantic import BaseModel, ConfigDict

from tbrl_lib import doctor
from tbrl_lib.sandbox import (
    BACKENDS,
    BackendNotInstalled,
    Capacity,
    Demand,
    Finding,
    SandboxConfig,
    backend_for,
)
from tbrl_lib.sandbox.backend import Place, shared_capacity_problems
from tbrl_lib.sandbox.registry import Registered
from tbrl_lib.train.config.presets import load_preset
from tbrl_lib.train.grpo.preflight import preflight


class ThrowawaySettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    places: int = 4


class ThrowawayBackend:
    """Holds `places` sandboxes in one pool for the job; opens none (not needed here)."""

    name = "throwaway"

    def __init__(self, settings: ThrowawaySettings) -> None:
        self.settings = settings

    @asynccontextmanager
    async def open(self, task, config):
        raise NotImplementedError
        yield

    async def prepare(self, task) -> None: ...

    async def wait(self, why, wait_s, who, resume, idle=False) -> bool:
        return False

    def reap(self, run_id=None) -> list[str]:
        return []

    def prune_caches(self) -> list[str]:
        return []

    def check(self, purpose: str) -> str:
        return "throwaway: always"

    def capacity(self) -> Capacity:
        return Capacity(self.name, (Place("pool", self.settings.places),), shared=True)

    def preflight(self, demand: Demand) -> list[str]:
        return shared_capacity_problems(self.capacity(), demand)

    def doctor(self) -> list[Finding]:
        return [Finding("throwaway pool", True, f"{self.settings.places} places")]

    async def close(self) -> None: ...


HERE = "tests.sandbox.test_registry"


@pytest.fixture
def throwaway(monkeypatch):
    """The one registry line a new backend adds."""
    line = Registered(f"{HERE}:ThrowawayBackend", f"{HERE}:ThrowawaySettings")
    monkeypatch.setitem(BACKENDS, "throwaway", line)
    return line


def test_a_registered_backend_is_chosen_by_name_with_its_own_settings(throwaway):
    config = SandboxConfig(backend="throwaway", throwaway={"places": 2})
    assert config.backend_settings() == ThrowawaySettings(places=2)
    backend = backend_for(config)
    assert isinstance(backend, ThrowawayBackend) and backend.capacity().total == 2
    assert SandboxConfig(backend="throwaway").backend_settings() == ThrowawaySettings()
    with pytest.raises(ValueError, match="places"):
        SandboxConfig(backend="throwaway", throwaway={"places": "many"})


def test_an_unknown_backend_or_section_is_refused_naming_the_registered_ones():
    with pytest.raises(ValueError, match="unknown sandbox backend 'nope'; registered: docker, ray"):
        SandboxConfig(backend="nope")
    with pytest.raises(ValueError, match="throwaway"):  # not registered here: a typo's error
        SandboxConfig(throwaway={"places": 2})


def test_tbrl_doctor_shows_every_registered_backends_rows(throwaway):
    rows = {row.component: row for row in doctor.check_backends()}
    assert rows["throwaway pool"].ok and rows["throwaway pool"].found == "4 places"
    assert "docker engine" in rows  # the shipped ones still answer for themselves


def test_trainings_preflight_asks_the_runs_backend(throwaway):
    on_it = {"rollout.sandbox.backend": "throwaway", "rollout.sandbox.throwaway.places": 2}
    fits = load_preset("cpu-smoke", {**on_it, "launch.sandbox_concurrency": 2})
    assert not [p for p in preflight(fits) if "sandboxes in flight" in p]
    over = load_preset("cpu-smoke", {**on_it, "launch.sandbox_concurrency": 3})
    (line,) = [p for p in preflight(over) if "sandboxes in flight" in p]
    assert "3 sandboxes in flight (3 x 1 process(es)) but the throwaway backend offers 2" in line


def test_a_backend_without_its_sdk_says_which_extra_installs_it(monkeypatch):
    line = Registered(
        f"{HERE}:ThrowawayBackend", f"{HERE}:ThrowawaySettings", sdk="no_such_sdk", extra="far"
    )
    monkeypatch.setitem(BACKENDS, "far", line)
    with pytest.raises(BackendNotInstalled, match=r"no_such_sdk.*pip install -e '\.\[far\]'"):
        backend_for(SandboxConfig(backend="far"))
    (row,) = [row for row in doctor.check_backends() if row.component == "far backend"]
    assert not row.ok and "pip install -e '.[far]'" in row.found and row.fix
    problems = preflight(load_preset("cpu-smoke", {"rollout.sandbox.backend": "far"}))
    assert any("pip install -e '.[far]'" in p for p in problems)
