"""The LLM tool router (issue 19): an LLM picks the tools from one-line summaries.

One chat-completions call to any OpenAI-compatible server. The prompt holds the
query and the one-line summary of every candidate tool (the two-level catalog:
:meth:`ToolSpec.summary`), and, as a hint, the semantic belt. The answer is JSON
inside ``<tool_selection>`` tags::

    <tool_selection>{"selected_tools": ["get_weather"], "complexity": "simple",
    "execution_strategy": "direct", "reasoning": "...", "confidence": 0.9}</tool_selection>

The parser is tolerant (no tags: the outermost braces; code fences; a bare list of
names). Unknown tool names are dropped and reported; an empty or unparseable answer,
a timeout or a server error falls back to the semantic belt, and the result says so.

Modes: ``llm`` (every tool's summary), ``hybrid`` (the semantic ranking narrows the
catalog to the best ``hybrid_top``, default 20, then the LLM chooses) and
``semantic`` (no LLM: the router's belt). The chosen tools' full schemas come back.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import replace as _replace
from typing import TYPE_CHECKING, Any, Literal, Sequence

from routecore.decide.arguments import context_domains_arg, part_of, query_vectors
from routecore.decide.conversation import routing_text
from routecore.decision import Alert, Reason, ToolBelt, emit, trace
from routecore.errors import ConfigError, InvalidArgumentError, LLMError
from routecore.routers.tool_routing import (
    COMPLEXITY,
    STRATEGIES,
    TAG,
    TOOL_ROUTING_REASONS,
    ToolRouting,
    parse_selection,
    semantic_routing,
    validated_routing,
)
from routecore.tools.catalog import estimate_tokens
from routecore.tools.toolbelt import select_tools

if TYPE_CHECKING:
    from routecore.routers.router import Router

Mode = Literal["llm", "hybrid", "semantic"]
MODES = ("llm", "hybrid", "semantic")
__all__ = [
    "COMPLEXITY",
    "MODES",
    "STRATEGIES",
    "TAG",
    "TOOL_ROUTING_REASONS",
    "LLMToolRouter",
    "ToolRouting",
    "parse_selection",
]


class LLMToolRouter:
    """Tools for a query from an LLM, over a :class:`~routecore.routers.router.Router`'s catalog.

    Args:
        router: the router whose tools (and semantic belt) are used.
        base_url, model, api_key, timeout, max_tokens: the OpenAI-compatible server
            (as :class:`routecore.llm.llm.OpenAICompatibleRouter`); ``timeout`` bounds a call.
        mode: ``llm``, ``hybrid`` (default) or ``semantic``.
        hybrid_top: candidates kept by the semantic ranking in ``hybrid`` mode.
        hint: show the LLM the semantic belt's tools.
        client: an :class:`routecore.llm.llm.OpenAICompatibleRouter` to use instead of
            ``base_url``, ``model``, ... (:meth:`from_config` passes the ``llm:`` section's).
        metrics: a sink called with every :class:`ToolRouting` (as ``Router(metrics=)``).

    Calls: :meth:`choose_tools`, :meth:`choose_tools_batch`, :meth:`achoose_tools`,
    :meth:`achoose_tools_batch` (``select`` is a deprecated alias).

    Raises:
        ConfigError: a bad mode or ``hybrid_top``, a router without tools, or a bad URL.
    """

    def __init__(
        self,
        router: Router,
        base_url: str | None = None,
        model: str = "",
        *,
        api_key: str | None = None,
        timeout: float = 5.0,
        mode: Mode = "hybrid",
        hybrid_top: int = 20,
        hint: bool = True,
        max_tokens: int | None = None,
        client: Any = None,
        metrics: Any = None,
    ):
        part_of(router, "an LLM tool router's router", "a Router", "tools", "tool_specs", "tool_catalog")
        if mode not in MODES:
            raise ConfigError(f"LLM tool router: mode must be one of {MODES}, got {mode!r}")
        if not (isinstance(hybrid_top, int) and hybrid_top >= 1):
            raise ConfigError(f"LLM tool router: hybrid_top must be an int >= 1, got {hybrid_top!r}")
        if not router.tool_specs:
            raise ConfigError("LLM tool router: the router has no tools")
        self.router, self.mode, self.hybrid_top, self.hint = router, mode, hybrid_top, hint
        self.client = client
        #: Called with every ToolRouting (a :class:`routecore.routers.routing_metrics.RoutingMetrics`,
        #: or any callable).
        self.metrics = metrics
        if mode != "semantic" and client is None:
            if not base_url:
                raise ConfigError(f"LLM tool router: mode {mode!r} needs base_url")
            from routecore.llm.llm import OpenAICompatibleRouter

            self.client = OpenAICompatibleRouter(
                base_url, model, api_key=api_key, timeout=timeout, max_tokens=max_tokens
            )

    @classmethod
    def from_config(
        cls,
        path: str | os.PathLike[str],
        *,
        llm_url: str | None = None,
        llm_model: str | None = None,
        **kw: Any,
    ) -> "LLMToolRouter":
        """The tools of a config, its ``llm:`` server and its ``llm_tools:`` section (``mode``,
        ``hybrid_top``, ``hint``; see ``examples/llm_tools.yaml``). ``llm_url`` / ``llm_model``
        override the server's URL and model, as on the command line; ``kw`` go to the Router."""
        from routecore.config import config_schema
        from routecore.config.specs import read_config_file
        from routecore.llm.llm import llm_from_config
        from routecore.routers.router import Router

        data = read_config_file(path)
        cfg = config_schema.convert(data.get("llm_tools") or {}, config_schema.LLMTools, f"{path}: llm_tools")
        client = None
        if cfg.mode != "semantic":
            client = llm_from_config(data.get("llm"), str(path), base_url=llm_url, model=llm_model)
            if client is None:
                raise ConfigError(
                    f"{path}: llm_tools: mode {cfg.mode!r} needs an 'llm:' section (the server)"
                )
        # One client for both: the router's LLM fallback (its routes, if any) and the tool choice.
        metrics = kw.pop("metrics", None)
        router = Router.from_config(path, llm=client, llm_url=llm_url, llm_model=llm_model, **kw)
        return cls(
            router, mode=cfg.mode, hybrid_top=cfg.hybrid_top, hint=cfg.hint, client=client, metrics=metrics
        )

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def messages(self, query: str, candidates: Sequence[Any], belt: ToolBelt | None) -> list[dict[str, str]]:
        """The chat messages of one call: the candidates' summaries, the answer format, the hint."""
        lines = "\n".join(t.summary() for t in candidates)
        hint = (
            f"\nA semantic search suggests: {', '.join(belt.names)}."
            if self.hint and belt is not None and belt.names
            else ""
        )
        system = (
            "You choose the tools an agent needs for the user's request, from this catalog (name: summary):\n"
            f"{lines}\n{hint}\n"
            f"Answer with JSON inside <{TAG}></{TAG}> tags: "
            '{"selected_tools": [names from the catalog, possibly none], '
            f'"complexity": one of {list(COMPLEXITY)}, "execution_strategy": one of {list(STRATEGIES)}, '
            '"reasoning": one sentence, "confidence": a number from 0 to 1}.'
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": query}]

    def choose_tools(
        self,
        query: str,
        *,
        top_k: int | None = None,
        vector: Any = None,
        context_domains: Sequence[str] = (),
    ) -> ToolRouting:
        """The tools for ``query`` (at most ``top_k``, default the policy's ``tool_top_k``); ``vector``:
        the query's embedding, as ``Router.tools(vector=)`` (the call then skips the encoder);
        ``context_domains``: the active domains, as ``Router.tools`` reads them (the semantic belt's).

        Never raises for any string (a non-str is an :class:`InvalidArgumentError`): lone
        surrogates are removed (a note says so); nothing left to read gives the core tools and no
        LLM call (reason ``empty_query``); a failed LLM falls back to the semantic belt
        (``fallback``); a failed encoder leaves the LLM every tool's summary, as ``route()``
        leaves it the routes, and when it does not answer either, the core tools (``error``)."""
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a str, got {type(query).__name__}")
        domains = context_domains_arg(context_domains)
        return emit(self.metrics, trace("tool routing", self._choose(query, top_k, vector, domains)))

    def choose_tools_batch(
        self,
        queries: Sequence[str],
        *,
        top_k: int | None = None,
        vectors: Any = None,
        context_domains: Sequence[str] = (),
    ) -> list[ToolRouting]:
        """:meth:`choose_tools` of each query, embedded in one batched encoder call (one LLM call
        per query that needs one; a failed batch call: each query degrades on its own); ``vectors``:
        the queries' embeddings, one row per query (no encoder call); ``context_domains``: one for all."""
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise InvalidArgumentError("queries must be a list of strings; use choose_tools() for one query")
        for q in queries:
            if not isinstance(q, str):
                raise InvalidArgumentError(f"queries must be strings, got {type(q).__name__}")
        texts = [self.router.tool_catalog.read_query(q)[0] for q in queries]
        if vectors is not None:  # the caller's rows: one per query, no encoder call
            vectors = query_vectors(vectors, self.router.encoder.dim, len(queries))
            return [
                self.choose_tools(q, top_k=top_k, vector=v, context_domains=context_domains)
                for q, v in zip(queries, vectors)
            ]
        todo = [t for t in texts if t.strip()]
        try:
            rows = iter(self.router.encoder.encode_with_stats(todo).embeddings if todo else [])
        except Exception:  # noqa: BLE001 - each query degrades on its own, as choose_tools() does
            return [self.choose_tools(q, top_k=top_k, context_domains=context_domains) for q in queries]
        domains = context_domains_arg(context_domains)
        return [
            emit(
                self.metrics,
                trace("tool routing", self._choose(q, top_k, next(rows) if t.strip() else None, domains)),
            )
            for q, t in zip(queries, texts)
        ]

    async def achoose_tools(self, query: str, **kw: Any) -> ToolRouting:
        """:meth:`choose_tools` off the event loop (the LLM call runs in the worker thread)."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.choose_tools, None, query, **kw)

    async def achoose_tools_batch(self, queries: Sequence[str], **kw: Any) -> list[ToolRouting]:
        """:meth:`choose_tools_batch` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.choose_tools_batch, None, queries, **kw)

    def select(self, query: str, *, top_k: int | None = None) -> ToolRouting:
        """Deprecated: :meth:`choose_tools`."""
        warnings.warn(
            "LLMToolRouter.select is deprecated: use choose_tools()", DeprecationWarning, stacklevel=2
        )
        return self.choose_tools(query, top_k=top_k)

    def _choose(
        self, query: str, top_k: int | None, vec: Any = None, domains: tuple[str, ...] = ()
    ) -> ToolRouting:
        """The result for ``query``; ``vec``: its embedding from a batched encoder call; ``domains``: the
        active domains."""
        k = self.router.policy.tool_top_k if top_k is None else top_k
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:  # as Router.tools checks it
            raise InvalidArgumentError(f"top_k must be a whole number >= 1, got {top_k!r}")
        specs = self.router.tool_specs
        text, notes = self.router.tool_catalog.read_query(query)
        notes_ = tuple(Alert(kind, m) for kind, m in notes)
        if not text.strip():
            belt = self._belt(query, k, domains=domains)  # the empty belt: nothing is encoded
            why = Reason("empty_query", "the query is empty or blank: the core tools only, no LLM call")
            return _replace(
                semantic_routing(belt, self.mode, None, specs), reason=why, alerts=notes_, query=query
            )
        try:  # one encode for the belt and the ranking
            if vec is None:
                vec = self.router.encoder.encode_with_stats([text]).embeddings[0]
        except Exception as e:  # noqa: BLE001 - degrade as route() does: the LLM, else the core tools
            return self._without_encoder(query, routing_text(query)[0], k, f"{type(e).__name__}: {e}", notes_)
        belt = self._belt(query, k, vec, domains=domains)
        if self.mode == "semantic" or self.client is None:
            why = Reason("semantic", f"semantic mode: the router's belt ({belt.reason or 'no reason'})")
            return _replace(
                semantic_routing(belt, "semantic", None, specs), reason=why, alerts=notes_, query=query
            )
        if self.mode == "hybrid":
            ranked = self._belt(query, min(self.hybrid_top, len(specs)), vec, 0.0, domains).names
            by_name = {t.name: t for t in specs}
            candidates = [by_name[n] for n in ranked if n in by_name]
        else:
            candidates = list(specs)
        got = self._asked(routing_text(query)[0], candidates, belt, k)  # the LLM reads it as typed
        return _replace(got, alerts=notes_ + got.alerts, query=query)

    def _belt(
        self,
        query: str,
        k: int,
        vec: Any = None,
        threshold: float | None = None,
        domains: tuple[str, ...] = (),
    ) -> ToolBelt:
        """The router's belt for ``query``, as :meth:`Router.tools` gives it, without reaching the
        router's metrics: this router records the ToolRouting it returns, not its working belts."""
        return select_tools(self.router.tool_catalog, query, domains, k, threshold, vector=vec)

    def _asked(self, text: str, candidates: Sequence[Any], belt: ToolBelt | None, k: int) -> ToolRouting:
        """Ask the LLM to choose among ``candidates``: its checked answer, else the semantic belt."""
        specs = self.router.tool_specs
        msgs = self.messages(text, candidates, belt)
        prompt_tokens = estimate_tokens(msgs[0]["content"] + msgs[1]["content"])
        schema_tokens = estimate_tokens(json.dumps([t.schema() for t in candidates]))
        t0 = time.perf_counter()
        try:
            answer = parse_selection(self._ask(msgs))
        except Exception as e:  # noqa: BLE001 - any LLM failure (a caller's client too) falls back
            ms = (time.perf_counter() - t0) * 1e3
            why = f"{type(e).__name__}: {e}"
            return semantic_routing(belt, self.mode, why, specs, prompt_tokens, schema_tokens, ms)
        ms = (time.perf_counter() - t0) * 1e3
        specs, mode = self.router.tool_specs, self.mode
        return validated_routing(answer, candidates, specs, mode, belt, k, prompt_tokens, schema_tokens, ms)

    def _without_encoder(
        self, query: str, text: str, k: int, error: str, notes: tuple[Alert, ...]
    ) -> ToolRouting:
        """The encoder failed: the LLM chooses from every tool's summary; when it does not (or
        there is none), the core tools, reason ``error``."""
        note = f"encoder failed ({error})"
        failed = Alert("encoder_error", note)
        if self.mode != "semantic" and self.client is not None:
            got = self._asked(text, list(self.router.tool_specs), None, k)
            if got.source == "llm":
                return _replace(got, alerts=(*notes, failed, *got.alerts), query=query)
            error = f"{error}; the LLM did not answer either: {got.fallback}"
        core = tuple(t for t in self.router.tool_specs if t.core)
        why = Reason("error", f"the encoder failed ({error}): the core tools only")
        return ToolRouting(
            tuple(t.name for t in core),
            tuple(t.schema() for t in core),
            self.mode,
            "semantic",
            fallback=note,
            alerts=(*notes, failed),
            reason=why,
            query=query,
        )

    def _ask(self, msgs: list[dict[str, str]]) -> str:
        """The assistant's text of one call (LLMError on transport, status or shape)."""
        c = self.client
        assert c is not None
        body: dict[str, Any] = {"model": c.model, "temperature": c.temperature, "messages": msgs}
        if c.max_tokens is not None:
            body["max_tokens"] = c.max_tokens
        raw = c.post(body)
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError, RecursionError):
            raise LLMError("the LLM answer is not a chat completion with a message") from None
        if not isinstance(content, str) or not content.strip():
            raise LLMError("the LLM answered nothing")
        return content
