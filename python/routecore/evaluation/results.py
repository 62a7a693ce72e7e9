"""What ``routecore eval`` measured, as typed results: :class:`RouteEval` for routes and
:class:`ToolEval` for tool selection. Each has the JSON form that ``routecore eval --json`` prints
and ``results.json`` holds (``to_dict``); the per-query predictions of a routes evaluation
(:class:`Prediction`) go to ``predictions.jsonl`` instead.

The metric functions themselves are :mod:`routecore.evaluation.metrics`; the decision figures
(routed share, precision among routed, confidently wrong, clarify and ``none`` shares, raw top-1)
are :class:`routecore.decide.figures.DecisionFigures` and the reliability table
:class:`routecore.decide.figures.Reliability`, as everywhere else.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from routecore.decide.figures import DecisionFigures, Reliability
from routecore.decide.fitted import Fitted


@dataclass(frozen=True)
class Scores:
    """Precision, recall and F1 of one label (or of out-of-scope detection), with its support."""

    precision: float
    recall: float
    f1: float
    support: int

    @classmethod
    def of(cls, d: Mapping[str, float]) -> Scores:
        return cls(float(d["precision"]), float(d["recall"]), float(d["f1"]), int(d["support"]))


@dataclass(frozen=True)
class Latency:
    """Milliseconds per query: percentiles and mean."""

    p50: float
    p95: float
    p99: float
    mean: float

    @classmethod
    def of(cls, d: Mapping[str, float]) -> Latency | None:
        return cls(d["p50"], d["p95"], d["p99"], d["mean"]) if d else None


@dataclass(frozen=True)
class CoveragePoint:
    """The accuracy of the most confident ``coverage`` share of queries."""

    coverage: float
    accuracy: float


@dataclass(frozen=True)
class LanguageScore:
    """The queries of one language (a row's ``language``) and the share decided right."""

    n: int
    accuracy: float


@dataclass(frozen=True)
class Prediction:
    """One query of a routes evaluation: what the router did with it."""

    text: str
    label: str
    pred: str | None  # the route, None for ``none``, ``"CLARIFY"`` for a question
    action: str
    tier: str
    confidence: float


@dataclass(frozen=True)
class RouteEval:
    """A router's decisions on a labelled set (:func:`routecore.evaluation.runner.evaluate_routes`).

    ``accuracy`` counts a declined out-of-scope query as right; ``in_scope_accuracy`` only the
    in-scope ones (a declined one is wrong). ``confusion``: gold rows over ``labels`` (plus the
    out-of-scope label when the set has one, whose column counts the declined queries), the predicted
    columns alike, and a last column for every other prediction (``CLARIFY``; declined ones too when
    the set has no out-of-scope label)."""

    n: int
    accuracy: float
    macro_f1: float
    in_scope_accuracy: float
    per_route: Mapping[str, Scores]
    top_confusions: tuple[tuple[str, str, int], ...]
    labels: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]
    latency_ms: Latency | None
    calibration: Reliability
    coverage_curve: tuple[CoveragePoint, ...]
    decisions: DecisionFigures
    llm_fallback_rate: float
    continuation_accuracy: float | None = None
    oos: Scores | None = None
    by_language: Mapping[str, LanguageScore] = field(default_factory=dict)
    #: ``prior``, ``zero-label``, ``fitted`` or ``manual``: where the router's numbers came from.
    calibrated: str | None = None
    fit: Fitted | None = None
    predictions: tuple[Prediction, ...] = ()

    @property
    def clarification_rate(self) -> float:
        """The share of queries clarified (``decisions.clarify_rate``)."""
        return self.decisions.clarify_rate

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``routecore eval --json``), without the per-query predictions."""
        out: dict[str, Any] = {
            "n": self.n,
            "accuracy": self.accuracy,
            "macro_f1": self.macro_f1,
            "in_scope_accuracy": self.in_scope_accuracy,
            "per_route": {k: asdict(v) for k, v in self.per_route.items()},
            "top_confusions": [list(c) for c in self.top_confusions],
            "labels": list(self.labels),
            "confusion": [list(r) for r in self.confusion],
            "latency_ms": asdict(self.latency_ms) if self.latency_ms is not None else {},
            "calibration": self.calibration.to_dict(),
            "coverage_curve": [asdict(p) for p in self.coverage_curve],
        }
        if self.oos is not None:
            out["oos"] = asdict(self.oos)
        if self.by_language:
            out["by_language"] = {k: asdict(v) for k, v in self.by_language.items()}
        return out | {
            "clarification_rate": self.clarification_rate,
            "llm_fallback_rate": self.llm_fallback_rate,
            "continuation_accuracy": self.continuation_accuracy,
            "decisions": self.decisions.to_dict(),
            "calibrated": self.calibrated,
            "fit": self.fit.to_dict() if self.fit is not None else None,
        }


@dataclass(frozen=True)
class ToolEval:
    """Tool selection on a labelled set (:func:`routecore.evaluation.tool_eval.evaluate_tools`).

    Rows with gold tools: ``recall`` / ``precision`` at each k, ``mrr`` and ``no_tool_on_relevant``
    (the belt said no tool fits); rows with several: ``all_gold`` at each k and
    ``all_gold_in_belt``; rows with none: ``no_tool_precision`` / ``no_tool_recall``.
    ``auroc_top_score``: the best tool's score between rows with and without a right tool. A
    figure is None when the set has no row it applies to."""

    n: int
    n_relevant: int
    n_no_tool: int
    n_multi: int
    recall: Mapping[int, float] = field(default_factory=dict)
    precision: Mapping[int, float] = field(default_factory=dict)
    mrr: float | None = None
    no_tool_on_relevant: float | None = None
    all_gold: Mapping[int, float] = field(default_factory=dict)
    all_gold_in_belt: float | None = None
    no_tool_precision: float | None = None
    no_tool_recall: float | None = None
    auroc_top_score: float | None = None
    latency_ms: Latency | None = None

    @classmethod
    def of(cls, n: int, metrics: Mapping[str, Any], ks: Sequence[int], latency: Latency | None) -> ToolEval:
        """From :func:`routecore.evaluation.metrics.tool_shape_metrics`'s figures."""

        def at(name: str) -> dict[int, float]:
            return {k: metrics[f"{name}@{k}"] for k in ks if f"{name}@{k}" in metrics}

        return cls(
            n=n,
            n_relevant=metrics["n_relevant"],
            n_no_tool=metrics["n_no_tool"],
            n_multi=metrics["n_multi"],
            recall=at("recall"),
            precision=at("precision"),
            mrr=metrics.get("mrr"),
            no_tool_on_relevant=metrics.get("no_tool_on_relevant"),
            all_gold=at("all_gold"),
            all_gold_in_belt=metrics.get("all_gold_in_belt"),
            no_tool_precision=metrics.get("no_tool_precision"),
            no_tool_recall=metrics.get("no_tool_recall"),
            auroc_top_score=metrics.get("auroc_top_score"),
            latency_ms=latency,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``routecore eval --tools --json``): ``recall@k`` and the like flat; the
        figures a set has no row for are left out."""
        out: dict[str, Any] = {"n": self.n, "n_relevant": self.n_relevant, "n_no_tool": self.n_no_tool}
        out["n_multi"] = self.n_multi
        for k in self.recall:
            out[f"recall@{k}"], out[f"precision@{k}"] = self.recall[k], self.precision[k]
        for name in ("mrr", "no_tool_on_relevant"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out.update({f"all_gold@{k}": v for k, v in self.all_gold.items()})
        for name in ("all_gold_in_belt", "no_tool_precision", "no_tool_recall"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out["auroc_top_score"] = self.auroc_top_score
        out["latency_ms"] = asdict(self.latency_ms) if self.latency_ms is not None else {}
        return out
