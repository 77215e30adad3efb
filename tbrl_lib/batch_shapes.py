"""The largest batches this process has run since the last reset, noted by what runs them.

A generation batch (`BatchingGenerator`: its episodes, each padded to the batch's longest
prompt plus its longest reply) and a training micro-batch (the GRPO trainer: its tokens,
padded). Like the kernel's resident high-water mark, this is process-wide: a run's
`RunClock` resets it when a phase starts and reads it when the phase ends, and the memory
planner re-plans each phase at the shape it reached (`gpu_memory.memory_report`), so a
phase whose replies stopped early is compared with what its formulas say for those replies,
not for full-length ones.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class Reached:
    generation_episodes: int = 0
    """Episodes of the largest generation batch (the one holding the most tokens)."""
    generation_context: int = 0
    """Tokens per episode of that batch: its longest prompt plus its longest reply."""
    generation_new: int = 0
    """Its longest reply."""
    training_tokens: int = 0
    """Tokens of the largest training micro-batch (sequences x padded length)."""

    def noted(self) -> dict[str, int]:
        """The fields something noted (non-zero)."""
        return {name: value for name, value in asdict(self).items() if value}

    def keep_generation(self, episodes: int, context: int, new_tokens: int) -> None:
        if episodes * context > self.generation_episodes * self.generation_context:
            self.generation_episodes = episodes
            self.generation_context = context
            self.generation_new = new_tokens


_reached = Reached()
_step = Reached()
"""Since the last reset (a phase), and since the last `take_step` (a GRPO step)."""


def note_generation(episodes: int, context: int, new_tokens: int) -> None:
    """A generation batch ran: kept when it holds more tokens than the largest so far."""
    for kept in (_reached, _step):
        kept.keep_generation(episodes, context, new_tokens)


def note_training(tokens: int) -> None:
    """A training micro-batch of `tokens` tokens ran."""
    for kept in (_reached, _step):
        kept.training_tokens = max(kept.training_tokens, tokens)


def reached() -> dict[str, int]:
    """What was noted since the last reset (empty: nothing ran)."""
    return _reached.noted()


def take_step() -> dict[str, int]:
    """What was noted since the last step (or reset); the next step starts afresh."""
    global _step
    noted, _step = _step.noted(), Reached()
    return noted


def reset() -> None:
    global _reached, _step
    _reached, _step = Reached(), Reached()
