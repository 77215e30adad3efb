"""The training processes as accelerate sees them (one process without `accelerate launch`).

Every question a run asks about its processes goes through here: which one this is, what
every process holds (`gather_across`), and whether they still agree. accelerate comes with
TRL and loads torch, so it is imported when first asked.
"""

from __future__ import annotations

import json
from typing import Any


def process_state(cpu: bool = False):
    """accelerate's view of this process; under `accelerate launch` creating it joins the
    process group TRL's trainer then uses. The first call decides: `cpu` (the run trains on
    CPU) makes several processes one gloo group from the start, as TRL's `use_cpu` trainer
    would make them only once it exists (before it, each would take itself for process 0)."""
    from accelerate import PartialState  # loads torch: only when a run asks

    return PartialState(cpu=cpu)


def gather_across(obj: Any) -> list[Any]:
    """`obj` of every process, in rank order (one process: `[obj]`)."""
    if process_state().num_processes == 1:
        return [obj]
    from accelerate.utils import gather_object  # as PartialState

    return gather_object([obj])


def rank_suffix() -> str:
    """`-rank<i>` when several processes train (each writes its own files), else ''."""
    state = process_state()
    return f"-rank{state.process_index}" if state.num_processes > 1 else ""


def require_same_on_every_process(parts: dict[str, Any], step: int) -> None:
    """Stop the run when a process's curriculum, sampler or runner state differs from
    process 0's: they would sample different tasks from then on (one process: nothing)."""
    texts = gather_across(json.dumps(parts, sort_keys=True, default=str))
    first = json.loads(texts[0])
    for rank, text in enumerate(texts):
        differ = [k for k, v in json.loads(text).items() if first.get(k) != v]
        if differ:
            raise RuntimeError(
                f"at step {step} process {rank}'s {', '.join(differ)} state differs from "
                "process 0's: the processes desynced (a decision was taken from one process's "
                "rollouts); this is a bug in tbrl's gathering"
            )
