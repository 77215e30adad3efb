"""Running async code from sync callers: the CLI, scripts, and Jupyter kernels.

The library is async throughout (hundreds of rollouts on one event loop). Its synchronous
entry points call `run_sync`, which is `asyncio.run` where no loop is running and, inside
a running loop (a notebook kernel), runs the coroutine on a fresh loop in a worker thread
instead of failing with "asyncio.run() cannot be called from a running event loop".
`blocking(fn)` makes such an entry point: the synchronous twin of a coroutine function.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion and return its result, whether or not a loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def blocking(fn: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The synchronous twin of the coroutine function `fn`: the same parameters and
    docstring, run to completion through `run_sync`."""

    @functools.wraps(fn)
    def twin(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(fn(*args, **kwargs))

    twin.__name__ = twin.__qualname__ = fn.__name__.removesuffix("_async")
    return twin
