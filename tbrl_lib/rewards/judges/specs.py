"""Judges from specs: `make_judge(spec)`, and the hot-reloaded YAML config of a chain.

- `make_judge(spec)`: one judge from a spec string (the table is the package docstring);
  `A,B,C` is a `JudgeChain`, `config:PATH` a `ConfiguredJudge`.
- Hot config: `ConfiguredJudge(path)` re-reads its YAML file whenever the file's mtime
  changes (switch backend or model mid-training without a restart; on shared storage every
  node follows). A broken edit keeps the previous chain and logs why.

`make_judge` and the config build each other (a config lists specs; a spec may name a
config), so they share this module; it sits above the chain, the LLM backends and the
rule-based judge, and none of those imports it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tbrl_lib.rewards.judges.base import JudgeInput, JudgeResult
from tbrl_lib.rewards.judges.chain import CostLedger, JudgeCache, JudgeChain, JudgeMissing
from tbrl_lib.rewards.judges.llm import LLMJudge
from tbrl_lib.rewards.judges.rule_based import RuleBasedJudge

log = logging.getLogger(__name__)


def make_judge(spec: str, **options: Any):
    """A judge from a spec string (see the package docstring); `options` go to the backend."""
    spec = spec.strip()
    if "," in spec:
        return JudgeChain([make_judge(part, **options) for part in spec.split(",") if part.strip()])
    if spec in ("rule", "rule-nocaps"):
        return RuleBasedJudge(name=options.get("name") or spec, caps=spec == "rule")
    if spec.startswith("config:"):
        return ConfiguredJudge(spec.split(":", 1)[1])
    backend, _, model = spec.partition(":")
    if backend in ("anthropic", "openai", "claude-cli"):
        if backend != "claude-cli" and not model:
            raise ValueError(f"judge spec {spec!r} names no model; e.g. {backend}:MODEL")
        return LLMJudge(backend, model or "default", **options)
    raise ValueError(
        f"unknown judge spec {spec!r}; use rule, rule-nocaps, anthropic:MODEL, "
        "openai:MODEL, claude-cli[:MODEL], config:PATH, or a comma-separated chain"
    )


class JudgeSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    spec: str
    """`rule`, `anthropic:MODEL`, `openai:MODEL`, `claude-cli[:MODEL]` (see `make_judge`)."""
    name: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    timeout_s: float = Field(default=90.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    structured: bool = True
    prompt_file: str | None = None
    max_input_tokens: int = Field(default=24_000, ge=1000)


class JudgeConfig(BaseModel):
    """The judge config file (YAML). Example:

    judges:
      - {spec: "anthropic:claude-sonnet-4-20250514"}
      - {spec: "openai:Qwen/Qwen3-32B", base_url: "http://vllm:8000/v1"}
      - {spec: rule}
    max_concurrency: 16
    rpm: 200
    """

    model_config = ConfigDict(extra="forbid")
    judges: list[JudgeSpec] = Field(min_length=1)
    max_concurrency: int = Field(default=8, gt=0)
    rpm: int | None = Field(default=None, gt=0)
    tpm: int | None = Field(default=None, gt=0)
    cache_path: str | None = None
    call_timeout_s: float = Field(default=300.0, gt=0)

    @classmethod
    def load(cls, path: str | Path) -> JudgeConfig:
        try:
            raw = yaml.safe_load(Path(path).read_text())
        except yaml.YAMLError as err:
            raise ValueError(f"{path}: not valid YAML: {err}") from err
        try:
            return cls.model_validate(raw or {})
        except ValidationError as err:
            raise ValueError(f"{path}: invalid judge config:\n{err}") from err

    def build(self, ledger: CostLedger | None = None) -> JudgeChain:
        judges = [
            make_judge(s.spec, **s.model_dump(exclude={"spec"}, exclude_none=True))
            for s in self.judges
        ]
        return JudgeChain(
            judges,
            max_concurrency=self.max_concurrency,
            rpm=self.rpm,
            tpm=self.tpm,
            cache=JudgeCache(self.cache_path),
            call_timeout_s=self.call_timeout_s,
            ledger=ledger,
        )


class ConfiguredJudge:
    """A `JudgeChain` built from a YAML file and rebuilt whenever the file changes."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.ledger = CostLedger()
        self._mtime: float | None = None
        self.reloads = 0
        self.chain = self._load()

    def _load(self) -> JudgeChain:
        self._mtime = os.stat(self.path).st_mtime_ns
        chain = JudgeConfig.load(self.path).build(self.ledger)
        log.info("tbrl judge: using %s from %s", chain.name, self.path)
        return chain

    def current(self) -> JudgeChain:
        try:
            mtime = os.stat(self.path).st_mtime_ns
        except OSError as err:
            log.error(
                "tbrl judge: config %s unreadable (%s); keeping %s", self.path, err, self.chain.name
            )
            return self.chain
        if mtime != self._mtime:
            try:
                self.chain = self._load()
                self.reloads += 1
            except (ValueError, OSError) as err:
                self._mtime = mtime
                log.error("tbrl judge: %s; keeping %s", err, self.chain.name)
        return self.chain

    @property
    def name(self) -> str:
        return self.current().name

    @property
    def prompt_version(self) -> str:
        return self.current().prompt_version

    async def score(self, item: JudgeInput) -> JudgeResult | JudgeMissing:
        return await self.current().score(item)


class JudgeUnavailable(ValueError):
    """A judge was asked for that cannot run here (no API key, no CLI); says how to fix it."""


def require_available(judges: Any) -> None:
    """Refuse, before any case is scored, a judge (or a list, chain or configured chain
    containing one) that cannot run here: `JudgeUnavailable` names each and the fix."""
    pending = list(judges) if isinstance(judges, (list, tuple)) else [judges]
    problems = []
    while pending:
        judge = pending.pop(0)
        if isinstance(judge, ConfiguredJudge):
            pending.append(judge.chain)
        elif isinstance(judge, JudgeChain):
            pending.extend(judge.judges)
        elif hasattr(judge, "unavailable") and (why := judge.unavailable()):
            problems.append(why)
    if problems:
        raise JudgeUnavailable("; ".join(problems))
