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
    rows = doctor.check_docker()
    assert rows[0].component == "docker engine" and not rows[0].ok and rows[0].required
    assert "DOCKER_HOST" in rows[0].fix
