"""A real JupyterLab and a real browser: the server on a free loopback port with a token, its
root the workspace, driven by Playwright for Python with Debian's Chromium
(`executable_path`: Playwright's own browser downloads cannot be fetched here). Skipped, with
the reason, when Chromium or Playwright is absent (`.ci/run` installs the `chromium` package;
Playwright comes with the `dev` extra).

The server keeps its settings, workspaces and checkpoints in a temporary folder: notebooks
render whole (windowing mode `none`: JupyterLab otherwise leaves off-screen cells out of the
page), nothing autosaves (the workspace's notebooks are never written: checked at the end),
and no news prompt covers the page."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tbrl_lib import upstream, workspace
from tests.conftest import REPO

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "outputs" / "browser-tests"
"""Screenshots and rendered reports of the suite (ignored by git, kept for a reader)."""

SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false"},
}


@dataclass
class Lab:
    """A running JupyterLab: `url(path)` opens a file of the workspace."""

    base: str
    token: str
    root: Path

    def url(self, path: str) -> str:
        """`path` opened alone (`reset`: no tab of an earlier test restored)."""
        return f"{self.base}/lab/tree/{path}?reset&token={self.token}"

    def close_kernels(self) -> None:
        """Shut down every kernel session (an earlier notebook's kernel holds memory)."""
        for session in self._api("GET", "sessions"):
            self._api("DELETE", f"sessions/{session['id']}")

    def _api(self, method: str, path: str):
        request = urllib.request.Request(
            f"{self.base}/api/{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            body = answer.read()
        return json.loads(body) if body else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _notebooks_digest() -> str:
    return hashlib.sha256(
        b"".join(p.read_bytes() for p in sorted((REPO / "notebooks").glob("*.ipynb")))
    ).hexdigest()


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """Chromium through Playwright's sync API, for this module only: that API runs an event
    loop in the main thread until it stops, and every later test calling `asyncio.run` would
    find it running."""
    if not CHROMIUM.is_file():
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install chromium (.ci/run does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright for Python is not installed (the dev extra: make setup)")
    with sync_playwright() as playwright:
        root = os.geteuid() == 0  # Chromium's sandbox refuses root (CI runs as root)
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox"] if root else []
        )
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def lab(browser, tmp_path_factory) -> Iterator[Lab]:
    home = tmp_path_factory.mktemp("jupyterlab")
    for plugin, values in SETTINGS.items():
        path = home / "settings" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
    }
    for name in (upstream.ENV_VAR, workspace.ENV_VAR):  # a bare clone, found from notebooks/
        env.pop(name, None)
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={REPO}",
        f"--FileCheckpoints.checkpoint_dir={home / 'checkpoints'}",
        *(["--allow-root"] if os.geteuid() == 0 else []),
    ]
    before = _notebooks_digest()
    log = (home / "server.log").open("w")
    server = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab exited: {(home / 'server.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not answer within 90 s")
                time.sleep(0.5)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        yield Lab(base, token, REPO)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.copy(home / "server.log", ARTIFACTS / "jupyterlab.log")
    assert _notebooks_digest() == before, "the browser suite changed a notebook in notebooks/"


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    yield page
    context.close()
    lab.close_kernels()
