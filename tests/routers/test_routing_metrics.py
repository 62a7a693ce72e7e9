"""RoutingMetrics: the sink a router calls for every decision, feedback, the report
(route accuracy, tool precision/recall, knowledge accuracy, latency by route, the
reliability table) and the same report from a JSONL decision log."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from routecore import RoutingMetrics
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.examples import __file__ as examples
from routecore.routers.knowledge import KnowledgeRouter
from routecore.routers.metrics_report import KnowledgeFeedback

QUERIES = [
    "le serveur de production est en panne depuis ce matin",
    "comment configurer le VPN ?",
    "what is the escalation path for a P1 on the billing platform",
    "who painted the mona lisa",
]


def test_route_decisions_against_feedback(it_ops_router, tmp_path):
    m = RoutingMetrics(log=tmp_path / "logs" / "decisions.jsonl")
    it_ops_router.metrics = m
    try:
        ds = [it_ops_router.route(q) for q in QUERIES] + it_ops_router.route_batch(QUERIES[:2])
    finally:
        it_ops_router.metrics = None
    assert len(m.records()) == 6
    # The truth: each decision's own route for the first three, out of scope for the last.
    truth = [d.route if d.action == "route" else "INCIDENT" for d in ds[:3]] + [None]
    for d, t in zip(ds, truth):
        m.feedback(d, route=t)
    r = m.report().routes
    judged = list(zip(ds[:4], truth))
    right = sum((d.action == "route" and d.route == t) if t else d.action != "route" for d, t in judged)
    routed = [d for d, _ in judged if d.action == "route"]
    assert r.decisions == 6 and r.with_feedback == 4 and r.figures is not None
    assert r.accuracy == pytest.approx(right / 4)
    assert r.figures.routed_share == pytest.approx(len(routed) / 4)
    assert r.figures.clarify_rate == pytest.approx(sum(d.action == "clarify" for d, _ in judged) / 4)
    assert r.to_dict()["routed_share"] == pytest.approx(len(routed) / 4)  # the JSON form: flat
    rep = m.report()
    assert sum(v.n for v in rep.latency_by_route.values()) == 6
    assert rep.reliability.n == 4 and sum(b.n for b in rep.reliability.bins) == 4
    # The log holds every record and feedback line; read back, it gives the same report.
    lines = (tmp_path / "logs" / "decisions.jsonl").read_text().splitlines()
    assert [json.loads(x)["type"] for x in lines].count("feedback") == 4
    assert RoutingMetrics.from_log(tmp_path / "logs" / "decisions.jsonl").report() == rep
    m.close()
    with m:  # closed, then reopened by the next line written
        m.feedback(ds[4], success=True)
    assert len((tmp_path / "logs" / "decisions.jsonl").read_text().splitlines()) == len(lines) + 1


def test_tool_precision_recall_and_no_tool(tools_router):
    m = RoutingMetrics()
    tools_router.metrics = m
    try:
        logs = tools_router.tools("device logs")
        weather = tools_router.tools("what's the weather in Paris")
    finally:
        tools_router.metrics = None
    offered = [t.name for t in logs.tools if t.reason.code != "core"]
    assert offered and weather.no_tool
    m.feedback(logs, tools=[offered[0], "not_offered"])
    m.feedback(weather, tools=[])
    r = m.report().tools
    assert (
        r.with_feedback == 2
        and r.precision == pytest.approx(1 / len(offered), abs=1e-6)  # rounded to 6 places
        and r.recall == pytest.approx(0.5)
    )
    assert r.no_tool_rows == 1 and r.no_tool_right == 1.0


def test_knowledge_selections(encoder):
    m = RoutingMetrics()
    kr = KnowledgeRouter.from_config(Path(examples).parent / "knowledge.yaml", encoder=encoder, metrics=m)
    sel = kr.collections("what is the procedure to restart the Kafka brokers")
    m.feedback(sel, collections=[sel.names[0]], success=True)
    other = kr.collections("combien de jours de congé maternité")
    m.feedback(other, collections=["no_such_collection"])
    r = m.report()
    assert r.knowledge == KnowledgeFeedback(selections=2, with_feedback=2, accuracy=0.5, top1_accuracy=0.5)
    assert r.reliability.n == 2 and kr.router.metrics is None  # the inner router records nothing


def test_bad_feedback_logs_and_sinks(it_ops_router, tmp_path, caplog):
    m = RoutingMetrics()
    d = it_ops_router.route(QUERIES[0])
    with pytest.raises(InvalidArgumentError, match="did not record"):
        m.feedback(d, route="INCIDENT")
    rid = m.record(d)
    with pytest.raises(InvalidArgumentError, match="needs route="):
        m.feedback(rid)
    m.feedback(rid, route=None)
    with pytest.raises(InvalidArgumentError):
        m.record("not a decision")
    with pytest.raises(InvalidArgumentError):
        RoutingMetrics(keep=0)
    bad = tmp_path / "bad.jsonl"
    good = '{"type": "decision", "id": "x", "kind": "tools", "tools": [], "no_tool": true, "latency_ms": 1}'
    bad.write_text(good + "\nnot json\n")
    with pytest.raises(ConfigError, match="bad.jsonl:2"):
        RoutingMetrics.from_log(bad)
    bad.write_text(good + '\n{"type": "decision", "id": "y", "kind": "route", "route": "A"}\n')
    with pytest.raises(ConfigError, match="bad.jsonl:2: a route record without action, tier, confidence"):
        RoutingMetrics.from_log(bad)  # not a KeyError in report()
    bad.write_text('{"type": "decision", "id": "z", "kind": "guess"}\n')
    with pytest.raises(ConfigError, match="unknown kind 'guess'"):
        RoutingMetrics.from_log(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        RoutingMetrics.from_log(tmp_path / "missing.jsonl")

    def broken(_):
        raise OSError("disk full")

    it_ops_router.metrics = broken
    try:
        with caplog.at_level(logging.WARNING, logger="routecore"):
            assert it_ops_router.route(QUERIES[1]).action  # the decision is still returned
    finally:
        it_ops_router.metrics = None
    assert "disk full" in caplog.text


def test_eval_reads_a_decision_log(it_ops_router, tmp_path):
    log = tmp_path / "d.jsonl"
    m = RoutingMetrics(log=log)
    for q in QUERIES:
        d = it_ops_router.route(q)
        m.record(d)
        m.feedback(d, route=d.route if d.action == "route" else None)
    p = subprocess.run(
        [sys.executable, "-m", "routecore", "eval", "--log", str(log), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got == m.report().to_dict() and got["routes"]["accuracy"] == 1.0
    text = subprocess.run(
        [sys.executable, "-m", "routecore", "eval", "--log", str(log)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert text.returncode == 0 and "reliability: n=4" in text.stdout
    none = subprocess.run(
        [sys.executable, "-m", "routecore", "eval"], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert none.returncode != 0 and "--log" in (none.stderr + none.stdout)
