"""tbrl: train long-horizon terminal agents with RL."""

import os
from pathlib import Path

__version__ = "0.1.0"
REPO_ROOT = Path(__file__).resolve().parents[1]
"""The checkout this package runs from (an editable install); data/, notebooks/, outputs/."""

# torch's CPU tensors of 2 MiB or more on transparent huge pages: one page fault per 2 MiB
# instead of per 4 KiB. With `return_freed_memory` (every large tensor its own mapping, so
# freed memory leaves the process) a SmolLM2 GRPO micro-batch took 44 s instead of 73 s at the
# same 1.71 GiB peak (`benchmarks/bench_memory.py head`, 2026-12-06). torch reads it once, at
# its first large allocation: hence here, on import. `THP_MEM_ALLOC_ENABLE=0` turns it off.
os.environ.setdefault("THP_MEM_ALLOC_ENABLE", "1")
