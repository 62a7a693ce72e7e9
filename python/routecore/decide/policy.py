"""Confidence policy: the thresholds, tiers, previous-route weighting and bias rules of the
decision layer (:class:`Policy`); what is done with them is :mod:`routecore.decide.policy_rules`.

All of it works on per-route vectors (O(routes)), never per exemplar. Every
threshold that depends on the encoder's score scale is ``None`` by default and
filled from the router's :class:`~routecore.calibrate.calibration.Calibration`
(:meth:`Policy.resolve`); a value given in code or config wins over it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Mapping

from routecore.calibrate.calibration_record import Calibration

# Re-exported (``X as X``): the rules the policy's numbers drive (routecore.decide.policy_rules).
from routecore.decide.policy_rules import CLARIFY as CLARIFY
from routecore.decide.policy_rules import BiasRule as BiasRule
from routecore.decide.policy_rules import affinity_scale as affinity_scale
from routecore.decide.policy_rules import apply_previous_boost as apply_previous_boost
from routecore.decide.policy_rules import bias_winner as bias_winner
from routecore.decide.policy_rules import resolved as resolved
from routecore.decide.policy_rules import tier_of as tier_of
from routecore.errors import ConfigError

#: The library applies no bias rule by default: rules name a user's routes
#: (the IT-operations ones live in examples/it_ops_routes.yaml).
DEFAULT_BIAS_RULES: tuple[BiasRule, ...] = ()

#: Keys filled from the calibration when unset, and the gap rules' width in
#: calibrated ``scale`` units (a gap of one scale is a factor e in probability).
CALIBRATED_KEYS = (
    "temperature",
    "high",
    "margin",
    "previous_high",
    "previous_margin",
    "medium",
    "min_score",
    "three_way_within",
    "collision_gap",
    "tool_threshold",
    "anti_pattern_threshold",
    "lesson_similarity",
    "affinity_boost",
    "affinity_penalty",
    "lesson_boost",
    "lexical_weight",
    "tool_lexical_weight",
)
SCALE_UNITS = {
    "three_way_within": 1.0,
    "collision_gap": 1.6,
    "bias_within": 1.0,
    "lesson_boost": 5.0,
    "affinity_boost": 2.0,
    "affinity_penalty": -4.0,
}
#: Where the anti-pattern and lesson similarities sit between an unrelated best
#: match (0) and a paraphrase (1) (Calibration.similarity).
SIMILARITY_LEVELS = {"anti_pattern_threshold": 1.0, "lesson_similarity": 1.0}


@dataclass(frozen=True)
class Policy:
    """Every number of the decision layer.

    Tiers use the softmax probability ``p1`` of the best route and the margin
    ``p1 - p2``: high when ``p1 >= high`` and margin ``>= margin``; medium when
    ``p1 >= medium``; low otherwise. When the best route's cosine (its lexical
    score left aside) is below ``min_score``, the query is out of scope (no route).

    Fields left ``None`` (:data:`CALIBRATED_KEYS`) are calibrated for the encoder
    in use when a router is built (:meth:`resolve`): the tiers aim at
    ``high_precision`` / ``route_precision`` / ``previous_precision`` of right
    decisions on held-out exemplars. Set a field to pin it.
    """

    high: float | None = None
    margin: float | None = None
    previous_high: float | None = None
    previous_margin: float | None = None
    medium: float | None = None
    min_score: float | None = None
    temperature: float | None = None
    #: The high tier also needs support: the best route's cosine (its lexical score left aside)
    #: must reach this. Unset: the calibration's ``match``, the median cosine of a held-out
    #: exemplar to its own route (off when no exemplar could be held out). A linear head is
    #: sure of queries far from every exemplar, and a few exemplars cannot show which queries
    #: of their domain are not theirs (BENCHMARKS.md, small configs); 0 turns it off.
    high_support: float | None = None
    high_precision: float = 0.95
    route_precision: float = 0.90
    previous_precision: float = 0.90
    aggregation: Literal["max", "mean", "topn"] = "max"
    top_n: int = 3
    previous_strategy: Literal["thresholds", "boost"] = "thresholds"
    previous_boost: float = 0.10
    bias_rules: tuple[BiasRule, ...] = DEFAULT_BIAS_RULES
    three_way_within: float | None = None
    low_action: Literal["llm", "clarify", "none"] = "llm"
    #: A clarification names the best routes until their probabilities add up to this: two
    #: routes, or three when the best two hold less. Unset: the model's prior (routecore.calibrate.prior),
    #: else two routes.
    clarify_mass: float | None = None
    collision_gap: float | None = None
    #: Score factors for routes/tools in (out of) the active context domain, applied by
    #: :func:`affinity_scale` (a boost never lowers a score of either sign, a penalty never
    #: raises one); unset, they move a typical match by +2 / -4 calibrated scales.
    affinity_boost: float | None = None
    affinity_penalty: float | None = None
    top_exemplars: int = 5
    #: int8 tables (large ones, see ``Router(storage=...)``): the true best
    #: ``exact_top`` routes or tools (and any within ``exact_band`` of the best)
    #: are scored exactly, which covers every rule of the decision (tiers, bias
    #: rules, three-way ties, collisions); the others keep an int8 estimate
    #: within the bound reported in ``Decision.score_bounds`` (typically < 0.01).
    exact_top: int = 10
    exact_band: float = 0.0
    # tools
    tool_top_k: int = 5
    #: The floor of tool belts (a cosine; calibrated when unset, None after
    #: calibration when the router has no tools). Both selection modes stop at
    #: ``tool_top_k`` tools.
    tool_threshold: float | None = None
    tool_selection: Literal["top_k", "threshold"] = "top_k"
    #: How the ``top_k`` selection reads the floor: ``"best"``, the belt is empty
    #: when its best candidate is under it, and otherwise holds the top ``k``
    #: (the zero-label floor is fitted on the background's *best* tool score);
    #: ``"each"``, every candidate must pass it. The ``threshold`` selection (and
    #: a ``threshold`` given to ``tools()``) always reads it per candidate. On
    #: MetaTool with e5, "each" dropped the right tool from 46 % of the belts at
    #: the calibrated floor, "best" from 15 % (BENCHMARKS.md, issue 12 §4).
    tool_floor: Literal["best", "each"] = "best"
    #: The confidence gate of tool belts: a general tool (web search, ...) put in a belt
    #: when no candidate passes the floor, with a ``no_tool`` alert that names it.
    fallback_tool: str | None = None
    discovery_prefixes: tuple[str, ...] = ("get_", "list_", "search_")
    anti_pattern_threshold: float | None = None
    #: The factor of a tool an anti-pattern matches, applied by :func:`affinity_scale`.
    anti_pattern_penalty: float = 0.50
    lesson_similarity: float | None = None
    #: Added to a tool's score by its "use it" lessons (once, however many match the query; a matching
    #: "do not use" lesson wins and removes the tool). A cosine; unset, 5 calibrated scales.
    lesson_boost: float | None = None
    #: Added to the cosine of a route that prefers an entity type the query holds
    #: (routecore.core.entities); unset, one calibrated scale (the three-way tie window).
    entity_boost: float | None = None
    more_tools_batch: int = 5
    more_tools_limit: int = 3
    #: How many of the best tools' scores a ToolBelt reports. With int8 tables, those
    #: past the best ``exact_top`` may be estimates (bounds in ``ToolBelt.score_bounds``).
    report_scores: int = 50
    per_route: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: Hybrid scoring: a route's (tool's) BM25 score, over the query's best, times this
    #: weight is added to its cosine (routecore.core.lexical). Calibrated when unset (0 when
    #: nothing could be fitted); ``lexical: false`` turns the lexical pass off.
    lexical: bool = True
    lexical_weight: float | None = None
    tool_lexical_weight: float | None = None
    #: The Snowball stemmer of the routes' lexical terms (``"none"``, ``"english"``,
    #: ``"french"``), and of the tools' (unset: the one ``routecore fit --tools`` chose, else
    #: none). Stemming is off by default: it cost up to half a point of top-1 on intent sets.
    lexical_stemmer: Literal["none", "english", "french"] = "none"
    tool_lexical_stemmer: Literal["none", "english", "french"] | None = None
    #: ``"exemplars"`` (the default): route probabilities come from a linear head (softmax regression)
    #: trained on the routes' exemplars when the router is built, with the bundled
    #: background queries in the exemplars' languages as an out-of-scope class; its tiers
    #: and its out-of-scope cut are calibrated zero-label on out-of-fold exemplars
    #: (routecore.calibrate.exemplar_head), and it replaces the cosine ``min_score``. It costs
    #: under a second for a few hundred exemplars and about 30 s for 15,000 at build time
    #: (a bundle keeps it); with too few exemplars to hold out, the router keeps the
    #: cosines. ``"off"``: the softmax of the cosines.
    head: Literal["off", "exemplars"] = "exemplars"
    #: With the exemplar head: take its cuts from the model's measured decision prior when
    #: routecore ships one (routecore.calibrate.prior; ``calibrated="prior"``, one training). ``false``: fit
    #: them out of fold on the exemplars (``zero-label``, five trainings).
    prior: bool = True
    #: Learning (``Router.learn``, routecore.updates.learning): learn the LLM fallback's answers too.
    learn_from_llm: bool = False
    #: At most this many learned exemplars per route; the oldest go first (a default, not a fit).
    learn_cap: int = 200
    #: A query whose cosine to one of the route's exemplars reaches this is a near-duplicate and
    #: is not learned; unset: the cut calibrated on the config's exemplars (same-route pairs).
    learn_duplicate: float | None = None
    #: After this many learned exemplars the head and calibration are rebuilt in the background
    #: (a default, not a fit: BENCHMARKS / docs/learning.md give its cost).
    learn_refit_every: int = 50
    #: What the caller says when every route of the fallback chain has failed.
    error_message: str = "Sorry, I could not handle this request. Please try again later."

    def __post_init__(self) -> None:
        # The config schema holds every type and range: a string where a number belongs
        # ("0.9") used to pass here and break every route().
        from routecore.config import config_schema

        config_schema.convert(self, config_schema.Policy, "policy")
        if not isinstance(self.bias_rules, tuple) or not all(
            isinstance(r, BiasRule) for r in self.bias_rules
        ):
            raise ConfigError("policy: bias_rules must be a tuple of BiasRule objects")
        if not isinstance(self.discovery_prefixes, tuple):
            object.__setattr__(self, "discovery_prefixes", tuple(self.discovery_prefixes))

    def is_manual(self) -> bool:
        """Whether every calibrated key was given (nothing left to calibrate)."""
        return all(getattr(self, k) is not None for k in CALIBRATED_KEYS) and all(
            r.within is not None for r in self.bias_rules
        )

    def resolve(self, cal: Calibration | None) -> "Policy":
        """This policy with every unset key filled from ``cal``.

        Explicit values win over a zero-label calibration; a fitted one
        (``routecore fit``) wins over everything it fitted.
        """
        if cal is None:
            if not self.is_manual():
                raise ConfigError("policy: unset thresholds need a calibration")
            return self
        fitted = cal.source == "fitted"
        scaled = {
            k: SCALE_UNITS[k] * cal.scale for k in ("three_way_within", "collision_gap", "lesson_boost")
        }
        # Affinity multiplies scores: +2 / -4 scales at a typical match.
        scaled.update(
            {
                k: max(1.0 + SCALE_UNITS[k] * cal.scale / max(cal.match, 0.05), 0.05)
                for k in ("affinity_boost", "affinity_penalty")
            }
        )
        similar = {k: cal.similarity(z) for k, z in SIMILARITY_LEVELS.items()}
        values = {
            "temperature": cal.temperature,
            "high": cal.high,
            "margin": cal.margin,
            "medium": cal.medium,
            "previous_high": cal.previous_high,
            "previous_margin": cal.previous_margin,
            "min_score": cal.min_score,
            "tool_threshold": cal.tool_floor,
            "lexical_weight": cal.lexical_weight,
            "tool_lexical_weight": cal.tool_lexical_weight,
            **scaled,
            **similar,
        }
        fit_keys = (
            {"temperature", "high", "margin", "medium", "min_score", "lexical_weight", "tool_lexical_weight"}
            if fitted
            else set()
        )
        changes: dict[str, Any] = {
            k: v for k, v in values.items() if getattr(self, k) is None or k in fit_keys
        }
        if self.clarify_mass is None and cal.clarify_mass is not None:
            changes["clarify_mass"] = cal.clarify_mass
        if self.high_support is None and not cal.stats.get("match_fallback"):
            changes["high_support"] = cal.support if cal.support is not None else cal.match
        changes["bias_rules"] = tuple(
            r if r.within is not None else replace(r, within=SCALE_UNITS["bias_within"] * cal.scale)
            for r in self.bias_rules
        )
        if fitted and cal.per_route:
            per = {n: dict(v) for n, v in self.per_route.items()}
            for n, o in cal.per_route.items():
                per.setdefault(n, {}).update(o)
            changes["per_route"] = per
        return replace(self, **changes)

    def value(self, key: str, route: str | None) -> float:
        """Policy ``key`` with the per-route override of ``route`` applied."""
        if route is not None:
            o = self.per_route.get(route)
            if o and key in o:
                return float(o[key])
        return float(getattr(self, key))

    def thresholds(self, route: str, continuing: bool) -> tuple[float, float, float, float]:
        """(high, margin, medium, min_score) for ``route``, per-route overrides
        applied; ``continuing``: the previous-route thresholds (strategy A)."""
        keys = ("previous_high", "previous_margin") if continuing else ("high", "margin")
        if not self.per_route:
            high, margin = (
                resolved(getattr(self, keys[0]), keys[0]),
                resolved(getattr(self, keys[1]), keys[1]),
            )
            return high, margin, resolved(self.medium, "medium"), resolved(self.min_score, "min_score")
        return (
            self.value(keys[0], route),
            self.value(keys[1], route),
            self.value("medium", route),
            self.value("min_score", route),
        )

    def with_overrides(self, **changes: Any) -> "Policy":
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bias_rules"] = [asdict(r) for r in self.bias_rules]
        d["discovery_prefixes"] = list(self.discovery_prefixes)
        d["per_route"] = {k: dict(v) for k, v in self.per_route.items()}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, where: str = "policy") -> "Policy":
        """A policy from a config mapping, checked against the schema; errors name ``where`` and the key."""
        if d is None:
            return cls()
        from routecore.config import config_schema

        p = config_schema.convert(d, config_schema.Policy, where)
        values: dict[str, Any] = {f.name: getattr(p, f.name) for f in fields(cls)}
        values["bias_rules"] = tuple(BiasRule(r.a, r.b, r.winner, r.within) for r in p.bias_rules)
        values["per_route"] = {n: config_schema.given(t) for n, t in p.per_route.items()}
        return cls(**values)
