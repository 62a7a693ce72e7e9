"""The schema of a config's ``policy``: one struct per section (routecore.decide.policy_sections
holds the dataclasses they check), and the legacy flat form of every key."""

from __future__ import annotations

import inspect
import typing
from typing import Annotated, Any, Dict, Literal, Optional, Tuple, Union

import msgspec
from msgspec import UNSET, Meta, UnsetType, field

from routecore.config.schema_base import AtLeastOne, Count, Finite, Name, NonNegative, Positive, Strict, Unit
from routecore.errors import ConfigError


class Thresholds(Finite):
    """Policy values one route overrides (cosines and probabilities in [0, 1])."""

    high: Optional[Unit] = None
    margin: Optional[Unit] = None
    previous_high: Optional[Unit] = None
    previous_margin: Optional[Unit] = None
    medium: Optional[Unit] = None
    min_score: Optional[Unit] = None


class BiasRule(Finite):
    """When the two best routes are ``a`` and ``b`` and within ``within``, decide ``winner``
    (a route or CLARIFY)."""

    a: Name
    b: Name
    winner: Name
    within: Optional[Unit] = None


class RouteSection(Thresholds):  # its first fields are the thresholds a route can override
    """``policy.routes``: how route scores become a decision. Unset (null) values are calibrated."""

    temperature: Optional[Positive] = None
    high_support: Optional[Unit] = None
    adapt_cut: bool = True
    spelling: bool = True
    high_precision: Unit = 0.95
    route_precision: Optional[Unit] = None
    previous_precision: Unit = 0.90
    aggregation: Literal["max", "mean", "topn"] = "max"
    top_n: AtLeastOne = 3
    previous_strategy: Literal["thresholds", "boost"] = "thresholds"
    previous_boost: NonNegative = 0.10
    bias_rules: Tuple[BiasRule, ...] = ()
    three_way_within: Optional[Unit] = None
    low_action: Literal["llm", "clarify", "none"] = "llm"
    clarify_mass: Optional[Unit] = None
    collision_gap: Optional[Unit] = None
    top_exemplars: Count = 5
    exact_top: AtLeastOne = 10
    exact_band: NonNegative = 0.0
    per_route: Dict[str, Thresholds] = {}


class ToolSection(Finite):
    """``policy.tools``: how tool scores become a belt. Unset (null) values are calibrated."""

    tool_top_k: AtLeastOne = 5
    tool_threshold: Optional[Unit] = None
    tool_selection: Literal["top_k", "threshold"] = "top_k"
    tool_floor: Literal["best", "each"] = "best"
    tool_spelling: bool = True
    fallback_tool: Optional[Name] = None
    discovery_prefixes: Tuple[Name, ...] = ("get_", "list_", "search_")
    anti_pattern_threshold: Optional[Unit] = None
    anti_pattern_penalty: NonNegative = 0.50
    lesson_similarity: Optional[Unit] = None
    lesson_boost: Optional[NonNegative] = None
    more_tools_batch: AtLeastOne = 5
    more_tools_limit: Count = 3
    report_scores: Count = 50


class HybridSection(Finite):
    """``policy.hybrid``: the lexical (BM25) pass added to cosines. Unset weights are calibrated."""

    lexical: bool = True
    lexical_weight: Optional[NonNegative] = None
    tool_lexical_weight: Optional[NonNegative] = None
    lexical_stemmer: Literal["none", "english", "french"] = "none"
    tool_lexical_stemmer: Optional[Literal["none", "english", "french"]] = None


class ClassifierSection(Strict):
    """``policy.classifier``: route probabilities from the exemplar head or the cosines' softmax."""

    head: Literal["off", "exemplars"] = "exemplars"
    prior: bool = True


class ContextSection(Finite):
    """``policy.context``: the active context domain's score factors and the entity boost."""

    affinity_boost: Optional[NonNegative] = None
    affinity_penalty: Optional[NonNegative] = None
    entity_boost: Optional[NonNegative] = None


class LearningSection(Finite):
    """``policy.learning``: what ``Router.learn`` learns and when it refits."""

    learn_from_llm: bool = False
    learn_cap: AtLeastOne = 200
    learn_duplicate: Optional[Unit] = None
    learn_refit_every: AtLeastOne = 50


class PolicySections(Finite):
    """The decision layer's numbers, by section. Unset (null) values are calibrated for the encoder in use.

    Legacy form: every key of a section may instead be given at the top of ``policy`` (``high: 0.9``
    for ``routes: {high: 0.9}``), as configs before the sections did; a key given both ways is refused."""

    routes: RouteSection = field(default_factory=RouteSection)
    tools: ToolSection = field(default_factory=ToolSection)
    hybrid: HybridSection = field(default_factory=HybridSection)
    classifier: ClassifierSection = field(default_factory=ClassifierSection)
    context: ContextSection = field(default_factory=ContextSection)
    learning: LearningSection = field(default_factory=LearningSection)
    error_message: str = "Sorry, I could not handle this request. Please try again later."


#: Section name -> its struct (routecore.decide.policy_sections holds the dataclasses).
SECTIONS: Dict[str, type[msgspec.Struct]] = {
    "routes": RouteSection,
    "tools": ToolSection,
    "hybrid": HybridSection,
    "classifier": ClassifierSection,
    "context": ContextSection,
    "learning": LearningSection,
}
#: Every key of a section -> the section's name.
SECTION_OF: Dict[str, str] = {k: s for s, kind in SECTIONS.items() for k in kind.__struct_fields__}


#: Each section's type hints, evaluated once (45 evaluations cost a CLI call 0.04 s).
_HINTS = {s: typing.get_type_hints(kind, include_extras=True) for s, kind in SECTIONS.items()}


def _legacy(section: str, key: str) -> Any:
    hint = _HINTS[section][key]
    note = f"Legacy flat form of `{section}.{key}` (still read; a config may not give both)."
    return Annotated[Union[hint, UnsetType], Meta(description=note, extra_json_schema={"deprecated": True})]


if typing.TYPE_CHECKING:
    Policy = PolicySections
else:
    #: The ``policy`` of a config: the sections, then every key again at the top level (legacy flat form,
    #: UNSET unless given), so a flat key's errors read ``policy: high: ...`` as they always did.
    Policy = msgspec.defstruct(
        "Policy",
        [(k, _legacy(s, k), UNSET) for k, s in SECTION_OF.items()],
        bases=(PolicySections,),
        module=__name__,
    )
    Policy.__doc__ = inspect.cleandoc(PolicySections.__doc__ or "")


def check_policy_keys(data: Any, where: str) -> None:
    """A policy mapping's keys beyond what the schema says: a key given both flat and in its section,
    or put in another section, is a :class:`ConfigError` that names it."""
    if not isinstance(data, dict):
        return
    for section in SECTIONS:
        inner = data.get(section)
        if not isinstance(inner, dict):
            continue
        for key in inner:
            if key in data:
                raise ConfigError(
                    f"{where}: {key}: given twice, at the top of the policy (the legacy flat form) "
                    f"and as {section}.{key}: keep one"
                )
            home = SECTION_OF.get(key) if isinstance(key, str) else None
            if home is not None and home != section:
                raise ConfigError(f"{where}: {section}.{key}: {key} belongs in the {home!r} section")


def legacy_keys(policy: Any) -> Dict[str, Any]:
    """The flat (legacy) keys a converted :data:`Policy` was given, by name."""
    return {k: v for k in SECTION_OF if (v := getattr(policy, k, UNSET)) is not UNSET}
