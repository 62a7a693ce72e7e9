"""routecore.routers.metrics_report: the report of plain decision-log records."""

from __future__ import annotations

import pytest

from routecore.routers.metrics_report import report


def _record(confidence: float, ok: bool, route: str = "A") -> dict:
    return {
        "kind": "route",
        "action": "route",
        "route": route,
        "tier": "high",
        "confidence": confidence,
        "latency_ms": 1.0,
        "feedback": {"success": ok},
    }


def test_reliability_table_and_ece():
    recs = [_record(c, ok) for c, ok in [(0.95, True), (0.92, True), (0.91, False), (0.15, False)]]
    rel = report(recs).reliability
    assert [b.n for b in rel.bins] == [1, 3] and (rel.bins[1].lo, rel.bins[1].hi) == (0.9, 1.0)
    top = rel.bins[1]
    assert top.mean_confidence == pytest.approx((0.95 + 0.92 + 0.91) / 3)
    assert top.success_rate == pytest.approx(2 / 3)
    assert rel.ece == pytest.approx(0.25 * 0.15 + 0.75 * abs(2 / 3 - (0.95 + 0.92 + 0.91) / 3), abs=1e-6)
    empty = report([])
    assert empty.routes.accuracy is None and empty.routes.figures is None and empty.reliability.ece is None
    assert empty.to_dict()["routes"]["routed_share"] is None  # every figure named, none measured


def test_route_feedback_names_the_truth_and_its_json_form_is_flat():
    recs = [
        {**_record(0.9, True), "feedback": {"route": "A"}},
        {**_record(0.8, True), "feedback": {"route": "B"}},  # routed to A, B was right
        {**_record(0.3, True), "action": "none", "route": None, "feedback": {"route": None}},
        _record(0.5, True),  # success only: no route truth
    ]
    r = report(recs).routes
    assert (r.decisions, r.with_feedback, r.accuracy) == (4, 3, pytest.approx(2 / 3, abs=1e-6))
    assert r.figures is not None and r.figures.routed_share == pytest.approx(2 / 3)
    assert r.to_dict()["routed_accuracy"] == 0.5 and r.to_dict()["none_rate"] == pytest.approx(
        1 / 3, abs=1e-6
    )
    assert set(report(recs).latency_by_route) == {"A", "none"}
