"""Every router checks its arguments and constructors alike (a RoutecoreError, never a TypeError or an
AttributeError), and the metrics judge a result the same whichever router gave it."""

from __future__ import annotations

import dataclasses

import pytest

from routecore import Cascade, ContextRouter, KnowledgeRouter, Router, RoutingMetrics, TurnRouter
from routecore.errors import ConfigError, DimensionMismatchError, InvalidArgumentError
from routecore.routers.llm_tools import LLMToolRouter
from stubs import StubEncoder, manual
from test_contract import EXEMPLARS, ROUTES, TOOLS, StubClient, world


def test_bad_arguments_are_routecore_errors():
    enc, _, _, _, context, knowledge, llm_tools, _, cascade = world()
    router = Router(ROUTES, TOOLS, encoder=enc, policy=manual(tool_threshold=0.5))
    with pytest.raises(InvalidArgumentError, match="previous"):
        router.route_batch(["a1", "b1"], previous=5)
    with pytest.raises(InvalidArgumentError, match="clarify must be"):
        router.route("a1", clarify="x")
    routed = router.route("a1")  # not a clarification, or one over routes this router lacks
    with pytest.raises(InvalidArgumentError, match="not 'clarify'"):
        router.route("the first", clarify=dataclasses.replace(routed, action="route"))
    with pytest.raises(InvalidArgumentError, match=r"\['NOPE'\] are not routes"):
        router.route(
            "the first", clarify=dataclasses.replace(routed, action="clarify", candidates=("A", "NOPE"))
        )
    with pytest.raises(InvalidArgumentError, match="threshold"):
        router.tools("a1", threshold="x")
    with pytest.raises(InvalidArgumentError, match="context must be a Context"):
        router.tools("a1", context="x")
    with pytest.raises(DimensionMismatchError):
        knowledge.collections_batch(["a1", "b1"], vectors=5)
    with pytest.raises(DimensionMismatchError):
        llm_tools.choose_tools_batch(["a1", "b1"], vectors=[[1.0, 0.0]])
    with pytest.raises(InvalidArgumentError, match="peer= is not accepted"):
        cascade.route("a1", peer=router.route("a1"))
    with pytest.raises(InvalidArgumentError, match="served"):
        cascade.served = 5
    with pytest.raises(InvalidArgumentError, match="top_k"):
        LLMToolRouter(Router(tools=TOOLS, encoder=enc), mode="semantic").choose_tools("a1", top_k=0)


def test_bad_parts_are_config_errors():
    enc, _, _, _, context, knowledge, *_ = world()
    with pytest.raises(ConfigError, match=r"routes\[0\] must be a RouteSpec"):
        Router([{"name": "A", "utterances": ["a1"]}], encoder=enc)
    with pytest.raises(ConfigError, match="policy must be a Policy"):
        Router(ROUTES, encoder=enc, policy={"medium": 0.5})
    with pytest.raises(ConfigError, match="layer 'x' must be a Router"):
        ContextRouter({"x": 5})
    with pytest.raises(ConfigError, match="must be a Router"):
        KnowledgeRouter("router")
    with pytest.raises(ConfigError, match="config must be a KnowledgeConfig"):
        KnowledgeRouter(Router(ROUTES, encoder=enc), {"top_k": 1})
    with pytest.raises(ConfigError, match="a turn router's router must be a Router"):
        TurnRouter(context)
    with pytest.raises(ConfigError, match="a cascade's fast router must be a Router"):
        Cascade("x", "y")
    with pytest.raises(ConfigError, match="an LLM tool router's router must be a Router"):
        LLMToolRouter("x", mode="semantic")
    assert Router(None, TOOLS, encoder=enc, policy=manual()).route_specs == []


def test_from_config_takes_the_document_itself():
    doc = {"routes": [{"name": "A", "utterances": ["a1", "a2"]}, {"name": "B", "utterances": ["b1"]}]}
    r = Router.from_config(doc, encoder=StubEncoder(EXEMPLARS), policy=manual())
    assert [s.name for s in r.route_specs] == ["A", "B"] and r.route("a1").route == "A"
    with pytest.raises(ConfigError, match=r"config: .*utterance"):
        Router.from_config({"routes": [{"name": "A", "utterance": ["a1"]}]}, encoder=StubEncoder(EXEMPLARS))


def test_a_turns_parts_are_judged_as_the_routers_own():
    enc, _, _, _, context, knowledge, *_ = world()
    router = Router(ROUTES, TOOLS, encoder=enc, policy=manual(tool_threshold=0.5))
    m = RoutingMetrics()
    t = TurnRouter(router, knowledge=knowledge, metrics=m).turn("restart a service")
    m.feedback(t, route="A", tools=["restart"], collections=["A"], success=True)
    rep = m.report()
    assert rep.routes.with_feedback == rep.tools.with_feedback == rep.knowledge.with_feedback == 1
    [rec] = m.records()
    assert "search" not in rec["tools"]  # the core tool is not offered, as in a belt's record
    assert rec["parts"]["tools"]["tools"] == rec["tools"]
    shared = RoutingMetrics()  # one sink for the router and the turn: each part counted once
    both = Router(ROUTES, TOOLS, encoder=enc, policy=manual(tool_threshold=0.5), metrics=shared)
    t2 = TurnRouter(both, metrics=shared).turn("restart a service")
    shared.feedback(t2, route="A", tools=["restart"], success=True)
    rep2 = shared.report()
    assert (rep2.routes.decisions, rep2.tools.belts) == (1, 1)
    assert (rep2.routes.with_feedback, rep2.tools.with_feedback) == (1, 1)
    c = context.detect("a1")
    m.record(c)
    with pytest.raises(InvalidArgumentError, match="Context's layers take no feedback"):
        m.feedback(c, route="A")


def test_tool_routings_count_the_belts_tools_and_work_off_the_metrics():
    enc = world()[0]
    inner = RoutingMetrics()
    tools_router = Router(tools=TOOLS, encoder=enc, policy=manual(tool_threshold=0.5), metrics=inner)
    outer = RoutingMetrics()
    llm_tools = LLMToolRouter(tools_router, client=StubClient(), mode="hybrid", metrics=outer)
    got = llm_tools.choose_tools("read the logs")
    assert inner.records() == []  # its working belts are not the router's decisions
    [rec] = outer.records()
    assert rec["tools"] == [t for t in got.tools if t != "search"]
    assert rec["no_tool"] is (not rec["tools"])  # the core tool alone is no tool, as in a belt's record
    k = world()[5].collections("a1")
    assert RoutingMetrics().record(k) and k.query == "a1"
    sink = RoutingMetrics()
    sink.record(k)
    assert sink.records()[0]["query"] == "a1"


def test_a_turn_takes_the_callers_domains_and_vectors():
    enc, _, _, _, context, knowledge, *_ = world()
    router = Router(ROUTES, TOOLS, encoder=enc, policy=manual(tool_threshold=0.5))
    turns = TurnRouter(router, context=context, knowledge=knowledge)
    v = enc.encode_with_stats(["a1"]).embeddings[0]
    a, b = turns.turn("a1"), turns.turn("a1", vector=v, context_domains=["ops"])
    assert (a.decision.route, a.belt.names) == (b.decision.route, b.belt.names)
    assert b.reason.message == "every part decided on the caller's embedding"
    batch = turns.turn_batch(
        ["a1", "b1"], vectors=enc.encode_with_stats(["a1", "b1"]).embeddings, context_domains=["ops"]
    )
    assert [t.decision.route for t in batch] == [turns.turn(q).decision.route for q in ("a1", "b1")]
    with pytest.raises(DimensionMismatchError):
        turns.turn_batch(["a1", "b1"], vectors=enc.encode_with_stats(["a1"]).embeddings)
    with pytest.raises(InvalidArgumentError, match="context_domains"):
        turns.turn("a1", context_domains="ops")
    seen = []
    real_route, real_tools = router.route, router.tools
    router.route = lambda q, **kw: seen.append(("route", kw["context_domains"])) or real_route(q, **kw)
    router.tools = lambda q, **kw: seen.append(("tools", kw["context_domains"])) or real_tools(q, **kw)
    turns.turn("a1", context_domains=["ops"])
    assert seen == [("route", ("ops",)), ("tools", ("ops",))]  # the caller's domains reach the parts


def test_every_result_has_to_json_and_names():
    import json

    enc, _, _, _, context, knowledge, llm_tools, *_ = world()
    router = Router(ROUTES, TOOLS, encoder=enc, policy=manual(tool_threshold=0.5))
    results = [
        router.route("a1"),
        router.tools("restart a service"),
        context.detect("a1"),
        knowledge.collections("a1"),
        llm_tools.choose_tools("read the logs"),
        TurnRouter(router).turn("a1"),
    ]
    for r in results:
        assert json.loads(r.to_json()) == json.loads(json.dumps(r.to_dict()))
    routing = results[4]
    assert routing.names == list(routing.tools)
    if routing.belt is not None:
        assert routing.to_dict()["belt"] == routing.belt.to_dict()


def test_a_knowledge_selection_carries_its_decisions_alerts():
    knowledge = world()[5]
    sel = knowledge.collections("a1 \ud800")
    assert "invalid_text" in [a.kind for a in sel.alerts]
    assert type(sel).from_dict(sel.to_dict()) == sel
    assert "invalid_text" in [a.kind for a in knowledge.collections_batch(["b1 \ud800", "a1"])[0].alerts]
