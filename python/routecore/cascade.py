"""An encoder cascade: a fast encoder decides first, a stronger one only when it must (issue 19).

Two :class:`~routecore.router.Router` objects over the same routes, each with its
own encoder, tables and calibration (zero-label or fitted, separately). A query is
encoded and scored by the fast router; when its decision routes at the high tier
(right on 95 % of held-out exemplars by the fast router's own calibration), that is
the answer. Otherwise (medium or low tier, clarification, out of scope) the strong
router encodes the query and decides. The fast router has no LLM fallback, so an
escalated query reaches the LLM (if any) only through the strong router.

Every decision carries a ``cascade`` alert saying which encoder served it, and its
timings include the fast router's time when it was escalated.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from routecore.decision import Alert, Decision
from routecore.errors import ConfigError

if TYPE_CHECKING:
    from routecore.router import Router


class Cascade:
    """``fast`` then ``strong`` (see the module docs); :attr:`served` counts the decisions
    each one gave.

    Raises:
        ConfigError: the routers' routes differ, or ``fast`` has an LLM fallback.
    """

    def __init__(self, fast: Router, strong: Router):
        fn, sn = [r.name for r in fast.route_specs], [r.name for r in strong.route_specs]
        if sorted(fn) != sorted(sn):
            raise ConfigError(
                f"a cascade needs the same routes in both routers: {sorted(set(fn) ^ set(sn))} differ"
            )
        if not fn:
            raise ConfigError("a cascade needs routes")
        if fast.route_table.llm is not None:
            raise ConfigError(
                "the fast router of a cascade must have no LLM fallback: give it to the strong router"
            )
        self.fast, self.strong = fast, strong
        self.served = {"fast": 0, "strong": 0}

    @classmethod
    def from_config(
        cls, path: Any, fast_model: str | None, strong_model: str | None = None, **kw: Any
    ) -> "Cascade":
        """Both routers from one config file: ``fast_model`` and ``strong_model`` (None: the
        bundled default) as in ``Encoder.load``; ``kw`` go to the strong router."""
        from routecore.encoder import Encoder
        from routecore.router import Router

        fast = Router.from_config(
            path, encoder=Encoder.load(fast_model), **{k: v for k, v in kw.items() if k != "llm"}
        )
        fast.route_table.llm = None  # the config's llm: section serves the strong router only
        strong = Router.from_config(path, encoder=Encoder.load(strong_model), **kw)
        return cls(fast, strong)

    def route(self, query: str, **kw: Any) -> Decision:
        """The fast router's decision when it routes at the high tier, else the strong
        router's; ``kw`` as in :meth:`Router.route` (``vector=`` is not accepted: each
        router embeds with its own encoder)."""
        if "vector" in kw:
            raise ConfigError(
                "a cascade embeds each query with each router's own encoder: vector= is not accepted"
            )
        d = self.fast.route(query, **kw)
        if d.action == "route" and d.tier == "high":
            self.served["fast"] += 1
            return replace(d, alerts=d.alerts + (_served("fast", d),))
        s = self.strong.route(query, **kw)
        self.served["strong"] += 1
        t, f = s.timings, d.timings
        timings = replace(
            t,
            tokenize=t.tokenize + f.tokenize,
            encode=t.encode + f.encode,
            score=t.score + f.score,
            policy=t.policy + f.policy,
            total=t.total + f.total,
        )
        return replace(s, alerts=s.alerts + (_served("strong", d),), timings=timings)

    @property
    def fast_share(self) -> float:
        """Share of the decisions so far that the fast router gave alone."""
        n = self.served["fast"] + self.served["strong"]
        return self.served["fast"] / n if n else 0.0


def _served(by: str, fast: Decision) -> Alert:
    why = (
        "the fast encoder routed at the high tier"
        if by == "fast"
        else (f"the fast encoder's decision was {fast.action} ({fast.tier} tier): the strong encoder decided")
    )
    return Alert(
        "cascade",
        why,
        {"served_by": by, "fast_action": fast.action, "fast_tier": fast.tier, "fast_route": fast.route},
    )
