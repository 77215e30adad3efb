"""LLM judge backends: Anthropic (native SDK), any OpenAI-compatible endpoint, Claude Code CLI.

All three share one flow (`LLMJudge.score`): render the judge input, call the backend with
the versioned judge prompt as the system prompt, parse the score; when the reply cannot be
read, ask once more with a format-correction message; then give up with `JudgeFormatError`.
Transport errors become `JudgeError(retryable=...)` after the SDK's own retries with
backoff (`max_retries`), so the chain can fall back to the next judge. The SDK clients, the
usage and which errors are retryable come from `tbrl_lib.llm_api`, as for the API policies
and the synthesis pipeline.

- Anthropic: the system prompt carries `cache_control` (prompt caching: the rubric is read
  from the cache after the first call); structured output through a forced `record_score`
  tool whose input schema is the score object.
- OpenAI-compatible (vLLM, OpenRouter, OpenAI): `response_format` json_schema when
  `structured`; cached prompt tokens read from `prompt_tokens_details`.
- Claude Code CLI: `claude -p --output-format json [--model M]` with the prompt on stdin;
  reads `result`, `usage` and `total_cost_usd` from its JSON; killed at the timeout.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from typing import Any

from tbrl_lib.llm_api import Transport, Usage, anthropic_usage, openai_usage, retryable
from tbrl_lib.rewards.judges.base import JudgeError, JudgeFormatError, JudgeInput, JudgeResult
from tbrl_lib.rewards.judges.prompt import (
    FORMAT_CORRECTION,
    SCORE_SCHEMA,
    load_prompt,
    parse_score,
    render_input,
)


class LLMJudge:
    """One backend + model. `backend` is `anthropic`, `openai` or `claude-cli`."""

    def __init__(
        self,
        backend: str,
        model: str,
        *,
        name: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        timeout_s: float = 90.0,
        max_retries: int = 2,
        max_tokens: int = 800,
        structured: bool = True,
        prompt_file: str | None = None,
        max_input_tokens: int = 24_000,
        cli_path: str = "claude",
    ) -> None:
        if backend not in ("anthropic", "openai", "claude-cli"):
            raise ValueError(
                f"judge backend {backend!r} unknown; use anthropic, openai or claude-cli"
            )
        self.backend, self.model = backend, model
        self.name = name or f"{backend}:{model}"
        self.base_url, self.timeout_s, self.max_retries = base_url, timeout_s, max_retries
        self.max_tokens, self.structured, self.max_input_tokens = (
            max_tokens,
            structured,
            max_input_tokens,
        )
        self.cli_path = cli_path
        self.prompt = load_prompt(prompt_file)
        self.prompt_version = self.prompt.version
        self.transport = (
            None
            if backend == "claude-cli"
            else Transport(
                backend,
                base_url=base_url,
                api_key=api_key,
                api_key_env=api_key_env,
                timeout_s=timeout_s,
                max_retries=max_retries,
            )
        )

    def unavailable(self) -> str | None:
        """Why this judge cannot be called here (an absent API key or CLI), else None.
        An OpenAI-compatible endpoint given by `base_url` (vLLM) may need no key."""
        if self.transport is not None:
            return self.transport.unavailable(f"judge {self.name}")
        if shutil.which(self.cli_path) is None:
            return f"judge {self.name} needs `{self.cli_path}` on PATH (install Claude Code)"
        return None

    async def score(self, item: JudgeInput) -> JudgeResult:
        started = time.perf_counter()
        user = render_input(item, self.max_input_tokens)
        usage = Usage()
        conversation = [user]
        for attempt in (1, 2):
            reply, data, call_usage = await self._call(conversation)
            usage.add(call_usage)
            try:
                if data is not None and "score" in data:
                    score, fields = parse_score(json.dumps(data))
                else:
                    score, fields = parse_score(reply)
            except JudgeFormatError as err:
                if attempt == 2:
                    raise JudgeFormatError(
                        f"{self.name}: {err} (after a format-correction retry)"
                    ) from err
                conversation = [user, reply or json.dumps(data), FORMAT_CORRECTION]
                continue
            if self.backend != "claude-cli":  # the CLI reports its own dollars
                usage.priced(self.model)
            subscores = {
                k: float(v)
                for k, v in fields.items()
                if isinstance(v, (int, float)) and k != "score"
            }
            return JudgeResult(
                score=score,
                judge=self.name,
                prompt_version=self.prompt_version,
                subscores=subscores,
                caps=list(fields.get("caps") or []),
                reasoning=str(fields.get("reasoning", ""))[:2000],
                usage=usage,
                latency_s=time.perf_counter() - started,
                attempts=attempt,
            )
        raise AssertionError("unreachable")

    async def _call(self, conversation: list[str]) -> tuple[str, dict | None, Usage]:
        try:
            if self.backend == "anthropic":
                return await self._anthropic(conversation)
            if self.backend == "openai":
                return await self._openai(conversation)
            return await self._cli(conversation)
        except JudgeError:
            raise
        except Exception as exc:  # SDK errors after its own retries
            raise JudgeError(
                f"{self.name}: {type(exc).__name__}: {str(exc)[:300]}", retryable(exc)
            ) from exc

    @staticmethod
    def _turns(conversation: list[str]) -> list[dict[str, str]]:
        roles = ["user", "assistant"]
        return [{"role": roles[i % 2], "content": text} for i, text in enumerate(conversation)]

    async def _anthropic(self, conversation: list[str]) -> tuple[str, dict | None, Usage]:
        kwargs: dict[str, Any] = {}
        if self.structured:
            kwargs["tools"] = [
                {
                    "name": "record_score",
                    "description": "Record the rubric scores.",
                    "input_schema": SCORE_SCHEMA,
                }
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": "record_score"}
        msg = await self.transport.client().messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=self._turns(conversation),
            system=[
                {"type": "text", "text": self.prompt.text, "cache_control": {"type": "ephemeral"}}
            ],
            **kwargs,
        )
        text = "".join(getattr(b, "text", "") for b in msg.content if b.type == "text")
        data = next((b.input for b in msg.content if b.type == "tool_use"), None)
        return text, data if isinstance(data, dict) else None, anthropic_usage(msg.usage)

    async def _openai(self, conversation: list[str]) -> tuple[str, dict | None, Usage]:
        kwargs: dict[str, Any] = {}
        if self.structured and len(conversation) == 1:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judge_score", "schema": SCORE_SCHEMA},
            }
        resp = await self.transport.client().chat.completions.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=[{"role": "system", "content": self.prompt.text}, *self._turns(conversation)],
            **kwargs,
        )
        if not resp.choices:
            raise JudgeError(f"{self.name}: reply without choices", retryable=True)
        text = resp.choices[0].message.content or ""
        return text, None, openai_usage(resp.usage)

    async def _cli(self, conversation: list[str]) -> tuple[str, dict | None, Usage]:
        exe = shutil.which(self.cli_path)
        if exe is None:
            raise JudgeError(
                f"{self.name}: `{self.cli_path}` is not on PATH (install Claude Code)", False
            )
        argv = [exe, "-p", "--output-format", "json"]
        if self.model and self.model != "default":
            argv += ["--model", self.model]
        prompt = self.prompt.text + "\n\n---\n\n" + "\n\n---\n\n".join(conversation)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(prompt.encode()), self.timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise JudgeError(
                f"{self.name}: claude CLI gave no answer within {self.timeout_s:.0f}s"
            ) from None
        try:
            data = json.loads(out.decode(errors="replace"))
        except json.JSONDecodeError:
            raise JudgeError(
                f"{self.name}: claude CLI printed no JSON (exit {proc.returncode}): "
                f"{(out or err).decode(errors='replace')[:300]!r}"
            ) from None
        if proc.returncode != 0 or data.get("is_error"):
            raise JudgeError(
                f"{self.name}: claude CLI error (exit {proc.returncode}): "
                f"{str(data.get('result'))[:300]}"
            )
        u = data.get("usage") or {}
        usage = Usage(
            input_tokens=int(u.get("input_tokens", 0)),
            output_tokens=int(u.get("output_tokens", 0)),
            cache_read_tokens=int(u.get("cache_read_input_tokens", 0)),
            cache_write_tokens=int(u.get("cache_creation_input_tokens", 0)),
            cost_usd=float(data.get("total_cost_usd") or 0.0),
        )
        return str(data.get("result", "")), None, usage
