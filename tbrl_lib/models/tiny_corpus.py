"""The tiny model's tokenizer corpus, and the tiny model built on it.

The tiny Qwen3 (`policies/tiny_model.py`) learns its 2k-token BPE vocabulary from tbrl's own
text, in this order: the full and compact system prompts as the agent renders them, the
action examples, the malformed-reply corpus (`data/agent_corpus/`), the bundled tasks'
instructions and solutions (`data/tasks/`), and instances of every procedural family (easy
and medium), so the words a family's tasks use are tokens of their own. The text renders
the agent's prompts and draws the families' tasks, so it lives here, above both; the
builder below takes it as an argument. The model's folder name hashes the text: changing
any of it builds (and measures) a new tiny model. Left out: other corpora.
"""

from __future__ import annotations

import json
from pathlib import Path

from tbrl_lib.agent.actions import EXAMPLES
from tbrl_lib.agent.config import EpisodeLimits
from tbrl_lib.agent.prompts import system_prompt
from tbrl_lib.policies.tiny_model import build_tiny_qwen3
from tbrl_lib.synth.families import FAMILIES
from tbrl_lib.synth.generate import make_task
from tbrl_lib.workspace import workspace_path, workspace_root


def training_text(repo_root: Path | None = None) -> list[str]:
    """The bundled text the tokenizer learns from (deterministic order), read from the
    workspace's `data/` unless another root is given."""
    repo_root = repo_root or workspace_root()
    compact = system_prompt(EpisodeLimits(system_prompt="compact"))
    texts = [system_prompt(), compact, *EXAMPLES.values()]
    corpus = repo_root / "data" / "agent_corpus" / "malformed.jsonl"
    if corpus.exists():
        texts += [
            json.loads(line)["text"] for line in corpus.read_text().splitlines() if line.strip()
        ]
    for pattern in ("data/tasks/*/instruction.md", "data/tasks/*/solution/solve.sh"):
        texts += [p.read_text(errors="replace") for p in sorted(repo_root.glob(pattern))]
    return texts + family_text()


def family_text(seeds: int = 30) -> list[str]:
    """Instructions and reference solutions of the procedural families (easy and medium), so
    the words their instances use are tokens of their own."""
    texts = []
    for family in sorted(FAMILIES):
        for difficulty in ("easy", "medium"):
            for seed in range(seeds):
                task = make_task(family, seed, difficulty)
                texts += [task.instruction, task.solution or ""]
    return texts


def build_tiny_model(out_dir: str | Path | None = None, seed: int = 0, size: str = "smoke") -> Path:
    """The tiny model of `size` with its tokenizer trained on `training_text()`, cached in
    `out_dir` (default: the workspace's `outputs/models/`)."""
    cache = out_dir or workspace_path("outputs", "models")
    return build_tiny_qwen3(training_text(), cache, seed=seed, size=size)
