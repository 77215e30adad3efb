"""Progress lines for operations that can take minutes without printing anything (loading a
model, building an image): a line once one has run `after_s` seconds, one more every
`every_s`, and one when it ends; nothing at all when it ends before `after_s`.

    with slow_notice(f"loading model {path}"):
        model = AutoModelForCausalLM.from_pretrained(path)
    # after 20 s:  still loading model /m (20 s)...
    # at the end:  loading model /m: done after 31 s

A daemon timer thread does the waiting, so the operation itself is untouched (it may block
the event loop's thread or run on a worker). Lines go to stderr through `tqdm.write`, so
progress bars stay intact.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tqdm.auto import tqdm

SLOW_AFTER_S = 20.0
"""When an operation starts counting as slow (its first line)."""
EVERY_S = 60.0
"""How often a slow operation says it is still running after that."""


def _say(line: str) -> None:
    tqdm.write(line, file=sys.stderr)


@contextmanager
def slow_notice(
    what: str,
    after_s: float = SLOW_AFTER_S,
    every_s: float = EVERY_S,
    say: Callable[[str], None] = _say,
) -> Iterator[None]:
    """Say `still {what} (N s)...` once the block has run `after_s` seconds (then every
    `every_s`), and `{what}: done after N s` (or `failed`) when it ends, if it said anything."""
    started = time.monotonic()
    stop = threading.Event()
    said: list[bool] = []

    def watch() -> None:
        wait = after_s
        while not stop.wait(wait):
            said.append(True)
            say(f"still {what} ({time.monotonic() - started:.0f} s)...")
            wait = every_s

    watcher = threading.Thread(target=watch, name="tbrl-slow-notice", daemon=True)
    watcher.start()
    ended = "failed"
    try:
        yield
        ended = "done"
    finally:
        stop.set()
        watcher.join()
        if said:
            say(f"{what}: {ended} after {time.monotonic() - started:.0f} s")


__all__ = ["EVERY_S", "SLOW_AFTER_S", "slow_notice"]
