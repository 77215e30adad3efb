"""Judge resilience: fallback chain, limits, cache, cost.

    chain = JudgeChain([make_judge("anthropic:claude-sonnet-4-20250514"), make_judge("rule")])
    outcome = await chain.score(item)     # JudgeResult, or JudgeMissing (never 0, never NaN)

- Fallback: judges are tried in order; a `JudgeError` (429/529/5xx/timeout after the SDK's
  own retries, a connection failure, an unreadable reply after the format retry) moves on to
  the next judge and is logged and recorded in `result.fallbacks`. All failing gives a
  `JudgeMissing` with every reason; the reward then renormalises or flags `infra_error`.
- Limits: one semaphore (`max_concurrency`) and a sliding-window limiter (`rpm`, `tpm`,
  tokens estimated at 4 characters each) shared by every call of the chain.
- Cache: keyed by (judge name, prompt version, judge-input hash); a hit costs nothing and is
  marked `cached=True`. In memory, plus a JSON-lines file when `cache_path` is given.
- Cost: `ledger` sums tokens and dollars per judge for the run and for the current step
  (`ledger.start_step()`); `ledger.metrics()` gives `judge/...` metrics.

Building judges from spec strings and the hot-reloaded YAML config (`make_judge`,
`JudgeConfig`, `ConfiguredJudge`) is `specs.py`, above this module: it builds chains, and
a chain knows nothing of how its judges were made.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tbrl_lib.llm_api import Usage
from tbrl_lib.rewards.judges.base import Judge, JudgeError, JudgeInput, JudgeResult

log = logging.getLogger(__name__)


@dataclass
class JudgeMissing:
    """Every judge failed. `reason` says why, per judge; the reward decides what to do."""

    reason: str
    failures: list[str] = field(default_factory=list)
    score: None = None


class RateLimiter:
    """Sliding one-minute window over requests and (estimated) tokens."""

    def __init__(
        self, rpm: int | None = None, tpm: int | None = None, window_s: float = 60.0
    ) -> None:
        self.rpm, self.tpm, self.window_s = rpm, tpm, window_s
        self._events: collections.deque[tuple[float, int]] = collections.deque()
        self._lock = asyncio.Lock()

    async def acquire(self, tokens: int) -> None:
        if not self.rpm and not self.tpm:
            return
        async with self._lock:
            while True:
                now = time.monotonic()
                while self._events and now - self._events[0][0] >= self.window_s:
                    self._events.popleft()
                used = sum(t for _, t in self._events)
                rpm_ok = not self.rpm or len(self._events) < self.rpm
                tpm_ok = not self.tpm or not self._events or used + tokens <= self.tpm
                if rpm_ok and tpm_ok:
                    self._events.append((now, tokens))
                    return
                await asyncio.sleep(max(0.01, self.window_s - (now - self._events[0][0])))


class CostLedger:
    """Tokens and dollars per judge, for the whole run and for the current step."""

    def __init__(self) -> None:
        self.run: dict[str, Usage] = collections.defaultdict(Usage)
        self.step: dict[str, Usage] = collections.defaultdict(Usage)
        self.calls = collections.Counter()
        self.fallbacks = 0
        self.missing = 0
        self._lock = threading.Lock()

    def record(self, judge: str, usage: Usage) -> None:
        with self._lock:
            self.run[judge].add(usage)
            self.step[judge].add(usage)
            self.calls[judge] += 1

    def start_step(self) -> None:
        with self._lock:
            self.step = collections.defaultdict(Usage)

    def metrics(self) -> dict[str, float]:
        def total(table: dict[str, Usage], attr: str) -> float:
            return float(sum(getattr(u, attr) for u in table.values()))

        return {
            "judge/cost_usd_run": total(self.run, "cost_usd"),
            "judge/cost_usd_step": total(self.step, "cost_usd"),
            "judge/input_tokens_run": total(self.run, "input_tokens"),
            "judge/output_tokens_run": total(self.run, "output_tokens"),
            "judge/cache_read_tokens_run": total(self.run, "cache_read_tokens"),
            "judge/calls": float(sum(self.calls.values())),
            "judge/fallbacks": float(self.fallbacks),
            "judge/missing": float(self.missing),
        }


class JudgeCache:
    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else None
        self._data: dict[str, dict] = {}
        self._lock = threading.Lock()
        if self.path and self.path.exists():
            for line in self.path.read_text().splitlines():
                if line.strip():
                    entry = json.loads(line)
                    self._data[entry["key"]] = entry["result"]

    def get(self, key: str) -> JudgeResult | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        result = JudgeResult(**{**entry, "usage": Usage()})
        result.cached, result.latency_s = True, 0.0
        return result

    def put(self, key: str, result: JudgeResult) -> None:
        data = result.to_dict()
        with self._lock:
            self._data[key] = data
            if self.path:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a") as fh:
                    fh.write(json.dumps({"key": key, "result": data}) + "\n")


class JudgeChain:
    """Ordered fallback over judges with shared limits, cache and cost ledger."""

    def __init__(
        self,
        judges: list[Judge],
        *,
        max_concurrency: int = 8,
        rpm: int | None = None,
        tpm: int | None = None,
        cache: JudgeCache | None = None,
        call_timeout_s: float = 300.0,
        ledger: CostLedger | None = None,
    ) -> None:
        if not judges:
            raise ValueError("a judge chain needs at least one judge, e.g. ['rule']")
        self.judges = list(judges)
        self.name = " > ".join(j.name for j in self.judges)
        self.prompt_version = self.judges[0].prompt_version
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self.max_concurrency = max_concurrency
        self.limiter = RateLimiter(rpm, tpm)
        self.cache = cache if cache is not None else JudgeCache()
        self.call_timeout_s = call_timeout_s
        self.ledger = ledger or CostLedger()

    async def score(self, item: JudgeInput) -> JudgeResult | JudgeMissing:
        failures: list[str] = []
        estimated = sum(len(m["content"]) for m in item.messages) // 4 + 3000
        for judge in self.judges:
            key = f"{judge.name}|{judge.prompt_version}|{item.digest(judge.prompt_version)}"
            hit = self.cache.get(key)
            if hit is not None:
                hit.fallbacks = list(failures)
                return hit
            try:
                async with self._semaphore:
                    await self.limiter.acquire(estimated)
                    result = await asyncio.wait_for(judge.score(item), self.call_timeout_s)
            except (TimeoutError, JudgeError) as err:
                reason = f"{judge.name}: {err or 'timed out'}"
                failures.append(reason)
                self.ledger.fallbacks += 1
                log.warning(
                    "tbrl judge: %s failed (%s); falling back", judge.name, err or "timeout"
                )
                continue
            self.ledger.record(judge.name, result.usage)
            result.fallbacks = list(failures)
            self.cache.put(key, result)
            return result
        self.ledger.missing += 1
        return JudgeMissing(reason="every judge failed: " + " | ".join(failures), failures=failures)


def metrics_of(result: JudgeResult | JudgeMissing) -> dict[str, Any]:
    """`judge/...` metrics of one scored rollout."""
    if isinstance(result, JudgeMissing):
        return {"judge/missing": 1.0}
    return {
        "judge/score": result.score,
        "judge/latency_s": result.latency_s,
        "judge/cost_usd": result.usage.cost_usd,
        "judge/cached": float(result.cached),
        "judge/fallbacks": float(len(result.fallbacks)),
        "judge/missing": 0.0,
    }
