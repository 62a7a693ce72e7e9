"""What :class:`~routecore.routers.routing_metrics.RoutingMetrics` reports: :class:`MetricsReport`,
built from plain log records (as ``RoutingMetrics.records`` gives them, or a decision log read back).

Route decisions against their feedback (with the decision figures of ``routecore eval`` and ``fit``),
tool belts, knowledge selections, latency by route, and confidence against success (a reliability
table and its expected calibration error). A rate is None when no record had the feedback it needs.
``to_dict`` is the JSON form ``routecore eval --log --json`` prints, every rate rounded to 6 places.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from routecore.decide.figures import DecisionFigures, Reliability, decision_figures, reliability


@dataclass(frozen=True)
class RouteFeedback:
    """Route decisions: how many, how many got feedback, the share right (a declined query whose
    truth is out of scope is right), and the decision figures of the judged ones (None without any)."""

    decisions: int
    with_feedback: int
    accuracy: float | None
    figures: DecisionFigures | None

    def to_dict(self) -> dict[str, Any]:
        names = ("routed_share", "routed_accuracy", "confident_wrong_rate", "clarify_rate", "none_rate")
        figures = self.figures.to_dict() if self.figures is not None else dict.fromkeys(names)
        return {
            "decisions": self.decisions,
            "with_feedback": self.with_feedback,
            "accuracy": self.accuracy,
            **{k: _round(v) for k, v in figures.items()},
        }


@dataclass(frozen=True)
class ToolFeedback:
    """Tool belts: precision and recall of the offered tools against the ones that were right, and
    how often "no tool fits" was right on the rows where none was."""

    belts: int
    with_feedback: int
    precision: float | None
    recall: float | None
    no_tool_rows: int
    no_tool_right: float | None


@dataclass(frozen=True)
class KnowledgeFeedback:
    """Knowledge selections: any selected collection right, and the first one right."""

    selections: int
    with_feedback: int
    accuracy: float | None
    top1_accuracy: float | None


@dataclass(frozen=True)
class LatencyOf:
    """Latency of one route (or action, or ``tools``): count, p50 and p95 in milliseconds."""

    n: int
    p50_ms: float
    p95_ms: float


@dataclass(frozen=True)
class MetricsReport:
    """Every figure of a set of records (see the module docstring)."""

    records: int
    routes: RouteFeedback
    tools: ToolFeedback
    knowledge: KnowledgeFeedback
    latency_by_route: Mapping[str, LatencyOf]
    reliability: Reliability

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "routes": self.routes.to_dict(),
            "tools": asdict(self.tools),
            "knowledge": asdict(self.knowledge),
            "latency_by_route": {k: asdict(v) for k, v in self.latency_by_route.items()},
            "reliability": self.reliability.to_dict(),
        }


#: Which feedback keys judge each part of a turn (``success`` judges its route only: counted once).
TURN_FEEDBACK = {"route": ("route", "success"), "tools": ("tools",), "knowledge": ("collections",)}


def part_feedback(kind: str, fb: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a turn's feedback ``fb`` that judge its part of ``kind`` (:data:`TURN_FEEDBACK`)."""
    return {k: fb[k] for k in TURN_FEEDBACK.get(kind, ()) if k in fb}


def turn_parts(rec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A turn record's route, tools and knowledge records, each with the feedback that judges it."""
    fb = rec.get("feedback", {})
    out = []
    for kind, part in rec.get("parts", {}).items():
        if "ref" in part:  # recorded on its own by the same metrics, which hold its feedback too
            continue
        mine = part_feedback(kind, fb)
        out.append({**part, "feedback": mine} if mine else dict(part))
    return out


def report(records: Sequence[Mapping[str, Any]]) -> MetricsReport:
    """The report of plain records (as :meth:`RoutingMetrics.records` gives them); a turn's route,
    belt and selection count as the routers' own (:func:`turn_parts`)."""
    flat = [p for r in records for p in (turn_parts(r) if r.get("kind") == "turn" else [r])]
    kinds = {k: [r for r in flat if r.get("kind") == k] for k in ("route", "tools", "knowledge")}
    return MetricsReport(
        records=len(records),
        routes=_routes(kinds["route"]),
        tools=_tools(kinds["tools"]),
        knowledge=_knowledge(kinds["knowledge"]),
        latency_by_route=_latency(kinds["route"] + kinds["tools"]),
        reliability=_reliability(kinds["route"] + kinds["knowledge"]),
    )


def _round(v: float | None) -> float | None:
    return round(v, 6) if v is not None else None


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


def _route_right(r: Mapping[str, Any], truth: Any) -> bool:
    return (
        bool(r["action"] == "route" and r["route"] == truth)
        if truth is not None
        else bool(r["action"] != "route")
    )


def _routes(recs: Sequence[Mapping[str, Any]]) -> RouteFeedback:
    judged = [r for r in recs if "route" in r.get("feedback", {})]
    right = sum(_route_right(r, r["feedback"]["route"]) for r in judged)
    figures = decision_figures(
        [(r["action"], r["route"], r["tier"]) for r in judged], [r["feedback"]["route"] for r in judged]
    )
    return RouteFeedback(len(recs), len(judged), _rate(right, len(judged)), figures if judged else None)


def _tools(recs: Sequence[Mapping[str, Any]]) -> ToolFeedback:
    judged = [r for r in recs if "tools" in r.get("feedback", {})]
    hit = offered = used = 0
    none_right = none_rows = 0
    for r in judged:
        truth, belt = set(r["feedback"]["tools"]), set(r["tools"])
        hit, offered, used = hit + len(truth & belt), offered + len(belt), used + len(truth)
        if not truth:
            none_rows += 1
            none_right += bool(r["no_tool"])
    return ToolFeedback(
        len(recs), len(judged), _rate(hit, offered), _rate(hit, used), none_rows, _rate(none_right, none_rows)
    )


def _knowledge(recs: Sequence[Mapping[str, Any]]) -> KnowledgeFeedback:
    judged = [r for r in recs if "collections" in r.get("feedback", {})]
    anyhit = sum(bool(set(r["collections"]) & set(r["feedback"]["collections"])) for r in judged)
    first = sum(
        bool(r["collections"]) and r["collections"][0] in r["feedback"]["collections"] for r in judged
    )
    return KnowledgeFeedback(len(recs), len(judged), _rate(anyhit, len(judged)), _rate(first, len(judged)))


def _latency(recs: Iterable[Mapping[str, Any]]) -> dict[str, LatencyOf]:
    by: dict[str, list[float]] = {}
    for r in recs:
        key = (
            r["route"]
            if r["kind"] == "route" and r["action"] == "route"
            else (r["action"] if r["kind"] == "route" else "tools")
        )
        by.setdefault(str(key), []).append(r["latency_ms"])
    return {
        k: LatencyOf(len(v), round(float(np.percentile(v, 50)), 3), round(float(np.percentile(v, 95)), 3))
        for k, v in sorted(by.items())
    }


def _outcome(r: Mapping[str, Any]) -> bool | None:
    fb = r.get("feedback", {})
    if "success" in fb:
        return bool(fb["success"])
    if r["kind"] == "route" and "route" in fb:
        return _route_right(r, fb["route"])
    if r["kind"] == "knowledge" and "collections" in fb:
        return bool(r["collections"]) and r["collections"][0] in fb["collections"]
    return None


def _reliability(recs: Iterable[Mapping[str, Any]]) -> Reliability:
    pairs = [(r["confidence"], o) for r in recs if "confidence" in r and (o := _outcome(r)) is not None]
    return reliability([c for c, _ in pairs], [o for _, o in pairs])
