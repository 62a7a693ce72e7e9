"""What ``routecore fit`` fitted, as a router keeps it (``Router.fitted``) and its bundle saves it.

:class:`RouteFit` is a routes fit (:func:`routecore.evaluation.runner.fit_router`): the cosine
policy's numbers, the head's cut and tiers, and the routed cut with the decision figures it gave
on validation (:class:`RoutedCut`). :class:`ToolFit` is a tools fit
(:func:`routecore.evaluation.tool_eval.fit_tools`): the lexical form and weight. Each has a JSON
form (``to_dict``, what ``routecore fit --json`` prints and ``bundle.json`` holds) and reads it
back (:func:`fitted_from_dict`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Union

from routecore.decide.figures import DecisionFigures
from routecore.errors import ConfigError


def _float(d: Mapping[str, Any], key: str, where: str) -> float:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ConfigError(f"{where}: {key!r} must be a number, got {v!r}")
    return float(v)


def _opt_float(d: Mapping[str, Any], key: str, where: str) -> float | None:
    return None if d.get(key) is None else _float(d, key, where)


def _numbers(v: Any, key: str, where: str) -> dict[str, float]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ConfigError(f"{where}: {key!r} must map names to numbers, got {v!r}")
    return {str(k): _float(v, k, f"{where}: {key}") for k in v}


@dataclass(frozen=True)
class RoutedCut:
    """The ``medium`` cut a fit installed, the precision among routed it asked for, and the
    figures of the router's decisions on the validation split at that cut (``figures.n`` is 0 for a
    fit recorded before bundles kept the counts: its JSON form then leaves them out)."""

    medium: float
    target_precision: float
    figures: DecisionFigures

    def to_dict(self) -> dict[str, Any]:
        f = self.figures
        counts = {"n": f.n, "right_of_routed": f.right_of_routed} if f.n else {}
        return {"medium": self.medium, "target_precision": self.target_precision, **f.to_dict(), **counts}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "fitted.decisions") -> RoutedCut:
        if not isinstance(d, Mapping):
            raise ConfigError(f"{where}: expected an object, got {d!r}")
        figures = DecisionFigures(
            n=int(d.get("n", 0)),
            routed_share=_float(d, "routed_share", where),
            routed_accuracy=_opt_float(d, "routed_accuracy", where),
            confident_wrong_rate=_float(d, "confident_wrong_rate", where),
            clarify_rate=_float(d, "clarify_rate", where),
            # shares add up to 1: a fit recorded before it kept the none share still has it
            none_rate=_float(d, "none_rate", where)
            if "none_rate" in d
            else max(0.0, 1.0 - _float(d, "routed_share", where) - _float(d, "clarify_rate", where)),
            right_of_routed=int(d.get("right_of_routed", 0)),
            raw_top1_accuracy=_opt_float(d, "raw_top1_accuracy", where),
            dense_top1_accuracy=_opt_float(d, "dense_top1_accuracy", where),
        )
        return cls(_float(d, "medium", where), _float(d, "target_precision", where), figures)


@dataclass(frozen=True)
class FitResult:
    """What the cosine policy's fit chose on validation scores
    (:func:`routecore.evaluation.calibrate.fit`): the objective and its value there, ``min_score``
    (and per route), the softmax temperature and the high tier."""

    objective: str
    value: float
    min_score: float
    per_route_min: Mapping[str, float]
    temperature: float
    high: float
    margin: float


@dataclass(frozen=True)
class RouteFit(FitResult):
    """A routes fit on a validation split: the cosine policy's :class:`FitResult`, the head's cut and
    tiers when the router has a head, and the routed cut (``decisions``)."""

    head_threshold: float | None = None
    #: ``high`` / ``margin`` and the previous route's pair fitted on the head's probabilities
    #: (empty when too few validation rows passed, or without a head).
    head_tiers: Mapping[str, float] = field(default_factory=dict)
    decisions: RoutedCut | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "objective": self.objective,
            "value": self.value,
            "min_score": self.min_score,
            "per_route_min": dict(self.per_route_min),
            "temperature": self.temperature,
            "high": self.high,
            "margin": self.margin,
            "head_threshold": self.head_threshold,
            "head_tiers": dict(self.head_tiers) or None,
            "decisions": self.decisions.to_dict() if self.decisions is not None else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "fitted") -> RouteFit:
        if not isinstance(d.get("objective"), str):
            raise ConfigError(f"{where}: 'objective' must be a string, got {d.get('objective')!r}")
        dec = d.get("decisions")
        return cls(
            objective=d["objective"],
            value=_float(d, "value", where),
            min_score=_float(d, "min_score", where),
            temperature=_float(d, "temperature", where),
            high=_float(d, "high", where),
            margin=_float(d, "margin", where),
            per_route_min=_numbers(d.get("per_route_min"), "per_route_min", where),
            head_threshold=_opt_float(d, "head_threshold", where),
            head_tiers=_numbers(d.get("head_tiers"), "head_tiers", where),
            decisions=RoutedCut.from_dict(dec, f"{where}.decisions") if dec is not None else None,
        )


@dataclass(frozen=True)
class ToolFit:
    """A tools fit: the lexical pass's stemmer, BM25 ``b`` and weight, the validation rows it was
    fitted on, the weight fit's held-out figures (``stats``) and each form's validation top-1.
    ``stemmer`` and ``b`` are None in the fits of bundles written before they were fitted."""

    lexical_weight: float
    stemmer: str | None
    b: float | None
    val_rows: int
    stats: Mapping[str, float] = field(default_factory=dict)
    forms_val_top1: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_lexical_weight": self.lexical_weight,
            "tool_lexical_stemmer": self.stemmer,
            "tool_lexical_b": self.b,
            "val_rows": self.val_rows,
            **self.stats,
            "forms_val_top1": dict(self.forms_val_top1),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "fitted") -> ToolFit:
        own = {"tool_lexical_weight", "tool_lexical_stemmer", "tool_lexical_b", "val_rows", "forms_val_top1"}
        return cls(
            lexical_weight=_float(d, "tool_lexical_weight", where),
            stemmer=None if d.get("tool_lexical_stemmer") is None else str(d["tool_lexical_stemmer"]),
            b=_opt_float(d, "tool_lexical_b", where),
            val_rows=int(_float(d, "val_rows", where)),
            stats={k: _float(d, k, where) for k in d if k not in own},
            forms_val_top1=_numbers(d.get("forms_val_top1"), "forms_val_top1", where),
        )


#: What a fit leaves on a router.
Fitted = Union[RouteFit, ToolFit]


def fitted_from_dict(d: Mapping[str, Any] | None, where: str = "fitted") -> Fitted | None:
    """The fit a bundle saved (``to_dict``'s form), or None for a bundle that holds none.

    Raises :class:`routecore.errors.ConfigError` when it is neither fit's form."""
    if not d:
        return None
    if not isinstance(d, Mapping):
        raise ConfigError(f"{where}: expected an object, got {d!r}")
    if "tool_lexical_weight" in d:
        return ToolFit.from_dict(d, where)
    if "objective" in d:
        return RouteFit.from_dict(d, where)
    raise ConfigError(f"{where}: neither a routes fit ('objective') nor a tools fit ('tool_lexical_weight')")
