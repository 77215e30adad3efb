"""The LLM seam of the synthesis pipeline: ask for one JSON object, get it back with usage,
and keep the bill.

`StructuredLLM` is the small `Protocol` the roles call: `ask(system, user, tool) -> Answer`.
Two backends: Anthropic (default; native SDK, the reply forced through a tool whose input
schema is the object we want, the system prompt marked for prompt caching) and any
OpenAI-compatible endpoint (JSON mode). Both reach their SDK through
`tbrl_lib.llm_api.Transport` (its own retries and timeouts, a client per event loop) and
report `llm_api.Usage`, priced from `tbrl_lib.pricing`.
`CostMeter` multiplies token usage by a price table and refuses calls once the budget is
spent (`BudgetExceeded`), so a run never overshoots by more than the calls in flight.

Left out: streaming, batches API, per-call price overrides.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from tbrl_lib import pricing
from tbrl_lib.llm_api import Transport, Usage, Vendor, anthropic_usage, openai_usage
from tbrl_lib.pricing import Price


class BudgetExceeded(RuntimeError):
    """The dollar budget is spent; the pipeline stops starting calls and saves its state."""


@dataclass(frozen=True)
class Tool:
    """The object we ask for: a name, what it is for, and its JSON schema."""

    name: str
    description: str
    schema: dict[str, Any]


@dataclass
class Answer:
    data: dict[str, Any]
    usage: Usage
    """Tokens of the call, `cost_usd` included."""

    @property
    def cost_usd(self) -> float:
        return self.usage.cost_usd


class StructuredLLM(Protocol):
    model: str

    async def ask(self, system: str, user: str, tool: Tool) -> Answer: ...


def price_for(model: str, prices: dict[str, Price] | None = None) -> Price:
    """The shared price (`tbrl_lib.pricing`); a budget cannot work without one, so an
    unpriced model is an error here, raised before the first paid call."""
    price = pricing.price_for(model, prices)
    if price is None:
        raise ValueError(
            f"no price known for model {model!r}; add it with prices={{'{model}': "
            "Price(usd_per_mtok_in, usd_per_mtok_out, cache_read, cache_write)}} "
            f"or pick one of: {', '.join(sorted(pricing.PRICES))}"
        )
    return price


@dataclass
class CostMeter:
    """Running cost of a pipeline; `check()` before a call, `charge()` after it."""

    budget_usd: float | None = None
    spent_usd: float = 0.0
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    by_role: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.budget_usd is not None and self.budget_usd <= 0:
            raise ValueError(
                f"budget_usd must be positive (or None for no cap), got {self.budget_usd}"
            )

    def check(self) -> None:
        if self.budget_usd is not None and self.spent_usd >= self.budget_usd:
            raise BudgetExceeded(
                f"budget of ${self.budget_usd:.2f} spent (${self.spent_usd:.4f} "
                f"over {self.calls} calls); raise budget_usd to continue"
            )

    def charge(self, role: str, answer: Answer) -> None:
        self.spent_usd += answer.cost_usd
        self.calls += 1
        self.usage.add(answer.usage)
        self.by_role[role] = self.by_role.get(role, 0.0) + answer.cost_usd

    def report(self) -> dict[str, Any]:
        return {
            "spent_usd": round(self.spent_usd, 6),
            "budget_usd": self.budget_usd,
            "calls": self.calls,
            "by_role_usd": {k: round(v, 6) for k, v in self.by_role.items()},
            "tokens": {k: v for k, v in vars(self.usage).items() if k != "cost_usd"},
        }


@dataclass
class ScopedMeter:
    """One task's share of a `CostMeter`: checks the shared budget, keeps its own total
    (concurrent tasks would otherwise blur each other's costs)."""

    parent: CostMeter
    spent_usd: float = 0.0

    def check(self) -> None:
        self.parent.check()

    def charge(self, role: str, answer: Answer) -> None:
        self.parent.charge(role, answer)
        self.spent_usd += answer.cost_usd


class PricedLLM:
    """A model behind one vendor's SDK, refused at construction when it has no price (a
    budget cannot work without one)."""

    vendor: Vendor

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 8000,
        timeout_s: float = 300.0,
        max_retries: int = 4,
        prices: dict[str, Price] | None = None,
    ) -> None:
        price_for(model, prices)  # fail at construction, not after the first paid call
        self.model, self.max_tokens, self.prices = model, max_tokens, prices
        self.transport = Transport(
            self.vendor,
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
        )


class AnthropicLLM(PricedLLM):
    """Claude through the native SDK; the answer is the input of a forced tool call."""

    vendor = "anthropic"

    def __init__(self, model: str = "claude-sonnet-4-6", **options: Any) -> None:
        super().__init__(model, **options)

    async def ask(self, system: str, user: str, tool: Tool) -> Answer:
        message = await self.transport.client().messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=[{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            messages=[{"role": "user", "content": user}],
            tools=[
                {"name": tool.name, "description": tool.description, "input_schema": tool.schema}
            ],
            tool_choice={"type": "tool", "name": tool.name},
        )
        usage = anthropic_usage(message.usage).priced(self.model, self.prices)
        blocks = [b for b in message.content if b.type == "tool_use" and b.name == tool.name]
        if not blocks:
            text = " ".join(getattr(b, "text", "") for b in message.content)[:300]
            raise ValueError(
                f"{self.model} did not call tool {tool.name!r} "
                f"(stop_reason={message.stop_reason}): {text!r}"
            )
        return Answer(dict(blocks[0].input), usage)


class OpenAICompatibleLLM(PricedLLM):
    """Any OpenAI-compatible chat endpoint (vLLM, OpenRouter, ...) in JSON mode."""

    vendor = "openai"

    async def ask(self, system: str, user: str, tool: Tool) -> Answer:
        schema = json.dumps(tool.schema)
        reply = await self.transport.client().chat.completions.create(
            model=self.model,
            max_tokens=self.max_tokens,
            response_format={"type": "json_object"},
            messages=[
                {"role": "system", "content": system},
                {
                    "role": "user",
                    "content": f"{user}\n\nAnswer with one JSON object "
                    f"({tool.description}) matching this JSON schema:\n{schema}",
                },
            ],
        )
        text = reply.choices[0].message.content or ""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(
                f"{self.model} answered non-JSON for {tool.name}: {err}: {text[:300]!r}"
            ) from None
        if not isinstance(data, dict):
            raise ValueError(
                f"{self.model} answered {type(data).__name__} for {tool.name}; "
                "expected one JSON object"
            )
        return Answer(data, openai_usage(reply.usage).priced(self.model, self.prices))


def make_llm(spec: str, **kwargs: Any) -> StructuredLLM:
    """`anthropic:MODEL` (default backend) or `openai:BASE_URL+MODEL`."""
    kind, _, rest = spec.partition(":")
    if kind == "anthropic" and rest:
        return AnthropicLLM(rest, **kwargs)
    if kind == "openai" and "+" in rest:
        base_url, _, model = rest.rpartition("+")
        return OpenAICompatibleLLM(model, base_url=base_url, **kwargs)
    raise ValueError(
        f"unknown LLM spec {spec!r}: use 'anthropic:MODEL' or "
        "'openai:BASE_URL+MODEL' (e.g. openai:http://localhost:8000/v1+Qwen/Qwen3-32B)"
    )


async def ask_metered(
    llm: StructuredLLM,
    meter: CostMeter | ScopedMeter,
    role: str,
    system: str,
    user: str,
    tool: Tool,
    timeout_s: float = 900.0,
) -> Answer:
    """One call under the budget, with an outer wall-clock bound on top of the SDK's."""
    meter.check()
    answer = await asyncio.wait_for(llm.ask(system, user, tool), timeout_s)
    meter.charge(role, answer)
    return answer
