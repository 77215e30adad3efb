"""The backend registry: a name in the settings picks the backend, each with its own settings
(no Docker or Ray needed; the backends against real engines and a real cluster are tested in
tests/sandbox and tests/cluster)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tbrl_lib.evaluate.results import RunConfig
from tbrl_lib.overrides import parse_overrides
from tbrl_lib.sandbox import BACKENDS, SandboxConfig, backend_for
from tbrl_lib.sandbox.backends.docker.backend import DockerBackend
from tbrl_lib.sandbox.backends.ray.backend import RayBackend
from tbrl_lib.train.config.presets import load_preset


def test_the_name_picks_the_backend_and_its_settings_come_from_its_section():
    assert set(BACKENDS) == {"docker", "ray"}
    assert isinstance(backend_for(SandboxConfig()), DockerBackend)
    ray = backend_for(SandboxConfig(backend="ray", ray={"address": "10.0.0.1:6379"}))
    assert isinstance(ray, RayBackend) and ray.settings.address == "10.0.0.1:6379"
    # one object per name and settings: a rollout's per-task config copy reuses it
    per_task = SandboxConfig(wall_clock_s=30, run_id="x")
    assert backend_for(per_task) is backend_for(SandboxConfig())
    other_cap = SandboxConfig(docker={"max_concurrency": 3})
    assert backend_for(other_cap) is not backend_for(SandboxConfig())


def test_an_unknown_backend_is_refused_naming_the_known_ones():
    with pytest.raises(ValidationError) as err:
        SandboxConfig(backend="k8s")
    assert "unknown sandbox backend 'k8s'; registered: docker, ray" in str(err.value)
    with pytest.raises(ValidationError, match="hosts"):
        SandboxConfig(hosts=["tcp://a:2375"])  # moved under docker:


def test_eval_and_training_settings_reach_the_backend():
    run = RunConfig.model_validate({"policy": "noop", **_nested("sandbox.backend=ray")})
    rollout = run.rollout_config(run_id="eval-x")
    assert rollout.sandbox.backend == "ray" and rollout.sandbox.run_id == "eval-x"
    config = load_preset("cpu-smoke", parse_overrides(["rollout.sandbox.backend=ray"]))
    assert config.rollout.sandbox.backend == "ray"


def test_docker_capacity_is_this_machines_engine_and_its_cap():
    backend = DockerBackend(SandboxConfig(docker={"max_concurrency": 3}).docker)
    capacity = backend.capacity()
    assert capacity.total == 3 and not capacity.shared
    assert [p.capacity for p in capacity.places] == [3]


def _nested(item: str) -> dict:
    return parse_overrides([item])
