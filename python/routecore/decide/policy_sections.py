"""The sections of a :class:`~routecore.decide.policy.Policy`: one frozen dataclass per concern.

- ``routes`` (:class:`RoutePolicy`): the route decision: tiers, margins, support, precision targets, the
  previous route, bias rules, ties, clarifications, int8 exact scoring, per-route overrides;
- ``tools`` (:class:`ToolPolicy`): tool belts: size, floor, fallback tool, anti-patterns, lessons, more tools;
- ``hybrid`` (:class:`HybridPolicy`): the lexical (BM25) pass: on/off, weights, stemmers;
- ``classifier`` (:class:`ClassifierPolicy`): where route probabilities come from: the head and its prior;
- ``context`` (:class:`ContextPolicy`): the active context domain's affinity factors and the entity boost;
- ``learning`` (:class:`LearningPolicy`): ``Router.learn``: LLM answers, caps, duplicates, refits.

A key keeps its one name in every form: ``routes.high`` in a nested config is ``high`` in a flat one
(the legacy form, still read), in ``Policy(high=...)``, in ``policy.high``, in ``per_route`` overrides
and in :data:`~routecore.decide.policy.CALIBRATED_KEYS`; :data:`SECTION_OF` maps a key to its section.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Literal, Mapping

from routecore.config.specs import RouteThresholds
from routecore.decide.policy_rules import BiasRule
from routecore.errors import ConfigError

Stemmer = Literal["none", "english", "french"]


def _check(section: Any, kind: str) -> None:
    """``section`` against its schema struct: errors read ``policy: high: ...``, as for a flat policy."""
    from routecore.config import config_schema, policy_schema

    config_schema.convert(section, policy_schema.SECTIONS[kind], "policy")


@dataclass(frozen=True)
class RoutePolicy:
    """``policy.routes``: how route scores become a decision (:class:`~routecore.decide.policy.Policy`)."""

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
    #: Lower the routing cut from the router's own queries (routecore.calibrate.traffic): with a
    #: model's prior and no ``medium`` set, once 100 queries are seen the cut sits where the
    #: prior expects the queries routed to be right on average at its measured level. False: fixed.
    adapt_cut: bool = True
    #: Read a mistyped word of a query as the likeliest exemplar-language word a keyboard slip away
    #: (routecore.decide.spelling, a ``spelling`` alert). False: queries are encoded as written (code
    #: identifiers, jargon, product names that are not in the exemplars).
    spelling: bool = True
    high_precision: float = 0.95
    #: How often routed decisions should be right. Unset: a model's prior keeps the goal it was
    #: measured at (95 % of routed dev queries; routecore.calibrate.prior), and cuts fitted on
    #: held-out exemplars (zero-label, ``fit``, a doctor's checks) aim at
    #: :data:`routecore.calibrate.fits.ROUTE_PRECISION` (90 %). Set, a prior routes at its
    #: levels measured for this goal.
    route_precision: float | None = None
    previous_precision: float = 0.90
    aggregation: Literal["max", "mean", "topn"] = "max"
    top_n: int = 3
    previous_strategy: Literal["thresholds", "boost"] = "thresholds"
    previous_boost: float = 0.10
    #: The library applies no bias rule by default: rules name a user's routes
    #: (the IT-operations ones live in examples/it_ops_routes.yaml).
    bias_rules: tuple[BiasRule, ...] = ()
    three_way_within: float | None = None
    low_action: Literal["llm", "clarify", "none"] = "llm"
    #: A clarification names the best routes until their probabilities add up to this: two
    #: routes, or three when the best two hold less. Unset: the model's prior
    #: (routecore.calibrate.prior), else two routes.
    clarify_mass: float | None = None
    collision_gap: float | None = None
    top_exemplars: int = 5
    #: int8 tables (large ones, see ``Router(storage=...)``): the true best
    #: ``exact_top`` routes or tools (and any within ``exact_band`` of the best)
    #: are scored exactly, which covers every rule of the decision (tiers, bias
    #: rules, three-way ties, collisions); the others keep an int8 estimate
    #: within the bound reported in ``Decision.score_bounds`` (typically < 0.01).
    exact_top: int = 10
    exact_band: float = 0.0
    #: Per-route overrides of the thresholds (``high`` ... ``min_score``), by route name (a mapping of
    #: values is read as :class:`~routecore.config.specs.RouteThresholds`).
    per_route: Mapping[str, RouteThresholds] = field(default_factory=dict)

    def __post_init__(self) -> None:
        per = self.per_route
        if not all(isinstance(v, RouteThresholds) for v in per.values()):
            typed = {n: RouteThresholds.of(v, f"policy: per_route: {n}") for n, v in per.items()}
            object.__setattr__(self, "per_route", typed)
        _check(self, "routes")
        if not isinstance(self.bias_rules, tuple) or not all(
            isinstance(r, BiasRule) for r in self.bias_rules
        ):
            raise ConfigError("policy: bias_rules must be a tuple of BiasRule objects")


@dataclass(frozen=True)
class ToolPolicy:
    """``policy.tools``: how tool scores become a belt."""

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
    #: Read a mistyped word of a query as the likeliest word of the tools' texts (or of their language)
    #: a keyboard slip away, as routes do (``policy.routes.spelling``; a ``spelling`` alert). On
    #: MetaTool's dev half with typos on 10 % of letters, e5: recall@5 35.6 -> 49.6 %, clean −0.4
    #: (BENCHMARKS.md, tools). False: queries are encoded as written.
    tool_spelling: bool = True
    #: The confidence gate of tool belts: a general tool (web search, ...) put in a belt
    #: when no candidate passes the floor, with a ``no_tool`` alert that names it.
    fallback_tool: str | None = None
    discovery_prefixes: tuple[str, ...] = ("get_", "list_", "search_")
    anti_pattern_threshold: float | None = None
    #: The factor of a tool an anti-pattern matches, applied by ``affinity_scale``.
    anti_pattern_penalty: float = 0.50
    lesson_similarity: float | None = None
    #: Added to a tool's score by its "use it" lessons (once, however many match the query; a
    #: matching "do not use" lesson wins and removes the tool). A cosine; unset, 5 calibrated scales.
    lesson_boost: float | None = None
    more_tools_batch: int = 5
    more_tools_limit: int = 3
    #: How many of the best tools' scores a ToolBelt reports. With int8 tables, those
    #: past the best ``exact_top`` may be estimates (bounds in ``ToolBelt.score_bounds``).
    report_scores: int = 50

    def __post_init__(self) -> None:
        _check(self, "tools")
        if not isinstance(self.discovery_prefixes, tuple):
            object.__setattr__(self, "discovery_prefixes", tuple(self.discovery_prefixes))


@dataclass(frozen=True)
class HybridPolicy:
    """``policy.hybrid``: hybrid scoring, a route's (tool's) BM25 score, over the query's best, times
    a weight added to its cosine (routecore.core.lexical)."""

    #: ``false`` turns the lexical pass off.
    lexical: bool = True
    #: Calibrated when unset (0 when nothing could be fitted).
    lexical_weight: float | None = None
    tool_lexical_weight: float | None = None
    #: The Snowball stemmer of the routes' lexical terms (``"none"``, ``"english"``,
    #: ``"french"``), and of the tools' (unset: the one ``routecore fit --tools`` chose, else
    #: none). Stemming is off by default: it cost up to half a point of top-1 on intent sets.
    lexical_stemmer: Stemmer = "none"
    tool_lexical_stemmer: Stemmer | None = None

    def __post_init__(self) -> None:
        _check(self, "hybrid")


@dataclass(frozen=True)
class ClassifierPolicy:
    """``policy.classifier``: where route probabilities come from."""

    #: ``"exemplars"`` (the default): route probabilities come from a linear head (softmax
    #: regression) trained on the routes' exemplars when the router is built, with the bundled
    #: background queries in the exemplars' languages as an out-of-scope class; its tiers and its
    #: out-of-scope cut are calibrated zero-label on out-of-fold exemplars
    #: (routecore.calibrate.exemplar_head), and it replaces the cosine ``min_score``. It costs
    #: under a second for a few hundred exemplars and about 30 s for 15,000 at build time (a
    #: bundle keeps it); with too few exemplars to hold out, the router keeps the cosines.
    #: ``"off"``: the softmax of the cosines.
    head: Literal["off", "exemplars"] = "exemplars"
    #: With the exemplar head: take its cuts from the model's measured decision prior when
    #: routecore ships one (routecore.calibrate.prior; ``calibrated="prior"``, one training).
    #: ``false``: fit them out of fold on the exemplars (``zero-label``, five trainings).
    prior: bool = True

    def __post_init__(self) -> None:
        _check(self, "classifier")


@dataclass(frozen=True)
class ContextPolicy:
    """``policy.context``: what the active context domain and the query's entities add."""

    #: Score factors for routes/tools in (out of) the active context domain, applied by
    #: ``affinity_scale`` (a boost never lowers a score of either sign, a penalty never
    #: raises one); unset, they move a typical match by +2 / -4 calibrated scales.
    affinity_boost: float | None = None
    affinity_penalty: float | None = None
    #: Added to the cosine of a route that prefers an entity type the query holds
    #: (routecore.core.entities); unset, one calibrated scale (the three-way tie window).
    entity_boost: float | None = None

    def __post_init__(self) -> None:
        _check(self, "context")


@dataclass(frozen=True)
class LearningPolicy:
    """``policy.learning``: ``Router.learn`` (routecore.updates.learning)."""

    #: Learn the LLM fallback's answers too.
    learn_from_llm: bool = False
    #: At most this many learned exemplars per route; the oldest go first (a default, not a fit).
    learn_cap: int = 200
    #: A query whose cosine to one of the route's exemplars reaches this is a near-duplicate and
    #: is not learned; unset: the cut calibrated on the config's exemplars (same-route pairs).
    learn_duplicate: float | None = None
    #: After this many learned exemplars the head and calibration are rebuilt in the background
    #: (a default, not a fit: BENCHMARKS / docs/learning.md give its cost).
    learn_refit_every: int = 50

    def __post_init__(self) -> None:
        _check(self, "learning")


#: Section name -> its dataclass, in the order a policy writes them.
SECTIONS: dict[str, type[Any]] = {
    "routes": RoutePolicy,
    "tools": ToolPolicy,
    "hybrid": HybridPolicy,
    "classifier": ClassifierPolicy,
    "context": ContextPolicy,
    "learning": LearningPolicy,
}
#: Every key of a section -> the section's name.
SECTION_OF: dict[str, str] = {f.name: s for s, kind in SECTIONS.items() for f in fields(kind)}


class FlatKeys:
    """Each section's keys read on the policy itself: ``policy.high`` is ``policy.routes.high``
    (read-only properties, one ``attrgetter`` each, so the hot path's reads cost what a field's did)."""

    if TYPE_CHECKING:
        high: float | None
        margin: float | None
        previous_high: float | None
        previous_margin: float | None
        medium: float | None
        min_score: float | None
        temperature: float | None
        high_support: float | None
        adapt_cut: bool
        spelling: bool
        high_precision: float
        route_precision: float | None
        previous_precision: float
        aggregation: Literal["max", "mean", "topn"]
        top_n: int
        previous_strategy: Literal["thresholds", "boost"]
        previous_boost: float
        bias_rules: tuple[BiasRule, ...]
        three_way_within: float | None
        low_action: Literal["llm", "clarify", "none"]
        clarify_mass: float | None
        collision_gap: float | None
        top_exemplars: int
        exact_top: int
        exact_band: float
        per_route: Mapping[str, RouteThresholds]
        tool_top_k: int
        tool_threshold: float | None
        tool_selection: Literal["top_k", "threshold"]
        tool_floor: Literal["best", "each"]
        tool_spelling: bool
        fallback_tool: str | None
        discovery_prefixes: tuple[str, ...]
        anti_pattern_threshold: float | None
        anti_pattern_penalty: float
        lesson_similarity: float | None
        lesson_boost: float | None
        more_tools_batch: int
        more_tools_limit: int
        report_scores: int
        lexical: bool
        lexical_weight: float | None
        tool_lexical_weight: float | None
        lexical_stemmer: Stemmer
        tool_lexical_stemmer: Stemmer | None
        head: Literal["off", "exemplars"]
        prior: bool
        affinity_boost: float | None
        affinity_penalty: float | None
        entity_boost: float | None
        learn_from_llm: bool
        learn_cap: int
        learn_duplicate: float | None
        learn_refit_every: int


for _key, _section in SECTION_OF.items():
    setattr(FlatKeys, _key, property(attrgetter(f"{_section}.{_key}"), doc=f"``{_section}.{_key}``"))
