"""LLM fallback router: a protocol, and a client for OpenAI-compatible
chat-completions servers (Ollama, vLLM, llama.cpp server, OpenAI).

:class:`OpenAICompatibleRouter` uses only the standard library and keeps its
connections alive; :class:`routecore.llm.llm_async.AsyncOpenAICompatibleRouter` adds
an ``httpx`` variant for event loops. :func:`llm_from_config` builds one from the
``llm:`` section of a config file, :func:`achoose` awaits any :class:`LLMRouter`.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from routecore.decision import CLARIFY
from routecore.errors import ConfigError, LLMError
from routecore.llm.llm_http import MAX_ANSWER_BYTES, KeepAlivePool

__all__ = [
    "MAX_ANSWER_BYTES",
    "ChatCompletionsClient",
    "LLMChoice",
    "LLMRequest",
    "LLMRouter",
    "OpenAICompatibleRouter",
    "achoose",
    "build_prompt",
    "llm_from_config",
    "parse_tool_call",
]


@dataclass(frozen=True)
class LLMRequest:
    """What the LLM fallback is asked: the ``query``, the ``routes`` to choose from as
    ``(name, description)``, the router's ``scores``, the ``previous_route`` of the conversation,
    the config's ``bias_rules`` in words, and a ``hint`` (why the router could not decide)."""

    query: str
    routes: Sequence[tuple[str, str]]  # (name, description)
    scores: Mapping[str, float] = field(default_factory=dict)  # a ScoreMap from a route table
    previous_route: str | None = None
    bias_rules: Sequence[str] = ()
    hint: str | None = None


@dataclass(frozen=True)
class LLMChoice:
    """The LLM's answer: a route name (or ``CLARIFY``), and its ``raw`` text."""

    route: str
    raw: str = ""


@runtime_checkable
class LLMRouter(Protocol):
    """Anything that picks one route for a request (raise ``LLMError`` on failure).

    It may also have ``async def achoose(request)`` (:func:`achoose` uses it when
    present), and ``native_async = True`` when that runs on the event loop itself
    rather than wrapping ``choose`` in a thread (an event loop should prefer it then)."""

    def choose(self, request: LLMRequest) -> LLMChoice:
        """The route for ``request`` (one of its routes, or ``CLARIFY``); ``LLMError`` on failure."""
        ...


async def achoose(llm: LLMRouter, request: LLMRequest) -> LLMChoice:
    """``llm.achoose(request)`` when ``llm`` has one, else ``llm.choose`` in a worker thread."""
    method = getattr(llm, "achoose", None)
    if method is not None:
        return await method(request)  # type: ignore[no-any-return]
    import asyncio

    return await asyncio.to_thread(llm.choose, request)


def build_prompt(req: LLMRequest) -> str:
    """The system prompt of a request: one handler to call, when to clarify, the tie-break rules,
    the previous route and the router's scores."""
    lines = [
        "You route a user's message to exactly one handler. Call exactly one of the tools.",
        f"Call {CLARIFY} when the message is ambiguous between handlers.",
    ]
    if req.bias_rules:
        lines.append("Tie-break rules: " + "; ".join(req.bias_rules) + ".")
    if req.previous_route:
        lines.append(
            f"The previous turn was routed to {req.previous_route}; "
            "prefer it if the message continues that topic."
        )
    if req.scores:
        ranked = sorted(req.scores.items(), key=lambda kv: -kv[1])
        lines.append("Semantic similarity scores: " + ", ".join(f"{k}={v:.3f}" for k, v in ranked) + ".")
    if req.hint:
        lines.append(f"The semantic router suggests {req.hint}.")
    return "\n".join(lines)


class ChatCompletionsClient:
    """What the sync and async clients share: settings, request body, headers, parsing.

    ``api_key`` is sent as a bearer token when set (local servers need none);
    ``max_tokens`` is sent when set; ``timeout`` (seconds) bounds a whole call."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 5.0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ):
        from urllib.parse import urlsplit

        self.url = base_url.rstrip("/") + "/chat/completions"
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"LLM base_url must be an http:// or https:// URL, got {base_url!r}")
        if not (isinstance(timeout, (int, float)) and 0 < timeout < math.inf):
            raise ConfigError(f"LLM timeout must be a positive number of seconds, got {timeout!r}")
        self.model, self.api_key, self.timeout, self.temperature, self.max_tokens = (
            model,
            api_key,
            float(timeout),
            temperature,
            max_tokens,
        )

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}({self.url!r}, {self.model!r}, timeout={self.timeout})"

    def payload(self, req: LLMRequest) -> dict[str, Any]:
        """The chat-completions request body: the routes (and ``CLARIFY``) as tools, one required."""
        tools = [
            {
                "type": "function",
                "function": {
                    "name": n,
                    "description": d or n,
                    "parameters": {"type": "object", "properties": {}},
                },
            }
            for n, d in list(req.routes) + [(CLARIFY, "Ask the user a clarification question.")]
        ]
        out: dict[str, Any] = {
            "model": self.model,
            "temperature": self.temperature,
            "messages": [
                {"role": "system", "content": build_prompt(req)},
                {"role": "user", "content": req.query},
            ],
            "tools": tools,
            "tool_choice": "required",
        }
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        return out

    def headers(self) -> dict[str, str]:
        """The request's headers (the bearer token when there is a key)."""
        # identity: a compressed answer could expand far beyond MAX_ANSWER_BYTES in one read
        h = {"Content-Type": "application/json", "Accept": "application/json", "Accept-Encoding": "identity"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def parse(self, raw: str, request: LLMRequest) -> LLMChoice:
        """The choice in an answer body: exactly one call of one of the request's tools."""
        return LLMChoice(parse_tool_call(raw, {n for n, _ in request.routes} | {CLARIFY}), raw)


class OpenAICompatibleRouter(ChatCompletionsClient):
    """Presents the routes as tools in one chat-completions request and parses
    exactly one tool call. Uses only the standard library (``http.client``).

    Connections are kept alive (:class:`routecore.llm.llm_http.KeepAlivePool`): the
    router keeps up to ``max_idle`` idle connections and opens another when every
    one is busy, so calls from many threads run in parallel. A kept-alive
    connection the server closed is replaced, and a call that finds it closed on
    its first write or read is sent once more on a new one. :meth:`close` (or
    ``with``) closes them.

    Proxies: like urllib before, the environment's ``http_proxy``/``https_proxy``
    and ``no_proxy`` are honoured (read when the router is made; ``https`` through
    a ``CONNECT`` tunnel). Redirects are not followed: any answer but 2xx is an
    ``LLMError`` with its status.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 5.0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        max_idle: int = 8,
    ):
        super().__init__(
            base_url, model, api_key=api_key, timeout=timeout, temperature=temperature, max_tokens=max_tokens
        )
        self._pool = KeepAlivePool(self.url, max_idle=max_idle)

    def choose(self, request: LLMRequest) -> LLMChoice:
        """One request. Connecting, sending, the response headers and the body must
        all be done before ``timeout`` has passed since the call began, so a server
        that trickles its answer cannot hold the router (it fails with ``LLMError``);
        an answer larger than :data:`MAX_ANSWER_BYTES` fails too."""
        return self.parse(self.post(self.payload(request)).decode("utf-8", "replace"), request)

    def post(self, body: Mapping[str, Any]) -> bytes:
        """POST ``body`` (JSON) to the chat-completions URL under the call's deadline: the
        raw 2xx answer. Raises ``LLMError`` when closed, unreachable, too slow or not 2xx."""
        import http.client

        if self._pool.closed:
            raise LLMError(f"the LLM router for {self.url} is closed")
        try:
            status, raw = self._pool.post(
                json.dumps(body).encode(), self.headers(), time.monotonic() + self.timeout
            )
        except (OSError, http.client.HTTPException) as e:  # TimeoutError is an OSError
            raise LLMError(
                f"LLM server unreachable or too slow at {self.url}: {e or type(e).__name__}"
            ) from None
        if not 200 <= status < 300:
            raise LLMError(f"LLM server answered HTTP {status} at {self.url}")
        return raw

    #: Whether :meth:`achoose` runs on the event loop itself (here: no, it is ``choose`` in a thread).
    native_async = False

    async def achoose(self, request: LLMRequest) -> LLMChoice:
        """:meth:`choose` in a worker thread, for event loops."""
        import asyncio

        return await asyncio.to_thread(self.choose, request)

    def close(self) -> None:
        """Close the idle connections; busy ones close when their call ends. Later calls fail."""
        self._pool.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (calls then fail with :class:`LLMError`)."""
        return bool(self._pool.closed)

    def __enter__(self) -> OpenAICompatibleRouter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_tool_call(raw: str, allowed: set[str]) -> str:
    """The one tool name called in a chat-completions answer."""
    try:
        msg = json.loads(raw)["choices"][0]["message"]
    except RecursionError:  # a JSON answer nested deeper than Python's stack
        raise LLMError(f"unparseable LLM answer: JSON nested too deep: {raw[:60]!r}...") from None
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMError(f"unparseable LLM answer: {raw[:200]!r}") from None
    calls = msg.get("tool_calls") or []
    if len(calls) != 1:
        raise LLMError(f"expected exactly one tool call, got {len(calls)}")
    try:
        name = calls[0]["function"]["name"]
    except (KeyError, TypeError):
        raise LLMError("malformed tool call") from None
    named = route_named(name, allowed)
    if named is None:
        raise LLMError(f"LLM chose unknown route {name!r}")
    return named


def route_named(answer: Any, names: Iterable[str]) -> str | None:
    """The one of ``names`` an LLM's ``answer`` names: itself, or the one its case folded matches
    ("billing" for BILLING); None when it names none (or two)."""
    names = list(names)
    if isinstance(answer, str) and answer in names:
        return answer
    folded = str(answer).casefold()
    same = [n for n in names if n.casefold() == folded]
    return same[0] if len(same) == 1 else None


def no_llm(request: Any) -> LLMChoice:
    """A chooser that declines (``Router.route(choose=no_llm)``): the decision is the one made without
    the LLM, with reason ``llm_failed`` where it would have asked (a second reading of a query, the
    learning guard)."""
    raise LLMError("this decision is made without the LLM")


# -- configuration ----------------------------------------------------------------------
def llm_from_config(
    section: Mapping[str, Any] | None,
    where: str = "config",
    *,
    base_url: str | None = None,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
    router_class: type[OpenAICompatibleRouter] | None = None,
) -> OpenAICompatibleRouter | None:
    """The LLM router of a config file's ``llm:`` section (``None`` when there is none).

    The section (:class:`routecore.config.config_schema.LLM`) has ``model``, ``base_url``
    (default: the ``OPENAI_BASE_URL`` environment variable), ``api_key_env`` (the
    *name* of the environment variable holding the key, default ``OPENAI_API_KEY``;
    a key is never written in a config), ``timeout``, ``max_tokens`` and
    ``temperature``. When the variable named is unset or empty, requests carry no
    ``Authorization`` header (local servers need none).

    ``base_url`` and ``model`` (the command line's ``--llm-url`` and ``--llm-model``)
    override the section's; ``model`` alone makes an LLM router for a config
    without a section. ``router_class`` is :class:`OpenAICompatibleRouter` by
    default (``routecore.llm.llm_async.AsyncOpenAICompatibleRouter`` for httpx).
    Errors are :class:`ConfigError` naming ``where``.
    """
    env = os.environ if environ is None else environ
    if section is None:
        if model is None:
            if base_url is not None:
                raise ConfigError(
                    f"{where}: --llm-url needs a model: --llm-model, or an 'llm:' section with 'model'"
                )
            return None
        section = {}
    if not isinstance(section, Mapping):
        raise ConfigError(f"{where}: llm: expected a mapping, got {type(section).__name__}")
    if "api_key" in section:
        raise ConfigError(
            f"{where}: llm: api_key: never write a key in a config; "
            "name its environment variable in api_key_env"
        )
    from routecore.config import config_schema as s

    cfg = s.convert(
        {**section, "model": model} if model is not None else dict(section), s.LLM, f"{where}: llm"
    )
    url = base_url or cfg.base_url or env.get("OPENAI_BASE_URL")
    if not url:
        raise ConfigError(f"{where}: llm: no base_url, and OPENAI_BASE_URL is not set")
    try:
        return (router_class or OpenAICompatibleRouter)(
            url,
            cfg.model,
            api_key=env.get(cfg.api_key_env) or None,
            timeout=cfg.timeout,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
        )
    except ConfigError as e:  # a bad --llm-url or OPENAI_BASE_URL
        raise ConfigError(f"{where}: llm: {e}") from None
