"""Confidence policy: the thresholds, tiers, previous-route weighting and bias rules of the
decision layer (:class:`Policy`); what is done with them is :mod:`routecore.decide.policy_rules`.

All of it works on per-route vectors (O(routes)), never per exemplar. Every
threshold that depends on the encoder's score scale is ``None`` by default and
filled from the router's :class:`~routecore.calibrate.calibration.Calibration`
(:meth:`Policy.resolve`); a value given in code or config wins over it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping, Sequence

from routecore.calibrate.calibration_record import Calibration
from routecore.config.specs import ROUTE_THRESHOLD_KEYS, RouteSpec, RouteThresholds

# Re-exported (``X as X``): the rules the policy's numbers drive (routecore.decide.policy_rules).
from routecore.decide.policy_rules import CLARIFY as CLARIFY
from routecore.decide.policy_rules import BiasRule as BiasRule
from routecore.decide.policy_rules import affinity_scale as affinity_scale
from routecore.decide.policy_rules import apply_previous_boost as apply_previous_boost
from routecore.decide.policy_rules import bias_winner as bias_winner
from routecore.decide.policy_rules import resolved as resolved
from routecore.decide.policy_rules import tier_of as tier_of
from routecore.decide.policy_sections import SECTION_OF, SECTIONS, FlatKeys
from routecore.decide.policy_sections import ClassifierPolicy as ClassifierPolicy
from routecore.decide.policy_sections import ContextPolicy as ContextPolicy
from routecore.decide.policy_sections import HybridPolicy as HybridPolicy
from routecore.decide.policy_sections import LearningPolicy as LearningPolicy
from routecore.decide.policy_sections import RoutePolicy as RoutePolicy
from routecore.decide.policy_sections import ToolPolicy as ToolPolicy
from routecore.errors import ConfigError, UnknownOptionError

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


DEFAULT_ERROR_MESSAGE = "Sorry, I could not handle this request. Please try again later."


@dataclass(frozen=True, init=False)
class Policy(FlatKeys):
    """Every number of the decision layer, in sections (:mod:`routecore.decide.policy_sections`):
    ``routes``, ``tools``, ``hybrid``, ``classifier``, ``context``, ``learning``, plus ``error_message``
    (what the caller says when every route of the fallback chain has failed).

    Tiers use the softmax probability ``p1`` of the best route and the margin
    ``p1 - p2``: high when ``p1 >= high`` and margin ``>= margin``; medium when
    ``p1 >= medium``; low otherwise. When the best route's cosine (its lexical
    score left aside) is below ``min_score``, the query is out of scope (no route).

    Fields left ``None`` (:data:`CALIBRATED_KEYS`) are calibrated for the encoder
    in use when a router is built (:meth:`resolve`): the tiers aim at
    ``high_precision`` / ``route_precision`` / ``previous_precision`` of right
    decisions on held-out exemplars. Set a field to pin it.

    Built from sections (``Policy(routes=RoutePolicy(high=0.9))``, a mapping works too) and/or any
    section's keys as flat keywords (``Policy(high=0.9, head="off")``), which update the section they
    belong to (so ``dataclasses.replace(policy, high=0.9)`` works). Every key reads flat too:
    ``policy.high`` is ``policy.routes.high``.
    """

    routes: RoutePolicy
    tools: ToolPolicy
    hybrid: HybridPolicy
    classifier: ClassifierPolicy
    context: ContextPolicy
    learning: LearningPolicy
    error_message: str

    def __init__(
        self,
        routes: RoutePolicy | Mapping[str, Any] | None = None,
        tools: ToolPolicy | Mapping[str, Any] | None = None,
        hybrid: HybridPolicy | Mapping[str, Any] | None = None,
        classifier: ClassifierPolicy | Mapping[str, Any] | None = None,
        context: ContextPolicy | Mapping[str, Any] | None = None,
        learning: LearningPolicy | Mapping[str, Any] | None = None,
        error_message: str = DEFAULT_ERROR_MESSAGE,
        **flat: Any,
    ) -> None:
        given = dict(
            routes=routes,
            tools=tools,
            hybrid=hybrid,
            classifier=classifier,
            context=context,
            learning=learning,
        )
        by_section: dict[str, dict[str, Any]] = {}
        for key, v in flat.items():
            if key not in SECTION_OF:
                raise UnknownOptionError(f"Policy() got an unexpected keyword argument {key!r}")
            by_section.setdefault(SECTION_OF[key], {})[key] = v
        for name, kind in SECTIONS.items():
            section = given[name]
            if section is None or isinstance(section, Mapping):
                try:
                    section = kind(**{**(section or {}), **by_section.get(name, {})})
                except TypeError as e:  # a key the section does not have
                    raise UnknownOptionError(f"policy: {name}: {e}") from None
            elif not isinstance(section, kind):
                raise ConfigError(f"policy: {name}: expected a {kind.__name__}, got {type(section).__name__}")
            elif name in by_section:
                section = replace(section, **by_section[name])
            object.__setattr__(self, name, section)
        if not isinstance(error_message, str):
            raise ConfigError(f"policy: error_message: expected `str`, got `{type(error_message).__name__}`")
        object.__setattr__(self, "error_message", error_message)

    def sections(self) -> dict[str, Any]:
        """The sections and ``error_message``, by name (what ``Policy(**...)`` takes back)."""
        return {name: getattr(self, name) for name in (*SECTIONS, "error_message")}

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
        if self.high_support is None and not cal.stats.match_fallback:
            changes["high_support"] = cal.support if cal.support is not None else cal.match
        changes["bias_rules"] = tuple(
            r if r.within is not None else replace(r, within=SCALE_UNITS["bias_within"] * cal.scale)
            for r in self.bias_rules
        )
        if fitted and cal.per_route:  # a fit's per-route cuts over the policy's own
            per = dict(self.per_route)
            for n, o in cal.per_route.items():
                per[n] = o.over(per.get(n, RouteThresholds()))
            changes["per_route"] = per
        return self.with_overrides(**changes)

    def value(self, key: str, route: str | None) -> float:
        """Policy ``key`` with the per-route override of ``route`` applied."""
        if route is not None:
            o = self.per_route.get(route)
            v = o.get(key) if o is not None and key in ROUTE_THRESHOLD_KEYS else None
            if v is not None:
                return v
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
        """This policy with ``changes``: flat keys (``high=0.9``) and/or whole sections."""
        return type(self)(
            **{**self.sections(), **{k: v for k, v in changes.items() if k not in SECTION_OF}},
            **{k: v for k, v in changes.items() if k in SECTION_OF},
        )

    def to_dict(self) -> dict[str, Any]:
        """The nested form (what a bundle stores); :meth:`from_dict` reads it and the legacy flat one."""
        d: dict[str, Any] = {name: asdict(getattr(self, name)) for name in SECTIONS}
        d["routes"]["bias_rules"] = [asdict(r) for r in self.bias_rules]
        d["routes"]["per_route"] = {k: v.to_dict() for k, v in self.per_route.items()}
        d["tools"]["discovery_prefixes"] = list(self.discovery_prefixes)
        d["error_message"] = self.error_message
        return d

    def to_flat_dict(self) -> dict[str, Any]:
        """Every key at the top level (the legacy form)."""
        d = self.to_dict()
        return {**{k: v for name in SECTIONS for k, v in d.pop(name).items()}, **d}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, where: str = "policy") -> "Policy":
        """A policy from a config mapping, nested (``routes: {high: 0.9}``) or flat (``high: 0.9``, the
        legacy form, as bundles saved before the sections hold it), checked against the schema; errors
        name ``where`` and the key, and a key given both ways is refused."""
        if d is None:
            return cls()
        from routecore.config import config_schema

        config_schema.check_policy_keys(d, where)
        p = config_schema.convert(d, config_schema.Policy, where)
        flat = config_schema.legacy_keys(p)
        sections: dict[str, Any] = {}
        for name, kind in SECTIONS.items():
            struct = getattr(p, name)
            values = {f.name: flat.get(f.name, getattr(struct, f.name)) for f in fields(kind)}
            if name == "routes":
                values["bias_rules"] = tuple(
                    BiasRule(r.a, r.b, r.winner, r.within) for r in values["bias_rules"]
                )
                values["per_route"] = {
                    n: RouteThresholds(**config_schema.given(t)) for n, t in values["per_route"].items()
                }
            sections[name] = kind(**values)
        return cls(**sections, error_message=p.error_message)


def with_route_thresholds(policy: Policy, routes: Sequence[RouteSpec]) -> Policy:
    """``policy`` with the routes' own thresholds merged under its ``per_route`` overrides.

    Raises :class:`ConfigError` when ``policy.per_route`` or a bias rule names an unknown route.
    """
    names = {r.name for r in routes}
    unknown = set(policy.per_route) - names
    if unknown:
        raise ConfigError(f"policy.per_route names unknown routes {sorted(unknown)}")
    for i, b in enumerate(policy.bias_rules if routes else ()):  # a tools-only router has no route to decide
        bad = [n for n in (b.a, b.b) if n not in names] + (
            [b.winner] if b.winner not in names | {CLARIFY} else []
        )
        if bad:
            raise ConfigError(
                f"policy.bias_rules[{i}] ({b.a} vs {b.b} -> {b.winner}) names unknown routes {bad}"
            )
    # The routes' own overrides, under those of the policy (explicit or fitted).
    spec_th = {r.name: r.thresholds for r in routes if r.thresholds}
    if not spec_th:
        return policy
    per = policy.per_route
    none = RouteThresholds()
    merged = {n: per.get(n, none).over(spec_th.get(n, none)) for n in {**spec_th, **per}}
    return policy.with_overrides(per_route=merged)


def check_router_args(routes: Any, policy: Any) -> None:
    """A Router's ``routes`` are RouteSpecs and its ``policy`` a Policy (or None).

    Raises:
        ConfigError: naming the first argument of another type (a mapping: :meth:`Router.from_config`).
    """
    for i, r in enumerate(routes or ()):
        if not isinstance(r, RouteSpec):
            raise ConfigError(
                f"routes[{i}] must be a RouteSpec, got {type(r).__name__} (a document: Router.from_config)"
            )
    if policy is not None and not isinstance(policy, Policy):
        got = type(policy).__name__
        raise ConfigError(f"policy must be a Policy (Policy.from_dict for a mapping), got {got}")
