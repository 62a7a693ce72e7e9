"""One call for one agent turn: the context, the route, the tool belt and the knowledge collections
from one encode of the query (issue 35 §1).

A :class:`TurnRouter` holds any of a :class:`~routecore.routers.router.Router` (routes and/or tools), a
:class:`~routecore.routers.context.ContextRouter` and a
:class:`~routecore.routers.knowledge.KnowledgeRouter`, all on one encoder model.
:meth:`TurnRouter.turn` encodes the query once and hands that embedding to each part,
exactly as the caller would with ``vector=``: ``Router.route``, ``Router.tools``,
``ContextRouter.detect`` and ``KnowledgeRouter.collections`` (the context's ``domain`` and ``intent``
labels feed the knowledge map). Each part's result is the one its own call with that vector gives.

When there is nothing to read (an empty query, or only lone surrogates) or the encoder fails, each part
is called on its own and degrades as documented for it (docs/routers.md); the turn's ``reason`` says so.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Sequence

from routecore.decide.arguments import (
    context_domains_arg,
    part_of,
    per_query,
    previous_query_arg,
    query_vectors,
)
from routecore.decide.conversation import routing_text, tail_of
from routecore.decision import Decision, JsonResult, Reason, ToolBelt, emit, plain, trace
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.context import Context
from routecore.routers.knowledge import KnowledgeSelection

if TYPE_CHECKING:
    from routecore.routers.context import ContextRouter
    from routecore.routers.knowledge import KnowledgeRouter
    from routecore.routers.router import Router

#: The reason codes of a :class:`Turn` (each part has its own reason).
TURN_REASONS: dict[str, str] = {
    "turn": "every part decided on the query's one embedding",
    "empty_query": "nothing to read: each part's own empty-query result",
    "error": "the encoder failed: each part degraded as its own call does",
}


@dataclass(frozen=True)
class TurnTimings:
    """Milliseconds of one turn: ``encode`` (the one encoder call, shared out over a batch) and
    ``total`` (every part's decision after it)."""

    encode: float = 0.0
    total: float = 0.0


@dataclass(frozen=True)
class Turn(JsonResult):
    """The results of one turn: ``context``, ``decision`` (the route), ``belt`` (the tools) and
    ``knowledge`` (the collections), each None when the router has no such part; and its
    :class:`TurnTimings`."""

    query: str
    context: Context | None = None
    decision: Decision | None = None
    belt: ToolBelt | None = None
    knowledge: KnowledgeSelection | None = None
    reason: Reason | None = None
    timings: TurnTimings = field(default_factory=TurnTimings)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values: each part as its own ``to_dict`` gives it (None when absent)."""
        parts = ("context", "decision", "belt", "knowledge")
        out: dict[str, Any] = {k: (getattr(self, k).to_dict() if getattr(self, k) else None) for k in parts}
        return {"query": self.query, **out, "reason": plain(self.reason), "timings": asdict(self.timings)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Turn":
        """The turn :meth:`to_dict` wrote.

        Raises:
            InvalidArgumentError: not a mapping, or a part of the wrong shape (named).
        """
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(f"a turn must be a mapping, got {type(d).__name__}")
        kinds: dict[str, Any] = {
            "context": Context,
            "decision": Decision,
            "belt": ToolBelt,
            "knowledge": KnowledgeSelection,
        }
        try:
            parts = {k: (c.from_dict(d[k]) if d.get(k) is not None else None) for k, c in kinds.items()}
            reason = Reason(**d["reason"]) if d.get("reason") is not None else None
            timings = TurnTimings(**(d.get("timings") or {}))
            return cls(str(d["query"]), reason=reason, timings=timings, **parts)
        except (KeyError, TypeError) as e:
            raise InvalidArgumentError(f"turn: {type(e).__name__}: {e}") from None


class TurnRouter:
    """The parts of a turn over one encoder (module docs).

    Args:
        router: routes and/or tools (a :class:`~routecore.routers.router.Router`).
        context: a :class:`~routecore.routers.context.ContextRouter`.
        knowledge: a :class:`~routecore.routers.knowledge.KnowledgeRouter`.
        metrics: a sink called with every :class:`Turn` (each part still calls its own).

    Calls: :meth:`turn`, :meth:`turn_batch`, :meth:`aturn`, :meth:`aturn_batch`.

    Raises:
        ConfigError: no part, or parts on different encoder models (one encode could not serve them).
    """

    def __init__(
        self,
        router: Router | None = None,
        *,
        context: ContextRouter | None = None,
        knowledge: KnowledgeRouter | None = None,
        metrics: Any = None,
    ):
        for part, name, want, verbs in (
            (router, "router", "a Router", ("route", "encoder")),
            (context, "context", "a ContextRouter", ("detect", "encoder")),
            (knowledge, "knowledge", "a KnowledgeRouter", ("collections", "router")),
        ):
            if part is not None:
                part_of(part, f"a turn router's {name}", want, *verbs)
        parts = [p for p in (router, context, knowledge.router if knowledge is not None else None) if p]
        if not parts:
            raise ConfigError("a turn router needs a router, a context router or a knowledge router")
        models = {p.encoder.model_id for p in parts}
        if len(models) != 1:
            raise ConfigError(
                f"every part of a turn must use the same encoder (one encode); got {sorted(models)}"
            )
        self.router, self.context, self.knowledge, self.metrics = router, context, knowledge, metrics
        self.encoder = parts[0].encoder

    def turn(
        self,
        query: str,
        *,
        previous: str | None = None,
        context_domains: Sequence[str] = (),
        vector: Any = None,
        previous_query: str | None = None,
        clarify: Decision | None = None,
    ) -> Turn:
        """Every part's result for ``query`` from one encode (``previous``: the route of the previous
        turn; ``context_domains``: the caller's active domains, as ``Router.route`` takes them, which
        the knowledge part reads instead of the context's ``domain`` label; ``vector``: the query's
        embedding, no encode; ``previous_query``: the previous turn's text, which the route decision
        reads as ``Router.route`` does; ``clarify``: the clarify decision ``query`` answers, whose
        query and this answer every part reads, the route decided as ``route(query, clarify=)``).
        Never raises for any string (a non-str is an :class:`InvalidArgumentError`)."""
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a str, got {type(query).__name__}")
        if clarify is not None and not isinstance(clarify, Decision):
            raise InvalidArgumentError(f"clarify must be the clarify Decision, got {type(clarify).__name__}")
        prior = _Prior(previous, previous_query_arg(previous_query), clarify, query)
        query = query if clarify is None else f"{clarify.query}\n{query}"
        domains = context_domains_arg(context_domains)
        given = query_vectors(vector, self.encoder.dim, 1)[0] if vector is not None else None
        text = routing_text(query)[0] if query.strip() else ""
        t0 = time.perf_counter()
        if not text:
            why = Reason("empty_query", "nothing to read")
            return self._emit(self._parts(query, prior, None, why, t0, domains))
        if given is not None:
            why = Reason("turn", "every part decided on the caller's embedding")
            return self._emit(self._parts(query, prior, given, why, t0, domains))
        try:
            vec = self.encoder.encode_with_stats([text]).embeddings[0]
        except Exception as e:  # noqa: BLE001 - each part degrades as its own call does
            why = Reason("error", f"the encoder failed ({type(e).__name__}: {e}); each part degraded")
            return self._emit(self._parts(query, prior, None, why, t0, domains))
        encode_ms = (time.perf_counter() - t0) * 1e3
        why = Reason("turn", "every part decided on one embedding")
        return self._emit(self._parts(query, prior, vec, why, t0, domains, own=text), encode_ms)

    def turn_batch(
        self,
        queries: Sequence[str],
        *,
        previous: str | Sequence[str | None] | None = None,
        context_domains: Sequence[str] = (),
        vectors: Any = None,
        previous_query: str | Sequence[str | None] | None = None,
    ) -> list[Turn]:
        """:meth:`turn` of each query from one encoder call for the batch (its time shared evenly);
        ``previous`` and ``previous_query``: one for every query, or one per query;
        ``context_domains``: one list for all; ``vectors``: the queries' embeddings, one row per query
        (no encoder call). When the batch's encode fails, each query is turned alone (and degrades alone).

        Raises:
            InvalidArgumentError: not a list of strings, or a ``previous`` list of another length.
        """
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise InvalidArgumentError("queries must be a list of strings; use turn() for one query")
        queries = list(queries)
        if not all(isinstance(q, str) for q in queries):
            raise InvalidArgumentError("queries must be a list of strings")
        follows = per_query(previous_query, len(queries), "previous_query")
        prev = list(zip(per_query(previous, len(queries), "previous"), map(previous_query_arg, follows)))
        priors = [_Prior(p, f, None, q) for (p, f), q in zip(prev, queries)]
        domains = context_domains_arg(context_domains)
        given = query_vectors(vectors, self.encoder.dim, len(queries)) if vectors is not None else None
        texts = [routing_text(q)[0] if q.strip() else "" for q in queries]
        listed = [i for i, t in enumerate(texts) if t]
        t0 = time.perf_counter()
        try:
            got = (
                self.encoder.encode_with_stats([texts[i] for i in listed]).embeddings
                if listed and given is None
                else given[listed]
                if given is not None
                else None
            )
        except Exception:  # noqa: BLE001 - each query then tries alone, as turn() degrades
            return [
                self.turn(q, previous=p, previous_query=f, context_domains=domains)
                for q, (p, f) in zip(queries, prev)
            ]
        share = (time.perf_counter() - t0) * 1e3 / max(len(listed), 1) if given is None else 0.0
        vecs: dict[int, Any] = {i: got[j] for j, i in enumerate(listed)} if got is not None else {}
        out = []
        for i, q in enumerate(queries):
            if i not in vecs:
                p, f = prev[i]  # blank: the empty turn
                out.append(self.turn(q, previous=p, previous_query=f, context_domains=domains))
                continue
            why = Reason("turn", "every part decided on one embedding")
            t_i = time.perf_counter() - share / 1e3  # its share of the encode counts in its total
            parts = self._parts(
                q, priors[i], vecs[i], why, t_i, domains, own=texts[i] if given is None else ""
            )
            out.append(self._emit(parts, share))
        return out

    async def aturn(self, query: str, **kw: Any) -> Turn:
        """:meth:`turn` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.turn, None, query, **kw)

    async def aturn_batch(self, queries: Sequence[str], **kw: Any) -> list[Turn]:
        """:meth:`turn_batch` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.turn_batch, None, queries, **kw)

    def _emit(self, t: Turn, encode_ms: float = 0.0) -> Turn:
        return emit(self.metrics, trace("turn", t if not encode_ms else _with_encode(t, encode_ms)))

    def _parts(
        self,
        query: str,
        previous: _Prior,
        vec: Any,
        why: Reason,
        t0: float,
        given: tuple[str, ...] = (),
        own: str = "",
    ) -> Turn:
        """Each part's own call with ``vec`` (None: each encodes, or degrades, on its own) and the
        caller's active domains ``given``; ``previous``: what the turn follows (:class:`_Prior`). ``own``: the
        text the turn encoded into ``vec``, which the route decision reads only when the router would
        read the query so too (not a long query, whose end it also reads, nor one whose typos it
        repairs): its result is then ``Router.route``'s."""
        r = self.router
        ctx = self.context.detect(query, vector=vec) if self.context is not None else None
        read_alone = bool(own) and r is not None and r.route_specs and _read_otherwise(r, query, own)
        decision = (
            r.route(
                previous.answer if previous.clarify is not None else query,
                previous=previous.route,
                previous_query=previous.query,
                clarify=previous.clarify,
                vector=None if read_alone else vec,
                context_domains=given,
            )
            if r is not None and r.route_specs
            else None
        )
        # The belt repairs the typos of its tools' words (its own reading, encoded by tools()).
        belt_alone = (
            r is not None and bool(own) and r.tool_specs and r.tool_catalog.read_query(query)[0] != own
        )
        belt = (
            self._belt(query, None if belt_alone else vec, given) if r is not None and r.tool_specs else None
        )
        if why.code == "turn":
            route_how = (
                "" if not read_alone else "by its end too" if tail_of(query) else "with its typos repaired"
            )
            why = _otherwise(why, route_how, decision, belt_alone)
        labels = ctx.layers if ctx is not None else {}
        domain, intent = (labels[n].label if n in labels else None for n in ("domain", "intent"))
        kr = self.knowledge
        domains = given or ((domain,) if domain is not None else ())
        knowledge = (
            None
            if kr is None
            else kr.collections(
                query,
                context_domains=domains,
                intent=intent,
                vector=vec,
                previous_query=previous.query if previous.clarify is None else None,
            )
        )
        timings = TurnTimings(total=(time.perf_counter() - t0) * 1e3)
        return Turn(query, ctx, decision, belt, knowledge, why, timings)

    def _belt(self, query: str, vec: Any, domains: tuple[str, ...] = ()) -> ToolBelt:
        """``Router.tools`` with ``vec`` (when the encoder fails there, the core tools with an
        ``encoder_error`` alert and reason ``error``, as a route decision degrades)."""
        assert self.router is not None  # a belt is asked for only with a router
        return self.router.tools(query, vector=vec, context_domains=domains)


class _Prior(NamedTuple):
    """What a turn follows: the previous turn's ``route`` and text (``query``), the ``clarify`` decision
    it answers, and the turn's own text, its ``answer`` then."""

    route: str | None
    query: str | None
    clarify: Decision | None
    answer: str


def _read_otherwise(router: Any, query: str, text: str) -> bool:
    """Whether ``router`` reads ``query`` otherwise than the turn's one encode of it, ``text``: a long
    query (its end too), or one whose typos it repairs (the speller remembers its words' readings)."""
    if tail_of(query) is not None:
        return True
    table = getattr(router, "route_table", None)  # a Router's (a stand-in may have none)
    return table is not None and table.repairs(text)


def _otherwise(why: Reason, route_how: str, decision: Decision | None, belt_alone: bool) -> Reason:
    """``why`` with the parts that read the query otherwise than the turn's one embedding (``route_how``:
    how the route read it alone, if it did)."""
    said = [
        f"the route read it {route_how}" if route_how else "",
        "the route read it after the previous turn"
        if decision is not None and decision.reason is not None and decision.reason.code == "follow_up"
        else "",
        "the belt read it with its typos repaired" if belt_alone else "",
    ]
    said = [s for s in said if s]
    return Reason(why.code, f"{why.message}; {', '.join(said)}") if said else why


def _with_encode(t: Turn, encode_ms: float) -> Turn:
    return replace(t, timings=replace(t.timings, encode=encode_ms))
