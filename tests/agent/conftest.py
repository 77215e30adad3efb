"""Agent test helpers: a toy task on the offline base image, and a way to run async code
against a real sandbox (each test opens its own container; the sandbox removes it)."""

from __future__ import annotations

import asyncio

import pytest

from tbrl_lib.docker.base_images import BASE_IMAGE
from tbrl_lib.tasks.model import Environment, Task, Tests


def toy_task(
    solution: str | None = None, task_id: str = "agent-toy", timeout: float = 120.0
) -> Task:
    """A task on the base image whose test checks /app/answer.txt says 42."""
    tests = Tests(
        pytest="from pathlib import Path\n\n\ndef test_answer():\n"
        "    assert Path('/app/answer.txt').read_text().strip() == '42'\n"
    )
    return Task(
        id=task_id,
        instruction="Write the number 42 to /app/answer.txt.",
        environment=Environment(image=BASE_IMAGE),
        tests=tests,
        solution=solution,
        limits={"agent_timeout_sec": timeout},
    )


def in_sandbox(coro_fn, task: Task | None = None):
    """Run `await coro_fn(sandbox)` inside a fresh sandbox and return its result."""
    from tbrl_lib.sandbox import SandboxConfig, open_sandbox

    async def main():  # a generous start timeout: the shared test machine is often busy
        async with open_sandbox(task or toy_task(), SandboxConfig(start_timeout_s=300)) as sandbox:
            return await coro_fn(sandbox)

    return asyncio.run(main())


@pytest.fixture
def sandbox_run(base_image):
    return in_sandbox
