"""A cascade's tool belts (issue 38): the strong router's belt, or, when a ``shortlist`` size is
given, the fast router (the static table) shortlists the best ``shortlist`` tools and the strong
router (the transformer) picks the belt among them. A mixin of :class:`~routecore.routers.cascade.Cascade`.

The strong router's belt is :meth:`Router.tools` restricted to the shortlist (its ``candidates=``):
the transformer's own scores, floor, ``top_k`` / threshold, collision alert and "no tool fits"
(``no_tool``) over those tools only. The shortlist (:mod:`routecore.tools.shortlist`) is the fast
router's best tools by its final scores with no floor; core tools and the discovery tools of the
shortlisted tools' plugins are passed on beside it. Every belt carries a ``cascade`` alert: which
tier gave the candidates (``candidate_tier``: ``static`` / ``transformer``, None when none were
needed) and which re-scored them (``encoder_tier``), the shortlist and its size. The fast router's
time is added to the belt's timings. A failed fast encoder leaves the strong router the whole
catalog; a blank query (or a router with no tools) gets the strong router's belt unchanged, with the
alert. No shortlist is the default: on MetaTool every shortlist size lost recall against the strong
router alone and saved no time (``benches/static_tools.py``, docs/static.md); :data:`SHORTLIST_DEV`
is the size that lost least on its dev half.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

from routecore.decide.arguments import context_domains_arg
from routecore.decide.conversation import routing_text
from routecore.decision import Alert, Decision, Timings, ToolBelt
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.context_result import context_search
from routecore.routers.routing_metrics import emit
from routecore.tools.shortlist import Shortlist, best_tools, check_size

if TYPE_CHECKING:
    from routecore.routers.router import Router

#: Why a cascade does not learn (Cascade.learn, serve's fast tier).
NO_LEARNING = (
    "a cascade does not learn: an exemplar learned by one of its routers would leave the other "
    "deciding without it"
)
#: The shortlist size that lost least recall on MetaTool's dev half (docs/static.md); not a default.
SHORTLIST_DEV = 150


class CascadeTools:
    """The cascade's tool calls: :meth:`tools`, :meth:`tools_batch`, :meth:`atools`,
    :meth:`atools_batch`, as :class:`Router`'s, with the belt's candidates from the fast router."""

    fast: Router
    strong: Router
    metrics: Any
    #: The shortlist's size when a call gives none (None: no shortlist, the strong router's belt).
    shortlist: int | None

    def tools(
        self,
        query: str,
        *,
        shortlist: int | None = None,
        context_domains: Sequence[str] = (),
        top_k: int | None = None,
        threshold: float | None = None,
        candidates: Sequence[str] | None = None,
        context: Any = None,
        vector: Any = None,
        context_domain: str | None = None,
    ) -> ToolBelt:
        """The strong router's belt among the fast router's best ``shortlist`` tools (default
        :attr:`shortlist`; None: no shortlist, the strong router's belt); the other arguments as in
        :meth:`Router.tools` (``candidates``: the shortlist is drawn from those tools only).
        ``vector=`` is not accepted: each router embeds with its own encoder. Never raises for any
        string (as :meth:`Router.tools`).

        Raises:
            InvalidArgumentError: ``vector`` given.
            InvalidArgumentError: a query that is not a string, a bad ``shortlist``, ``top_k``,
                ``threshold`` or ``candidates``.
        """
        n = self._size(shortlist, vector)
        domains = context_domains_arg(context_domains, context_domain, "context_domain")
        if context is not None:
            query, domains = context_search(context, domains)
        kw = {"context_domains": domains, "top_k": top_k, "threshold": threshold}
        if n is None or not isinstance(query, str) or not self._listed(query):
            return emit(self.metrics, self._unlisted(query, n, candidates, kw))
        s = best_tools(self.fast.tool_catalog, query, n, domains, candidates)
        return emit(self.metrics, _rescored(self.fast, self.strong, query, s, n, candidates, kw))

    def tools_batch(
        self,
        queries: Sequence[str],
        *,
        shortlist: int | None = None,
        context_domains: Sequence[str] = (),
        top_k: int | None = None,
        threshold: float | None = None,
        candidates: Sequence[str] | None = None,
        vectors: Any = None,
        context_domain: str | None = None,
    ) -> list[ToolBelt]:
        """:meth:`tools` of each query, each router's encoder called once for the batch (the
        queries with a shortlist: not blank, tools to list)."""
        n = self._size(shortlist, vectors)
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise InvalidArgumentError("queries must be a list of strings; use tools() for one query")
        queries = list(queries)
        if not all(isinstance(q, str) for q in queries):
            raise InvalidArgumentError("queries must be a list of strings")
        domains = context_domains_arg(context_domains, context_domain, "context_domain")
        kw = {"context_domains": domains, "top_k": top_k, "threshold": threshold}
        if n is None:  # no shortlist: the strong router's batch
            belts = self.strong.tools_batch(
                queries,
                context_domains=domains,
                top_k=top_k,
                threshold=threshold,
                candidates=candidates,
            )
            return [emit(self.metrics, _with_alert(b, _no_shortlist(self.strong))) for b in belts]
        listed = [i for i, q in enumerate(queries) if self._listed(q)]
        # each router encodes the query as its own catalog reads it (its typos repaired by its own words)
        fast = _encoded(self.fast, [self.fast.tool_catalog.read_query(queries[i])[0] for i in listed])
        strong = _encoded(self.strong, [self.strong.tool_catalog.read_query(queries[i])[0] for i in listed])
        out: list[ToolBelt | None] = [None] * len(queries)
        for j, i in enumerate(listed):
            # a failed batch encode: each query tries alone, and best_tools reports its failure
            one = None if fast is None else fast[j]
            s = best_tools(self.fast.tool_catalog, queries[i], n, domains, candidates, encoded=one)
            out[i] = _rescored(
                self.fast, self.strong, queries[i], s, n, candidates, kw, strong[j] if strong else None
            )
        belts = [b if b is not None else self._unlisted(q, n, candidates, kw) for q, b in zip(queries, out)]
        return [emit(self.metrics, b) for b in belts]

    async def atools(self, query: str, **kw: Any) -> ToolBelt:
        """:meth:`tools` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.tools, None, query, **kw)

    async def atools_batch(self, queries: Sequence[str], **kw: Any) -> list[ToolBelt]:
        """:meth:`tools_batch` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.tools_batch, None, queries, **kw)

    # -- what the cascade's belts come from: the strong router ---------------------------------
    @property
    def llm(self) -> Any:
        """The LLM fallback: the strong router's (the fast router asks none)."""
        return self.strong.llm

    @property
    def memory(self) -> Any:
        """The lesson store of the cascade's belts: the strong router's."""
        return self.strong.memory

    def tool_session(self, query: str, **kw: Any) -> Any:
        """:meth:`Router.tool_session` of the strong router, whose belts the cascade offers."""
        return self.strong.tool_session(query, **kw)

    def record_lesson(self, query: str, tool: str, *, use: bool, context: str = "") -> int:
        """:meth:`Router.record_lesson` in the strong router's lesson store, which its belts read."""
        return self.strong.record_lesson(query, tool, use=use, context=context)

    def learn(self, query: str, route: str, **kw: Any) -> Any:
        """Refused: an exemplar learned by one router would leave the other deciding without it.

        Raises:
            ConfigError: always; learn through ``cascade.fast`` and ``cascade.strong`` both, or route with one
                router.
        """
        raise ConfigError(
            f"{NO_LEARNING}; call learn() on cascade.fast and cascade.strong, or route with one router"
        )

    def _size(self, n: int | None, vector: Any) -> int | None:
        if vector is not None:
            raise InvalidArgumentError(
                "a cascade embeds each query with each router's own encoder: vectors are not accepted"
            )
        n = self.shortlist if n is None else n
        return None if n is None else check_size(n)

    def _listed(self, query: str) -> bool:
        """Whether ``query`` gets a shortlist: the routers have tools and it has text to embed."""
        return bool(self.fast.tool_catalog.specs) and bool(routing_text(query)[0])

    def _unlisted(
        self, query: Any, n: int | None, candidates: Sequence[str] | None, kw: dict[str, Any]
    ) -> ToolBelt:
        """The strong router's belt as :meth:`Router.tools` gives it (it raises for a non-string),
        with an alert that no shortlist was drawn."""
        belt = self.strong.tools(query, candidates=candidates, **kw)
        if n is None:
            return _with_alert(belt, _no_shortlist(self.strong))
        why = "no tools" if not self.fast.tool_catalog.specs else "the query is empty or blank"
        alert = _alert(f"{why}: no shortlist, the strong router's belt", None, self.strong, (), n)
        return _with_alert(belt, alert)


def _no_shortlist(strong: Router) -> Alert:
    why = "no shortlist asked (the default: measured to lose recall): the strong router's belt"
    return _alert(why, tier_of(strong), strong, (), None)


def _with_alert(belt: ToolBelt, alert: Alert) -> ToolBelt:
    return replace(belt, alerts=belt.alerts + (alert,))


def _encoded(router: Router, texts: list[str]) -> list[tuple[Any, float, float]] | None:
    """Each text's (embedding, tokenize ms, encoder ms) from one encoder call, its time shared
    evenly; None when the encoder fails (each query then tries alone and degrades alone)."""
    if not texts:
        return []
    t0 = time.perf_counter()
    try:
        enc = router.encoder.encode_with_stats(texts)
    except Exception:  # noqa: BLE001 - each belt degrades as tools() does
        return None
    share, tok = (time.perf_counter() - t0) * 1e3 / len(texts), enc.tokenize_ms / len(texts)
    return [(enc.embeddings[i], tok, share) for i in range(len(texts))]


def _rescored(
    fast: Router,
    strong: Router,
    query: str,
    s: Shortlist,
    n: int,
    candidates: Sequence[str] | None,
    kw: dict[str, Any],
    encoded: tuple[Any, float, float] | None = None,
) -> ToolBelt:
    """The strong router's belt among ``s``'s candidates (the whole catalog, or ``candidates``,
    when the fast encoder failed), with the fast router's time and the ``cascade`` alert."""
    listed: tuple[str, ...] = ()
    if s.error is not None:
        why = f"the fast encoder failed ({s.error}): the strong router's belt over every candidate"
        tier, given = tier_of(strong), candidates
    else:
        why = f"the fast router shortlisted {len(s.names)} tool(s); the strong router picked the belt"
        tier, listed, given = tier_of(fast), s.names, list(s.candidates)
    vector = None if encoded is None else encoded[0]
    belt = strong.tools(query, candidates=given, vector=vector, **kw)
    t, f = belt.timings, s.timings
    tok, enc = (0.0, 0.0) if encoded is None else (encoded[1], encoded[2] - encoded[1])
    timings = Timings(
        t.tokenize + f.tokenize + tok,
        t.encode + f.encode + enc,
        t.score + f.score,
        t.policy + f.policy,
        t.llm,
        t.total + f.total + tok + enc,
    )
    alert = _alert(why, tier, strong, listed, n)
    return replace(belt, alerts=belt.alerts + (alert,), timings=timings)


def _alert(
    why: str, candidate_tier: str | None, strong: Router, listed: Sequence[str], n: int | None
) -> Alert:
    more = {"candidate_tier": candidate_tier, "shortlist": list(listed), "shortlist_size": n}
    return cascade_alert(why, Served("strong", tier_of(strong)), more)


#: The tier of a cascade router's encoder.
EncoderTier = Literal["static", "transformer"]


@dataclass(frozen=True)
class Served:
    """Which of a cascade's two routers served a decision or a tool belt (``by``), and the tier of
    that router's encoder."""

    by: Literal["fast", "strong"]
    encoder_tier: EncoderTier


def cascade_alert(why: str, served_by: Served, more: Mapping[str, Any]) -> Alert:
    """The ``cascade`` alert: ``why`` as its message; its data, what served the result and ``more``."""
    return Alert("cascade", why, {"served_by": served_by.by, "encoder_tier": served_by.encoder_tier, **more})


def served(result: Decision | ToolBelt) -> Served | None:
    """What served ``result``, read from its ``cascade`` alert; None for a result no cascade gave."""
    for a in result.alerts:
        by, tier = a.data.get("served_by"), a.data.get("encoder_tier")
        if a.kind == "cascade" and by in ("fast", "strong") and tier in ("static", "transformer"):
            return Served(by, tier)
    return None


def tier_of(router: Router) -> EncoderTier:
    """``static`` when ``router`` embeds with a static table, else ``transformer``."""
    from routecore.core.static_encoder import StaticEncoder

    return "static" if isinstance(router.encoder, StaticEncoder) else "transformer"
