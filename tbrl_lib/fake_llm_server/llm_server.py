"""A loopback HTTP server that speaks the Anthropic Messages and OpenAI Chat Completions wire
formats, for tests and offline demos with the real `anthropic` and `openai` SDK clients.

    with LLMServer(["<bash>\\ncmd: ls\\n</bash>", Reply.rate_limited(1.0), "done"]) as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="test")
        openai.OpenAI(base_url=server.openai_base_url, api_key="test")

Replies come from a queue (strings or `Reply`s) or a callable that sees each request.
Faults: HTTP 429 with `retry-after`, 529 `overloaded_error`, 500, a slow reply (bounded
delay), a garbage body. Every request is logged (`server.requests`) for assertions.
Usage is reported with rough token counts (4 characters a token) and, for Anthropic,
prompt-cache accounting: the longest prefix ending at a `cache_control` block seen before is
"read", the rest up to the last such block is "created". vLLM's `return_token_ids` is honoured when a reply carries ids or
the server has a `tokenize` function. Left out: streaming (answered with a 400 error that
says so), batches, embeddings.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_DELAY_S = 60.0


@dataclass
class Reply:
    """One scripted answer. Plain strings in a script mean `Reply(text=...)`."""

    text: str = ""
    json: Any = None
    """Structured output: an Anthropic `tool_use` input, or the OpenAI JSON content."""
    status: int = 200
    error_type: str = ""
    retry_after: float | None = None
    delay_s: float = 0.0
    garbage: bool = False
    stop_reason: str | None = None
    """Anthropic stop_reason / OpenAI finish_reason; derived when None."""
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    usage: dict[str, int] = field(default_factory=dict)
    """Overrides for the reported usage fields."""

    @classmethod
    def rate_limited(cls, retry_after: float = 1.0) -> Reply:
        return cls(status=429, error_type="rate_limit_error", retry_after=retry_after)

    @classmethod
    def overloaded(cls) -> Reply:
        return cls(status=529, error_type="overloaded_error")

    @classmethod
    def server_error(cls) -> Reply:
        return cls(status=500, error_type="api_error")

    @classmethod
    def slow(cls, delay_s: float, text: str = "") -> Reply:
        return cls(text=text, delay_s=delay_s)

    @classmethod
    def garbage_body(cls) -> Reply:
        return cls(garbage=True)


@dataclass
class RecordedRequest:
    api: str
    """`anthropic` or `openai`."""
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float


Script = Iterable[Reply | str] | Callable[[RecordedRequest], Reply | str]


class LLMServer:
    """Context manager running the server in a daemon thread on 127.0.0.1 (a free port)."""

    def __init__(
        self,
        script: Script = (),
        *,
        default: Reply | str | None = None,
        tokenize: Callable[[str], list[int]] | None = None,
        max_delay_s: float = MAX_DELAY_S,
    ) -> None:
        self._callable = script if callable(script) else None
        self._queue: deque[Reply | str] = deque() if callable(script) else deque(script)
        self.default = default
        self.tokenize = tokenize
        self.max_delay_s = max_delay_s
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._seen_cache_prefixes: set[str] = set()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------
    def __enter__(self) -> LLMServer:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="llm-server", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def base_url(self) -> str:
        """Root URL (the Anthropic SDK's `base_url`)."""
        assert self._httpd is not None, "use LLMServer as a context manager"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    def push(self, *replies: Reply | str) -> None:
        with self._lock:
            self._queue.extend(replies)

    # -- answering ---------------------------------------------------------------
    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._callable is not None:
                reply = self._callable(request)
            elif self._queue:
                reply = self._queue.popleft()
            elif self.default is not None:
                reply = self.default
            else:
                reply = Reply(
                    status=500,
                    error_type="api_error",
                    text="loopback LLM server: the script has no reply left for this request",
                )
        return Reply(text=reply) if isinstance(reply, str) else reply

    def _wait(self, seconds: float) -> None:
        self._stop.wait(min(seconds, self.max_delay_s))

    def _cache_usage(self, body: dict[str, Any]) -> tuple[int, int]:
        """(cache_creation, cache_read) tokens for the Anthropic prompt-cache simulation."""
        blocks: list[Any] = []
        system = body.get("system")
        blocks += system if isinstance(system, list) else ([{"text": system}] if system else [])
        for message in body.get("messages", []):
            content = message.get("content")
            blocks += content if isinstance(content, list) else [{"text": content}]
        read = last = 0
        for i, block in enumerate(blocks):
            if isinstance(block, dict) and block.get("cache_control"):
                prefix = json.dumps(blocks[: i + 1], sort_keys=True)
                key = hashlib.sha256(prefix.encode()).hexdigest()
                with self._lock:
                    if key in self._seen_cache_prefixes:
                        read = estimate_tokens(prefix)  # the longest cached prefix is read
                    self._seen_cache_prefixes.add(key)
                last = estimate_tokens(prefix)
        return max(last - read, 0), read


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _anthropic_body(server: LLMServer, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    tools = body.get("tools") or []
    if reply.json is not None and tools:
        choice = body.get("tool_choice") or {}
        name = choice.get("name") or tools[0]["name"]
        content = [
            {
                "type": "tool_use",
                "id": f"toolu_{uuid.uuid4().hex[:20]}",
                "name": name,
                "input": reply.json,
            }
        ]
        stop, out_text = "tool_use", json.dumps(reply.json)
    else:
        text = reply.text if reply.json is None else json.dumps(reply.json)
        content, stop, out_text = [{"type": "text", "text": text}], "end_turn", text
    created, read = server._cache_usage(body)
    prompt = json.dumps([body.get("system"), body.get("messages")])
    usage = {
        "input_tokens": max(1, estimate_tokens(prompt) - created - read),
        "output_tokens": estimate_tokens(out_text),
        "cache_creation_input_tokens": created,
        "cache_read_input_tokens": read,
        **reply.usage,
    }
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "loopback"),
        "content": content,
        "stop_reason": reply.stop_reason or stop,
        "stop_sequence": None,
        "usage": usage,
    }


def _openai_body(server: LLMServer, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    fmt = (body.get("response_format") or {}).get("type")
    text = json.dumps(reply.json) if reply.json is not None else reply.text
    if fmt in ("json_object", "json_schema") and reply.json is None:
        json.loads(text)  # a scripted non-JSON reply to a JSON request is a test bug: fail loudly
    prompt_text = "".join(str(m.get("content", "")) for m in body.get("messages", []))
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "finish_reason": reply.stop_reason or "stop",
        "logprobs": None,
    }
    result: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "loopback"),
        "choices": [choice],
    }
    prompt_ids, completion_ids = reply.prompt_ids, reply.completion_ids
    if server.tokenize is not None:
        prompt_ids = prompt_ids if prompt_ids is not None else server.tokenize(prompt_text)
        completion_ids = completion_ids if completion_ids is not None else server.tokenize(text)
    if body.get("return_token_ids") and prompt_ids is not None and completion_ids is not None:
        result["prompt_token_ids"] = prompt_ids
        choice["token_ids"] = completion_ids
    n_prompt = len(prompt_ids) if prompt_ids is not None else estimate_tokens(prompt_text)
    n_completion = len(completion_ids) if completion_ids is not None else estimate_tokens(text)
    result["usage"] = {
        "prompt_tokens": n_prompt,
        "completion_tokens": n_completion,
        "total_tokens": n_prompt + n_completion,
        "prompt_tokens_details": {"cached_tokens": 0},
        **reply.usage,
    }
    return result


def _error_body(api: str, reply: Reply) -> dict[str, Any]:
    message = reply.text or f"loopback fault injection: {reply.error_type or reply.status}"
    if api == "anthropic":
        return {
            "type": "error",
            "error": {"type": reply.error_type or "api_error", "message": message},
        }
    return {
        "error": {
            "message": message,
            "type": reply.error_type or "server_error",
            "code": reply.status,
        }
    }


def _make_handler(server: LLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": [{"id": "loopback", "object": "model", "owned_by": "tbrl"}],
                    },
                )
            else:
                self._send(
                    404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
                )

        def do_POST(self) -> None:
            path = self.path.split("?")[0].rstrip("/")
            api = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}.get(path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            if api is None:
                self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError as exc:
                self._refuse(api, f"request body is not JSON: {exc}")
                return
            if body.get("stream"):
                self._refuse(api, "the loopback server does not stream; set stream=false")
                return
            request = RecordedRequest(
                api, path, {k.lower(): v for k, v in self.headers.items()}, body, time.time()
            )
            reply = server._next_reply(request)
            if reply.delay_s:
                server._wait(reply.delay_s)
            if reply.garbage:
                self._send_raw(
                    200, b"<html><body>502 Bad Gateway</body></html> {not json", "application/json"
                )
            elif reply.status != 200:
                headers = (
                    {"retry-after": str(reply.retry_after)} if reply.retry_after is not None else {}
                )
                self._send(reply.status, _error_body(api, reply), headers)
            else:
                make = _anthropic_body if api == "anthropic" else _openai_body
                self._send(200, make(server, body, reply))

        def _refuse(self, api: str, text: str) -> None:
            """A 400 invalid-request error in `api`'s own error shape."""
            reply = Reply(status=400, error_type="invalid_request_error", text=text)
            self._send(400, _error_body(api, reply))

        def _send(
            self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

        def _send_raw(
            self, status: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
        ) -> None:
            try:
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_{uuid.uuid4().hex[:16]}")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout); nothing to answer

    return Handler
