"""Dollar cost of an LLM call from its token usage: one dated price table for the whole
workspace (judges in `rewards`, the synthesis pipeline in `synth`).

Prices are USD per million tokens: input, output, cache read, cache write. Anthropic cache
writes cost 1.25x input and reads 0.1x; OpenAI bills cached input at its own rate and has no
write charge. Models we serve ourselves (Qwen via vLLM, `local`) cost nothing per token. The
`loopback` model of the offline test server is priced like Sonnet, so budgets and cost
reports are exercised offline. A model missing from the table has no price: callers decide
whether that is an error (a budgeted pipeline) or "unpriced" (a judge report).

Left out: batch discounts, long-context surcharges. These are list prices as known when this
was written; check them before trusting a budget.
"""

from __future__ import annotations

from typing import NamedTuple


class Price(NamedTuple):
    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


def _anthropic(usd_in: float, usd_out: float) -> Price:
    return Price(usd_in, usd_out, usd_in * 0.10, usd_in * 1.25)


PRICES: dict[str, Price] = {
    "claude-opus-4-6": _anthropic(5.0, 25.0),
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.80, 4.0),
    "gpt-4.1": Price(2.0, 8.0, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4o": Price(2.50, 10.0, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "loopback": _anthropic(3.0, 15.0),
    "local": Price(0.0, 0.0),
}
SELF_HOSTED_MARKERS = ("qwen",)
"""Model names containing these are served by ourselves and cost nothing per token."""


def price_for(model: str, prices: dict[str, Price] | None = None) -> Price | None:
    """The longest table key that the model name starts with (dated ids like -20250514 and
    `org/` prefixes match), or None when the model is not priced."""
    table = PRICES if prices is None else {**PRICES, **prices}
    name = model.split("/")[-1].lower()
    best = max((key for key in table if name.startswith(key)), key=len, default=None)
    if best is None and any(marker in name for marker in SELF_HOSTED_MARKERS):
        best = "local"
    return table.get(best) if best else None


def cost_usd(
    price: Price,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float:
    return (
        input_tokens * price.input
        + output_tokens * price.output
        + cache_read_tokens * price.cache_read
        + cache_write_tokens * price.cache_write
    ) / 1e6
