"""LLM fallback router: a protocol, and a client for OpenAI-compatible
chat-completions servers (Ollama, vLLM, llama.cpp server, OpenAI)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from routecore.errors import LLMError
from routecore.policy import CLARIFY


@dataclass(frozen=True)
class LLMRequest:
    query: str
    routes: Sequence[tuple[str, str]]  # (name, description)
    scores: dict[str, float] = field(default_factory=dict)
    previous_route: str | None = None
    bias_rules: Sequence[str] = ()
    hint: str | None = None


@dataclass(frozen=True)
class LLMChoice:
    route: str
    raw: str = ""


@runtime_checkable
class LLMRouter(Protocol):
    """Anything that picks one route for a request (raise ``LLMError`` on failure)."""

    def choose(self, request: LLMRequest) -> LLMChoice: ...


def build_prompt(req: LLMRequest) -> str:
    lines = [
        "You route a user's message to exactly one handler. Call exactly one of the tools.",
        f"Call {CLARIFY} when the message is ambiguous between handlers.",
    ]
    if req.bias_rules:
        lines.append("Tie-break rules: " + "; ".join(req.bias_rules) + ".")
    if req.previous_route:
        lines.append(f"The previous turn was routed to {req.previous_route}; prefer it if the message continues that topic.")
    if req.scores:
        ranked = sorted(req.scores.items(), key=lambda kv: -kv[1])
        lines.append("Semantic similarity scores: " + ", ".join(f"{k}={v:.3f}" for k, v in ranked) + ".")
    if req.hint:
        lines.append(f"The semantic router suggests {req.hint}.")
    return "\n".join(lines)


class OpenAICompatibleRouter:
    """Presents the routes as tools in one chat-completions request and parses
    exactly one tool call. Uses only the standard library (urllib)."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 5.0, temperature: float = 0.0):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key, self.timeout, self.temperature = model, api_key, timeout, temperature

    def payload(self, req: LLMRequest) -> dict:
        tools = [
            {"type": "function", "function": {"name": n, "description": d or n, "parameters": {"type": "object", "properties": {}}}}
            for n, d in list(req.routes) + [(CLARIFY, "Ask the user a clarification question.")]
        ]
        return {
            "model": self.model,
            "temperature": self.temperature,
            "messages": [{"role": "system", "content": build_prompt(req)}, {"role": "user", "content": req.query}],
            "tools": tools,
            "tool_choice": "required",
        }

    def choose(self, request: LLMRequest) -> LLMChoice:
        """One request. Connecting and the response headers wait at most
        ``timeout`` each; the body must arrive before ``timeout`` has passed since
        the call began, so a server that trickles its answer cannot hold the
        router (it fails with ``LLMError``)."""
        import urllib.error  # loaded on the first LLM call, not at import time
        import urllib.request

        body = json.dumps(self.payload(request)).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        http = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        deadline = time.monotonic() + self.timeout
        try:
            with urllib.request.urlopen(http, timeout=self.timeout) as r:
                raw = _read_until(r, deadline).decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            raise LLMError(f"LLM server answered HTTP {e.code} at {self.url}") from None
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            raise LLMError(f"LLM server unreachable or too slow at {self.url}: {e}") from None
        return LLMChoice(parse_tool_call(raw, {n for n, _ in request.routes} | {CLARIFY}), raw)


#: The most bytes of an LLM answer read (a route choice is a few hundred): an endless
#: body used to be read until the deadline, up to 2.3 GB of memory.
MAX_ANSWER_BYTES = 1 << 20


def _read_until(response: Any, deadline: float, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The response body, read in chunks; each read may block only until
    ``deadline`` (``TimeoutError`` after it), and the body may not exceed ``limit``."""
    sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer took longer than the timeout")
        if sock is not None:
            sock.settimeout(left)
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise LLMError(f"the LLM answer is larger than {limit} bytes")
        chunks.append(chunk)


def parse_tool_call(raw: str, allowed: set[str]) -> str:
    """The one tool name called in a chat-completions answer."""
    try:
        msg = json.loads(raw)["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMError(f"unparseable LLM answer: {raw[:200]!r}") from None
    calls = msg.get("tool_calls") or []
    if len(calls) != 1:
        raise LLMError(f"expected exactly one tool call, got {len(calls)}")
    try:
        name = calls[0]["function"]["name"]
    except (KeyError, TypeError):
        raise LLMError("malformed tool call") from None
    if name not in allowed:
        raise LLMError(f"LLM chose unknown route {name!r}")
    return name
