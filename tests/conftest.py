"""Shared fixtures. Docker tests carry the `docker` marker and are skipped, with the
reason, when no engine answers; everything else runs anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
UPSTREAM = SHARED / "upstream"


def _engine_reason() -> str | None:
    from tbrl_lib.sandbox import engine

    return None if engine.ping() else "no Docker engine answers (run `make setup` or `tbrl docker ensure`)"


_ENGINE_REASON: list[str | None] = []


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


@pytest.fixture(scope="session")
def docker_client():
    from tbrl_lib.sandbox import engine

    client = engine.client()
    yield client
    client.close()


@pytest.fixture(scope="session")
def base_image(docker_client) -> str:
    """The offline base image; built by `make setup` (`tbrl setup`) before the suite."""
    from tbrl_lib.sandbox import base_images

    try:
        docker_client.images.get(base_images.BASE_IMAGE)
    except Exception:
        pytest.fail(f"{base_images.BASE_IMAGE} is missing: run `tbrl images bootstrap`")
    return base_images.BASE_IMAGE


@pytest.fixture(scope="session")
def upstream_csv() -> Path:
    path = UPSTREAM / "latest_verified.csv"
    if not path.exists():
        pytest.skip(f"upstream reference data not found at {path}")
    return path
