"""Dollar cost of a judge call from its token usage (a small, dated price table).

Prices in USD per million tokens: (input, output, cache read, cache write). Models served
by ourselves (vLLM) cost nothing per token. An unknown model costs 0.0 and `price_for`
returns None, so reports can say "unpriced" instead of pretending it was free.
Left out: batch discounts, long-context surcharges. Checked against public price pages 2025.
"""

from __future__ import annotations

from tbrl_lib.rewards.judges.base import Usage

PRICES: dict[str, tuple[float, float, float, float]] = {
    "claude-opus-4": (15.0, 75.0, 1.50, 18.75),
    "claude-sonnet-4": (3.0, 15.0, 0.30, 3.75),
    "claude-3-7-sonnet": (3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": (1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": (0.80, 4.0, 0.08, 1.0),
    "gpt-4.1": (2.0, 8.0, 0.50, 0.0),
    "gpt-4.1-mini": (0.40, 1.60, 0.10, 0.0),
    "gpt-4o": (2.50, 10.0, 1.25, 0.0),
    "gpt-4o-mini": (0.15, 0.60, 0.075, 0.0),
    "local": (0.0, 0.0, 0.0, 0.0),
}


def price_for(model: str) -> tuple[float, float, float, float] | None:
    """The longest table key that `model` starts with (dated ids like -20250514 match)."""
    name = model.split("/")[-1].lower()
    best = max((k for k in PRICES if name.startswith(k)), key=len, default=None)
    if best is None and ("qwen" in name or name.startswith("loopback")):
        best = "local"
    return PRICES.get(best) if best else None


def cost_usd(model: str, usage: Usage) -> float:
    price = price_for(model)
    if price is None:
        return 0.0
    p_in, p_out, p_read, p_write = price
    return (usage.input_tokens * p_in + usage.output_tokens * p_out + usage.cached_tokens * p_read
            + usage.cache_write_tokens * p_write) / 1e6
