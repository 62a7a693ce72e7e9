"""Knowledge-source routing (issue 19): which collections a retriever should search.

Collections are routes (descriptions and exemplars) of a :class:`~routecore.routers.router.Router`;
a :class:`KnowledgeRouter` returns the best ``top_k`` of them (default 2), each with a
priority (its probability, renormalised over the chosen ones) that a caller passes to
its own retrievers. routecore does not retrieve documents.

- A ``(domain, intent) → collections`` map wins when the caller's domain and intent
  match an entry.
- **The LLM decides when it answers:** when the collection router asks its LLM (a
  query it is unsure of, under ``low_action: llm``) and the LLM names one of the
  collections, that collection comes first (source ``llm``), followed by the next best
  by probability; the gate does not apply. The priorities are the probabilities of the
  chosen collections, sorted, so the LLM's collection takes the highest one.
- **Confidence gate:** when the best collection's probability is under the gate, or
  the query is out of scope, the configured fallback (every collection by default) is
  returned instead, and the result says so. The gate is the collection table's
  calibrated ``medium`` cut (the probability from which routed decisions are right on
  ``Policy.route_precision`` of held-out exemplars; 0.5 when a config is too small to
  hold any out) unless a number is given.
- **An LLM answer that names no collection** (it failed, answered an unknown name or
  asked to clarify) is not used: the selection is the one without an LLM (the best
  collections above the gate, else the fallback), and ``reason`` says why the LLM's
  answer was set aside.

Config: a routecore config whose ``routes`` are the collections, with a
``knowledge:`` section (``top_k``, ``gate``, ``fallback``, ``map``).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from routecore.decide.arguments import context_domains_arg, part_of, per_query, query_vectors
from routecore.decision import Alert, Decision, JsonResult, Reason, emit, plain
from routecore.errors import ConfigError, InvalidArgumentError

if TYPE_CHECKING:
    from routecore.routers.router import Router

#: The reason codes of a :class:`KnowledgeSelection`.
KNOWLEDGE_REASONS: dict[str, str] = {
    "map": "a (domain, intent) entry of the map chose the collections",
    "ranked": "the best collections by probability, the best above the gate",
    "llm": "the collection the LLM named comes first, then the next best by probability",
    "under_gate": "fallback: the best collection's probability is under the gate",
    "out_of_scope": "fallback: the collection router found the query out of scope",
    "empty_query": "fallback: nothing to read (empty, blank, or only lone surrogates)",
    "error": "fallback: the encoder failed and no LLM named a collection",
}


@dataclass(frozen=True)
class KnowledgeSelection(JsonResult):
    """The collections to search, best first, with their priorities (summing to 1).

    ``source``: ``router`` (the best collections), ``llm`` (the collection the LLM
    named, first), ``map`` (a ``(domain, intent)`` entry) or ``fallback`` (under the
    gate, out of scope, an empty query or a failed encoder). ``reason``: a code of
    :data:`KNOWLEDGE_REASONS`; its message also says when an LLM answer was set aside
    (see the module docs)."""

    collections: tuple[tuple[str, float], ...]
    source: str
    reason: Reason | None = None
    confidence: float = 0.0
    gate: float = 0.0
    query: str = ""
    #: The alerts of the decision it comes from (``invalid_text``, ``spelling``, ``language``...).
    alerts: tuple[Alert, ...] = ()

    @property
    def names(self) -> list[str]:
        """The collections' names, best first."""
        return [c for c, _ in self.collections]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (collections as ``[name, priority]`` pairs)."""
        d: dict[str, Any] = plain(self)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "KnowledgeSelection":
        """The selection :meth:`to_dict` wrote.

        Raises:
            InvalidArgumentError: not a mapping, or a field of the wrong shape (named).
        """
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(f"a knowledge selection must be a mapping, got {type(d).__name__}")
        try:
            kw = dict(d)
            kw["collections"] = tuple((str(c), float(p)) for c, p in kw["collections"])
            if kw.get("reason") is not None:
                kw["reason"] = Reason(**kw["reason"])
            kw["alerts"] = tuple(Alert(**a) for a in kw.get("alerts", ()))
            return cls(**kw)
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidArgumentError(f"knowledge selection: {type(e).__name__}: {e}") from None


@dataclass(frozen=True)
class KnowledgeConfig:
    """The ``knowledge:`` section: how many collections, the gate (None: calibrated),
    the fallback (``all`` or a list of collections) and the ``(domain, intent)`` map."""

    top_k: int = 2
    gate: float | None = None
    fallback: str | tuple[str, ...] = "all"
    map: tuple[tuple[str | None, str | None, tuple[str, ...]], ...] = ()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, where: str = "knowledge") -> "KnowledgeConfig":
        if d is None:
            return cls()
        from routecore.config import config_schema

        k = config_schema.convert(d, config_schema.Knowledge, where)
        fallback = k.fallback if isinstance(k.fallback, str) else tuple(k.fallback)
        return cls(
            k.top_k, k.gate, fallback, tuple((e.domain, e.intent, tuple(e.collections)) for e in k.map)
        )


class KnowledgeRouter:
    """The best collections for a query (see the module docs); ``metrics``: a sink called with
    every :class:`KnowledgeSelection` (as ``Router(metrics=)``).

    Calls: :meth:`collections`, :meth:`collections_batch`, :meth:`acollections`,
    :meth:`acollections_batch` (``select`` and ``select_many`` are deprecated aliases).

    Raises:
        ConfigError: a map entry, the fallback or ``top_k`` names unknown collections or is out of range.
    """

    def __init__(self, router: Router, config: KnowledgeConfig = KnowledgeConfig(), *, metrics: Any = None):
        part_of(router, "a knowledge router's router", "a Router", "route", "encoder", "route_specs")
        if not isinstance(config, KnowledgeConfig):
            raise ConfigError(f"knowledge: config must be a KnowledgeConfig, got {type(config).__name__}")
        names = [r.name for r in router.route_specs]
        if not names:
            raise ConfigError("a knowledge router needs collections (routes)")
        if not 1 <= config.top_k <= len(names):
            raise ConfigError(
                f"knowledge: top_k must be between 1 and the {len(names)} collections, got {config.top_k}"
            )
        known = set(names)
        listed = [c for _, _, cs in config.map for c in cs] + (
            [] if config.fallback == "all" else list(config.fallback)
        )
        unknown = sorted(set(listed) - known)
        if unknown:
            raise ConfigError(f"knowledge: unknown collections {unknown}; known: {sorted(known)}")
        if any(d is None and i is None for d, i, _ in config.map):
            raise ConfigError("knowledge: a map entry needs a domain, an intent or both")
        if config.fallback != "all" and not config.fallback:
            raise ConfigError("knowledge: the fallback must be 'all' or name at least one collection")
        self.router, self.config, self.names = router, config, names
        #: Called with every selection (a :class:`routecore.routers.routing_metrics.RoutingMetrics`, or
        #: any callable).
        self.metrics = metrics

    @classmethod
    def from_config(cls, path: str | os.PathLike[str], **kw: Any) -> "KnowledgeRouter":
        """Collections from a config's ``routes`` and its ``knowledge:`` section; ``metrics=`` is this
        router's sink, the other ``kw`` go to the Router."""
        from routecore.config.specs import read_config_file
        from routecore.routers.router import Router

        data = read_config_file(path)
        metrics = kw.pop("metrics", None)
        return cls(
            Router.from_config(path, **kw),
            KnowledgeConfig.from_dict(data.get("knowledge"), f"{path}: knowledge"),
            metrics=metrics,
        )

    @property
    def gate(self) -> float:
        """The confidence gate: the configured number, else the calibrated ``medium`` cut."""
        if self.config.gate is not None:
            return self.config.gate
        return float(self.router.policy.medium)

    def collections(
        self,
        query: str,
        *,
        context_domains: Sequence[str] = (),
        intent: str | None = None,
        vector: Any = None,
        domain: str | None = None,
        previous_query: str | None = None,
    ) -> KnowledgeSelection:
        """The collections for ``query``; a map entry matches when its domain is one of
        ``context_domains`` (the caller's active domains, as ``Router.route`` takes them) and its
        intent is ``intent`` (from the caller's context). Never raises for any string (a non-str is
        an :class:`InvalidArgumentError`): an empty query or a failed encoder without an LLM answer
        gives the fallback, with reason ``empty_query`` or ``error``. ``vector``: the query's
        embedding, as ``Router.route(vector=)``; ``previous_query``: the previous turn's text, as
        ``Router.route`` reads it (a follow-up). ``domain`` (one name) is deprecated."""
        hit = self._mapped(query, context_domains_arg(context_domains, domain, "domain"), intent)
        if hit is None:  # only the arguments given: a wrapped router may take no other
            kw: dict[str, Any] = {"vector": vector} if vector is not None else {}
            if previous_query is not None:
                kw["previous_query"] = previous_query
            hit = self._decided(query, self.router.route(query, **kw))
        return emit(self.metrics, hit)

    def collections_batch(
        self,
        queries: Sequence[str],
        *,
        context_domains: Sequence[str] = (),
        intent: str | None = None,
        vectors: Any = None,
        domain: str | None = None,
        previous_query: str | Sequence[str | None] | None = None,
    ) -> list[KnowledgeSelection]:
        """:meth:`collections` of each query (one ``context_domains`` and ``intent`` for all); the queries
        the map does not decide are routed in one batched encoder call. ``vectors``: the queries'
        embeddings, one row per query, as ``Router.route_batch(vectors=)``; ``previous_query``: one for
        all, or one per query.

        Raises:
            InvalidArgumentError: not a list of queries.
            DimensionMismatchError: ``vectors`` not one row of the encoder's width per query.
        """
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise InvalidArgumentError("queries must be a list of strings; use collections() for one query")
        if vectors is not None:  # checked as every router checks them (rows, width, finite)
            vectors = query_vectors(vectors, self.router.encoder.dim, len(queries))
        domains = context_domains_arg(context_domains, domain, "domain")
        follows = (
            per_query(previous_query, len(queries), "previous_query") if previous_query is not None else None
        )
        hits = [self._mapped(q, domains, intent) for q in queries]
        todo = [i for i, h in enumerate(hits) if h is None]
        sub = None
        if vectors is not None and todo:
            sub = vectors[todo]
        asked = [queries[i] for i in todo]
        decided: list[Decision] = []
        if asked:  # vectors= and previous_query= only when given: a wrapped router may refuse them
            kw: dict[str, Any] = {"vectors": sub} if sub is not None else {}
            if follows is not None:
                kw["previous_query"] = [follows[i] for i in todo]
            decided = self.router.route_batch(asked, **kw)
        decisions = iter(decided)
        return [
            emit(self.metrics, h if h is not None else self._decided(q, next(decisions)))
            for q, h in zip(queries, hits)
        ]

    async def acollections(self, query: str, **kw: Any) -> KnowledgeSelection:
        """:meth:`collections` off the event loop (the native work releases the GIL)."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.collections, None, query, **kw)

    async def acollections_batch(self, queries: Sequence[str], **kw: Any) -> list[KnowledgeSelection]:
        """:meth:`collections_batch` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.collections_batch, None, queries, **kw)

    def select(
        self, query: str, *, domain: str | None = None, intent: str | None = None
    ) -> KnowledgeSelection:
        """Deprecated: :meth:`collections`."""
        warnings.warn(
            "KnowledgeRouter.select is deprecated: use collections()", DeprecationWarning, stacklevel=2
        )
        return self.collections(query, context_domains=(domain,) if domain else (), intent=intent)

    def select_many(self, queries: Sequence[str], **kw: Any) -> list[KnowledgeSelection]:
        """Deprecated: :meth:`collections_batch` (``kw`` as there)."""
        warnings.warn(
            "KnowledgeRouter.select_many is deprecated: use collections_batch()",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.collections_batch(queries, **kw)

    def _mapped(self, query: Any, domains: Sequence[str], intent: str | None) -> KnowledgeSelection | None:
        """The map's selection when an entry matches one of ``domains`` and ``intent``, else None."""
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a str, got {type(query).__name__}")
        for d, i, cs in self.config.map:
            matches = (d is None or d in domains) and (i is None or i == intent)
            if matches and (d is not None or i is not None):
                shares = tuple((c, 1.0 / len(cs)) for c in cs)
                return KnowledgeSelection(shares, "map", Reason("map", f"map entry ({d}, {i})"), query=query)
        return None

    def _decided(self, query: str, dec: Any) -> KnowledgeSelection:
        """:meth:`_selection` with the decision's alerts."""
        return replace(self._selection(query, dec), alerts=tuple(dec.alerts))

    def _selection(self, query: str, dec: Any) -> KnowledgeSelection:
        """The selection the collection router's decision ``dec`` gives (module docs)."""
        probs = dict(dec.probabilities)
        ranked = sorted(self.names, key=lambda n: -probs.get(n, 0.0))
        conf, gate = float(dec.confidence), self.gate
        set_aside = _llm_set_aside(dec, self.names)
        if dec.used_llm and not set_aside:  # the LLM named a collection: it decides
            chosen = [dec.route] + [n for n in ranked if n != dec.route][: self.config.top_k - 1]
            weights = sorted((probs.get(n, 0.0) for n in chosen), reverse=True)
            total = sum(weights)
            by_llm = Reason(
                "llm", dec.reason.message if dec.reason is not None else f"the LLM chose {dec.route}"
            )
            if total <= 0.0:  # no probabilities (the encoder failed): the LLM's collection alone
                return KnowledgeSelection(((dec.route, 1.0),), "llm", by_llm, conf, gate, query)
            shares = tuple((n, w / total) for n, w in zip(chosen, weights))
            return KnowledgeSelection(shares, "llm", by_llm, conf, gate, query)
        note = f"the LLM's answer was not used: {set_aside}" if set_aside else ""
        code = dec.reason.code if dec.reason is not None else ""
        if dec.action in ("none", "error") or conf < gate:
            if dec.action == "error":
                code = "error"
                why = f"no decision ({dec.reason.message if dec.reason is not None else dec.fallback})"
            elif any(a.kind == "encoder_error" for a in dec.alerts):  # the LLM asked to clarify
                code, why = "error", "no decision (the encoder failed and the LLM named no collection)"
            elif code == "empty_query":
                why = "the query is empty or blank"
            elif dec.action == "none":
                code, why = "out_of_scope", "out of scope"
            else:
                code, why = (
                    "under_gate",
                    f"best collection's probability {conf:.3f} under the gate {gate:.3f}",
                )
            fb = self.names if self.config.fallback == "all" else list(self.config.fallback)
            reason = Reason(code, f"{note}; {why}" if note else why)
            return KnowledgeSelection(
                tuple((c, 1.0 / len(fb)) for c in fb), "fallback", reason, conf, gate, query
            )
        best = ranked[: self.config.top_k]
        total = sum(probs.get(n, 0.0) for n in best) or 1.0
        shares = tuple((n, probs.get(n, 0.0) / total) for n in best)
        msg = f"{best[0]} {probs.get(best[0], 0.0):.3f} >= the gate {gate:.3f}"
        return KnowledgeSelection(
            shares, "router", Reason("ranked", f"{note}; {msg}" if note else msg), conf, gate, query
        )


def _llm_set_aside(dec: Any, names: Sequence[str]) -> str:
    """Why the decision's LLM answer names no collection ("" when it names one, or no LLM was asked):
    the LLM failed or answered an unknown name (the router then decided without it), asked to
    clarify, or (a router that does not check its LLM) routed to a name that is not a collection."""
    if not dec.used_llm:
        code = dec.reason.code if dec.reason is not None else ""
        return str(dec.fallback or "the LLM failed") if code == "llm_failed" else ""
    if dec.action != "route":
        return "the LLM named no collection (it asked to clarify)"
    if dec.route not in names:
        return f"the LLM answered an unknown collection {dec.route!r}"
    return ""
