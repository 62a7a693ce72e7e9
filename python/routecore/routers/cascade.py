"""An encoder cascade: a fast encoder decides first, a stronger one only when it must (issue 19).

Two :class:`~routecore.routers.router.Router` objects over the same routes, each with its
own encoder, tables and calibration (zero-label or fitted, separately). A query is
encoded and scored by the fast router; when its decision routes at the high tier
(right on 95 % of held-out exemplars by the fast router's own calibration), that is
the answer. Otherwise (medium or low tier, clarification, out of scope) the strong
router encodes the query and decides. The fast router has no LLM fallback, so an
escalated query reaches the LLM (if any) only through the strong router.

Every decision carries a ``cascade`` alert saying which encoder served it (``served_by``: fast or
strong; ``encoder_tier``: ``static`` for a static table, else ``transformer``), and its timings
include the fast router's time when it was escalated.

The static tier (issue 38, docs/static.md): :meth:`Cascade.static` puts a static table distilled
from the transformer (``routecore models distill``) in front of it; the table's router has its own
zero-label calibration and decides when that says high tier. Tool belts (:mod:`.cascade_tools`):
the strong router's belt; with a ``shortlist`` size, the fast router shortlists tools and the strong
router picks the belt among them (measured to lose recall on MetaTool: not the default).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Mapping, Sequence

from routecore.decide.arguments import part_of, per_query
from routecore.decision import Alert, Decision
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.cascade_tools import CascadeTools, EncoderTier, Served, cascade_alert, tier_of
from routecore.routers.routing_metrics import emit
from routecore.tools.shortlist import check_size

if TYPE_CHECKING:
    from routecore.routers.router import Router


class Cascade(CascadeTools):
    """``fast`` then ``strong`` (see the module docs); :attr:`served` counts the decisions
    each one gave (under a lock); ``metrics``: a sink called with every decision and tool belt;
    ``shortlist``: the tools the fast router shortlists for a belt (:mod:`.cascade_tools`; None, the
    default: no shortlist, the strong router's belt);
    ``combine``: an escalated query is decided on both routers' probabilities (their normalised
    geometric mean: :meth:`Router.route`'s ``peer``) against the cuts measured for the pair, not on the
    strong router's alone. ``None`` (the default): on when routecore has those cuts for the two models
    and the config's languages (:mod:`routecore.calibrate.peer_cut`: MiniLM in front of the bundled e5,
    English configs on e5's prior; BENCHMARKS.md §5), off otherwise (a static table in front, a French
    config, a config's own cuts); ``True`` combines with the strong router's own cuts where there are
    none for the pair. :attr:`combine` says which was chosen.

    Calls: :meth:`route`, :meth:`route_batch`, :meth:`aroute`, :meth:`aroute_batch`; tool belts:
    :meth:`tools`, :meth:`tools_batch`, :meth:`atools`, :meth:`atools_batch`.

    Raises:
        ConfigError: the routers' routes or tools differ, neither has any, or ``fast`` has an
            LLM fallback.
        InvalidArgumentError: a bad ``shortlist``.
    """

    def __init__(
        self,
        fast: Router,
        strong: Router,
        *,
        metrics: Any = None,
        shortlist: int | None = None,
        combine: bool | None = None,
    ):
        for name, r in (("fast", fast), ("strong", strong)):
            part_of(r, f"a cascade's {name} router", "a Router", "route", "route_specs", "tool_catalog")
        fn, sn = [r.name for r in fast.route_specs], [r.name for r in strong.route_specs]
        if sorted(fn) != sorted(sn):
            raise ConfigError(
                f"a cascade needs the same routes in both routers: {sorted(set(fn) ^ set(sn))} differ"
            )
        ft, st = list(fast.tool_catalog.by_name), list(strong.tool_catalog.by_name)
        if sorted(ft) != sorted(st):
            raise ConfigError(
                f"a cascade needs the same tools in both routers: {sorted(set(ft) ^ set(st))[:5]} differ"
            )
        if not fn and not ft:
            raise ConfigError("a cascade needs routes or tools")
        if fast.route_table.llm is not None:
            raise ConfigError(
                "the fast router of a cascade must have no LLM fallback: give it to the strong router"
            )
        self.fast, self.strong = fast, strong
        self.shortlist = None if shortlist is None else check_size(shortlist)
        if combine is not None and not isinstance(combine, bool):
            raise InvalidArgumentError(
                f"combine must be True, False or None (where measured), got {combine!r}"
            )
        #: Whether an escalated query is decided on both routers' probabilities.
        self.combine: bool = (
            combine
            if combine is not None
            else strong.route_table.peer_cut(self._fast_model, strong.policy) is not None
        )
        self._lock = threading.Lock()
        self._served = {"fast": 0, "strong": 0}
        #: Called with every Decision the cascade returns (a
        #: :class:`routecore.routers.routing_metrics.RoutingMetrics`, or any callable); each router
        #: still calls its own ``metrics``.
        self.metrics = metrics

    @classmethod
    def from_config(
        cls, path: Any, fast_model: str | None, strong_model: str | None = None, **kw: Any
    ) -> "Cascade":
        """Both routers from one config file: ``fast_model`` and ``strong_model`` (None: the
        bundled default) as in ``Encoder.load``; ``metrics=``, ``shortlist=`` and ``combine=`` are the
        cascade's (see the class), the other ``kw`` go to both routers (``llm=`` to the strong one only)."""
        from routecore.core.encoder import Encoder
        from routecore.routers.router import Router

        metrics, shortlist = kw.pop("metrics", None), kw.pop("shortlist", None)
        combine = kw.pop("combine", None)
        fast = Router.from_config(
            path, encoder=Encoder.load(fast_model), **{k: v for k, v in kw.items() if k != "llm"}
        )
        fast.route_table.llm = None  # the config's llm: section serves the strong router only
        strong = Router.from_config(path, encoder=Encoder.load(strong_model), **kw)
        return cls(fast, strong, metrics=metrics, shortlist=shortlist, combine=combine)

    @classmethod
    def static(
        cls,
        path: Any,
        model: str | None = None,
        *,
        static_model: str | None = None,
        build: bool = False,
        **kw: Any,
    ) -> "Cascade":
        """The static tier in front of ``model`` (None: the bundled default): the fast router's
        encoder is ``static_model``, else ``<model>-static`` from the model cache, distilled there
        first (:func:`routecore.hub.distill.distill`, default settings) when ``build`` and it is missing;
        ``kw`` as in :meth:`from_config`.

        Raises:
            ModelError: no such static table (and not ``build``).
        """
        from routecore.hub import models

        if static_model is None:
            from routecore.hub.distill import static_name

            static_model = static_name(models.resolve(model))
            if build and not (models.home() / "models" / static_model).is_dir():
                from routecore.hub.distill import distill

                distill(model)
        return cls.from_config(path, fast_model=static_model, strong_model=model, **kw)

    @property
    def served(self) -> dict[str, int]:
        """How many decisions each router gave (a copy, read under the lock); set it to reset."""
        with self._lock:
            return dict(self._served)

    @served.setter
    def served(self, value: Mapping[str, int]) -> None:
        if not isinstance(value, Mapping):
            raise InvalidArgumentError(f"served: a mapping of 'fast' and 'strong' counts, got {value!r}")
        try:
            counts = {"fast": int(value.get("fast", 0)), "strong": int(value.get("strong", 0))}
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"served: counts must be integers, got {dict(value)!r}") from None
        with self._lock:
            self._served = counts

    @property
    def _fast_model(self) -> str:
        """The fast encoder's model id (the strong router's cuts for the pair are keyed by it)."""
        return str(getattr(self.fast.encoder, "model_id", ""))

    def _peer(self, fast: Decision | list[Decision]) -> dict[str, Any]:
        """The strong router's ``peer`` and ``peer_model`` for the fast router's decision(s) (one, or
        one per escalated query) when ``combine`` is on; nothing otherwise."""
        if not self.combine:
            return {}
        # A follow-up decision read the previous turn too: not the query the strong router reads.
        own = [None if _followed(d) else d for d in fast] if isinstance(fast, list) else fast
        if own is None or _followed(own):
            return {}
        return {"peer": own, "peer_model": self._fast_model}

    def _served_fast(self, served: list[Decision]) -> None:
        """With ``combine``, the fast router's own high-tier decisions count in the strong router's
        cut for the pair (:meth:`RouteTable.peer_served`): the product's routed decisions include them."""
        if self.combine:
            for d in served:
                self.strong.route_table.peer_served(self._fast_model, d.confidence)

    def _count(self, fast: int, strong: int) -> None:
        with self._lock:
            self._served["fast"] += fast
            self._served["strong"] += strong

    def route(self, query: str, **kw: Any) -> Decision:
        """The fast router's decision when it routes at the high tier, else the strong
        router's; ``kw`` as in :meth:`Router.route` (not ``vector=``: each router embeds
        with its own encoder; nor ``peer=`` / ``peer_model=``: the cascade sets them). Never
        raises for any string: each router degrades as :meth:`Router.route` does (a failed fast
        encoder escalates; a failed strong one gives its LLM's decision, else an ``error`` decision)."""
        _own_arguments(kw, "vector")
        d = self.fast.route(query, **kw)
        if _fast_enough(d):
            self._count(1, 0)
            self._served_fast([d])
            return emit(self.metrics, _by_fast(d, tier_of(self.fast)))
        s = self.strong.route(query, **kw, **self._peer(d))
        self._count(0, 1)
        return emit(self.metrics, _by_strong(d, s, tier_of(self.strong), self.combine))

    def route_batch(self, queries: Sequence[str], **kw: Any) -> list[Decision]:
        """:meth:`route` of each query: the fast router's batch, then one strong batch of the
        queries it did not route at the high tier; ``kw`` as in :meth:`Router.route_batch`
        (``previous`` and ``previous_query`` may be one per query; not ``vectors=``, ``peer=`` or
        ``peer_model=``)."""
        _own_arguments(kw, "vectors")
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise InvalidArgumentError("queries must be a list of strings; use route() for one query")
        queries = list(queries)
        for key in ("previous", "previous_query"):  # read twice below: a generator once, here
            if kw.get(key) is not None and not isinstance(kw[key], str):
                kw = {**kw, key: per_query(kw[key], len(queries), key)}
        fast = self.fast.route_batch(queries, **kw)
        up = [i for i, d in enumerate(fast) if not _fast_enough(d)]
        for key in ("previous", "previous_query"):
            each = kw.get(key)
            if each is not None and not isinstance(each, str):  # one per query: those of the escalated
                kw = {**kw, key: [each[i] for i in up]}
        escalated = set(up)
        peer = self._peer([fast[i] for i in up])
        strong = iter(self.strong.route_batch([queries[i] for i in up], **kw, **peer) if up else [])
        # After the strong batch: a large batch's fast decisions, read first, would skew its cut.
        self._served_fast([d for i, d in enumerate(fast) if i not in escalated])
        self._count(len(queries) - len(up), len(up))
        ft, st = tier_of(self.fast), tier_of(self.strong)
        return [
            emit(
                self.metrics,
                _by_strong(d, next(strong), st, self.combine) if i in escalated else _by_fast(d, ft),
            )
            for i, d in enumerate(fast)
        ]

    async def aroute(self, query: str, **kw: Any) -> Decision:
        """:meth:`route` off the event loop (an LLM is called from the worker thread)."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.route, None, query, **kw)

    async def aroute_batch(self, queries: Sequence[str], **kw: Any) -> list[Decision]:
        """:meth:`route_batch` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.route_batch, None, queries, **kw)

    @property
    def fast_share(self) -> float:
        """Share of the decisions so far that the fast router gave alone."""
        served = self.served
        n = served["fast"] + served["strong"]
        return served["fast"] / n if n else 0.0


def _fast_enough(d: Decision) -> bool:
    return d.action == "route" and d.tier == "high"


def _by_fast(d: Decision, tier: EncoderTier) -> Decision:
    return replace(d, alerts=d.alerts + (_served("fast", d, tier),))


def _by_strong(d: Decision, s: Decision, tier: EncoderTier, combined: bool = False) -> Decision:
    """The strong router's decision ``s``, with the fast one's (``d``) time added; ``combined``: ``s``
    read both routers' probabilities."""
    t, f = s.timings, d.timings
    timings = replace(
        t,
        tokenize=t.tokenize + f.tokenize,
        encode=t.encode + f.encode,
        score=t.score + f.score,
        policy=t.policy + f.policy,
        total=t.total + f.total,
    )
    return replace(
        s, alerts=s.alerts + (_served("strong", d, tier, s if combined else None),), timings=timings
    )


def _served(
    by: Literal["fast", "strong"],
    fast: Decision,
    tier: EncoderTier,
    combined: Decision | None = None,
) -> Alert:
    """The ``cascade`` alert; ``combined``: the strong router's decision, made on both routers'
    probabilities (its line names the fast router's and the combined probability of its route)."""
    why = (
        "the fast encoder routed at the high tier"
        if by == "fast"
        else (f"the fast encoder's decision was {fast.action} ({fast.tier} tier): the strong encoder decided")
    )
    best = combined.route or combined.hint if combined is not None else None
    if combined is not None and best is not None:
        why += (
            f", on both encoders' probabilities (their normalised geometric mean): {best} "
            f"{combined.confidence:.2f}, the fast encoder's {fast.probabilities.get(best, 0.0):.2f}"
        )
    more = {
        "fast_action": fast.action,
        "fast_tier": fast.tier,
        "fast_route": fast.route,
        "combined": combined is not None,
    }
    return cascade_alert(why, Served(by, tier), more)


def _followed(d: Any) -> bool:
    """Whether ``d`` is a follow-up decision (it read the previous turn's text with the query)."""
    return isinstance(d, Decision) and d.reason is not None and d.reason.code == "follow_up"


def _own_arguments(kw: Mapping[str, Any], vectors: str) -> None:
    """Reject the arguments a cascade sets itself: each router embeds with its own encoder, and the
    fast router's decision is the strong one's peer."""
    for name in (vectors, "peer", "peer_model"):
        if name in kw:
            why = "embeds each query with each router's own encoder"
            if name != vectors:
                why = "gives the fast router's decision to the strong one as its peer"
            raise InvalidArgumentError(f"a cascade {why}: {name}= is not accepted")
