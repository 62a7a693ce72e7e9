"""One call per agent turn (routecore.routers.turn): the context, the route, the tools and the knowledge
collections from one encode, each as its own call with that vector gives it; the contract of
tests/test_contract.py holds (any text, a failing encoder, an LLM that fails or answers a name it does
not have)."""

from __future__ import annotations

import asyncio
import json
from functools import lru_cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore import Router, RoutingMetrics
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.turn import TURN_REASONS, Turn, TurnRouter
from stubs import StubEncoder, manual
from test_contract import EXEMPLARS, PROPS, ROUTES, TEXT, TOOLS, readable, world
from test_contract_llm import ANSWERS, QUERY, check_llm_decision, llm_world


@lru_cache(maxsize=None)
def turns() -> TurnRouter:
    enc, _, _, _, context, knowledge, *_ = world()
    router = Router(ROUTES, TOOLS, encoder=enc, policy=manual(tool_threshold=0.5))
    return TurnRouter(router, context=context, knowledge=knowledge)


@pytest.fixture()
def w():
    """The shared stub world, its encoder working again after the test."""
    yield world()
    world()[0].fail = False


def _same(a, b) -> None:
    """Two results alike but for their timings."""

    def strip(d):
        return {k: strip(v) for k, v in d.items() if k != "timings"} if isinstance(d, dict) else d

    assert strip(a.to_dict()) == strip(b.to_dict())


@PROPS
@given(q=TEXT, fail=st.booleans())
def test_a_turn_for_any_text_and_a_failing_encoder(q, fail):
    t = turns()
    enc = world()[0]
    enc.fail = fail
    before = enc.calls
    try:
        got = [t.turn(q), t.turn_batch([q])[0], asyncio.run(t.aturn(q)), asyncio.run(t.aturn_batch([q]))[0]]
    finally:
        enc.fail = False
    want = "empty_query" if not readable(q) else ("error" if fail else "turn")
    if want == "turn":
        assert enc.calls == before + 4  # one encode per turn, for the four parts
    for x in got:
        assert isinstance(x, Turn) and x.reason.code == want and x.reason.code in TURN_REASONS
        assert (
            x.context is not None
            and x.decision is not None
            and x.belt is not None
            and x.knowledge is not None
        )
        if want == "error":  # each part degraded as its own call does
            assert x.decision.action == "error" and x.context.reason.code == "error"
            assert x.belt.reason.code == "error" and x.belt.names == ["search"]  # the core tool
            assert x.knowledge.source == "fallback" or x.knowledge.source == "llm"
        json.dumps(x.to_dict())
        _same(Turn.from_dict(x.to_dict()), x)
        assert Turn.from_dict(x.to_dict()).timings == x.timings


def test_each_part_is_its_own_call_with_the_one_vector(w):
    t = turns()
    q = "a1 and read the logs"
    got = t.turn(q, previous="B")
    vec = t.encoder.encode_with_stats([q]).embeddings[0]
    _same(got.decision, t.router.route(q, previous="B", vector=vec))
    _same(got.belt, t.router.tools(q, vector=vec))
    _same(got.context, t.context.detect(q, vector=vec))
    _same(got.knowledge, t.knowledge.collections(q, intent=got.context.label("intent"), vector=vec))
    assert got.timings.encode > 0 and got.timings.total > 0


def test_a_batch_is_one_encoder_call_and_each_turn_as_alone(w):
    t = turns()
    enc = world()[0]
    qs, prev = ["a1 and read the logs", "  ", "b1", "a1"], ["B", None, "A", None]
    before = enc.calls
    got = t.turn_batch(qs, previous=prev)
    assert enc.calls == before + 1  # the three with text, in one call (the blank one is the empty turn)
    for q, p, g in zip(qs, prev, got):
        _same(g, t.turn(q, previous=p))
    assert got[1].reason.code == "empty_query" and got[0].timings.encode > 0
    with pytest.raises(InvalidArgumentError, match="one per query"):
        t.turn_batch(qs, previous=["A"])
    with pytest.raises(InvalidArgumentError, match="list of strings"):
        t.turn_batch(["a1", 3])  # type: ignore[list-item]


def test_turn_metrics_and_checks(w, tmp_path):
    t = turns()
    kinds = []
    t.metrics = kinds.append
    try:
        t.turn_batch(["a1", "b1"])
    finally:
        t.metrics = None
    assert [type(k) for k in kinds] == [Turn, Turn]
    m = RoutingMetrics()
    t.metrics = m
    try:
        t.turn("a1")
    finally:
        t.metrics = None
    (rec,) = m.records()
    assert (rec["kind"], rec["route"], rec["collections"][0]) == ("turn", "A", "A")
    # the router and the turn sharing one logged sink: the turn's parts refer to the router's own lines
    shared = RoutingMetrics(log=tmp_path / "decisions.jsonl")
    t.metrics = t.router.metrics = shared
    try:
        shared.feedback(t.turn("a1"), route="A")
    finally:
        t.metrics = t.router.metrics = None
        shared.close()
    assert any("ref" in p for r in shared.records() if r["kind"] == "turn" for p in r["parts"].values())
    assert RoutingMetrics.from_log(tmp_path / "decisions.jsonl").report() == shared.report()
    with pytest.raises(InvalidArgumentError):
        t.turn(None)
    with pytest.raises(ConfigError, match="same encoder"):
        TurnRouter(
            Router(ROUTES, encoder=StubEncoder(EXEMPLARS, "stub:other"), policy=manual()), context=t.context
        )
    with pytest.raises(ConfigError, match="needs"):
        TurnRouter()


@lru_cache(maxsize=None)
def llm_turns() -> TurnRouter:
    """A turn whose route, context layers and knowledge all fall back to one stub LLM."""
    from routecore import KnowledgeRouter

    enc, _, llm, context, _ = llm_world()
    router = Router(ROUTES, TOOLS, encoder=enc, policy=manual(tool_threshold=0.5), llm=llm)
    knowledge = KnowledgeRouter(Router(ROUTES, encoder=enc, policy=manual(), llm=llm))
    return TurnRouter(router, context=context, knowledge=knowledge)


@PROPS
@given(q=QUERY, fail=st.booleans(), answer=st.sampled_from(ANSWERS))
def test_a_turn_with_an_llm_that_fails_or_answers_anything(q, fail, answer):
    """Each part with an LLM degrades as its own call does (tests/test_contract_llm.py): nothing but a
    RoutecoreError escapes, no part takes a name it does not have."""
    t = llm_turns()
    enc, _, llm, _, _ = llm_world()
    enc.fail, llm.answer = fail, answer
    try:
        got = [t.turn(q), t.turn_batch([q])[0], asyncio.run(t.aturn(q)), asyncio.run(t.aturn_batch([q]))[0]]
    finally:
        enc.fail, llm.answer = False, "A"
    want = "empty_query" if not readable(q) else ("error" if fail else "turn")
    for x in got:
        assert isinstance(x, Turn) and x.reason.code == want
        check_llm_decision(x.decision, answer, ("A", "B"), fail)
        for name, names in (("intent", ("A", "B")), ("urgency", ("low", "high"))):
            check_llm_decision(x.context.layers[name].decision, answer, names, fail)
        assert set(x.knowledge.names) <= {"A", "B"}
        if (
            want == "error"
        ):  # the belt: the core tool; knowledge: the LLM's collection, checked, else the fallback
            assert x.belt.reason.code == "error" and x.belt.names == ["search"]
            if answer in ("A", "B"):
                assert (x.knowledge.source, x.knowledge.collections) == ("llm", ((answer, 1.0),))
            else:
                assert (x.knowledge.source, x.knowledge.reason.code) == ("fallback", "error")
        elif x.knowledge.source == "llm":
            assert x.knowledge.names[0] == answer
        _same(Turn.from_dict(x.to_dict()), x)


def test_a_turns_route_is_route_even_where_route_reads_the_query_twice(it_ops_router):
    """A long query (its end read too) and a mistyped one (repaired, and read as typed) are decided as
    ``Router.route`` decides them, not on the turn's one encode of the query as written."""
    t = TurnRouter(it_ops_router)
    long = "x " * 800 + "\n\nle serveur de production est en panne depuis ce matin"
    for q in (long, "le serveur de prodution est en pane depuis ce matin"):
        got, ref = t.turn(q).decision, it_ops_router.route(q)
        assert (got.action, got.route, got.tier, got.query) == (ref.action, ref.route, ref.tier, ref.query)
        assert [a.kind for a in got.alerts] == [a.kind for a in ref.alerts] and ref.alerts
        (batched,) = t.turn_batch([q])
        assert (batched.decision.route, batched.decision.query) == (ref.route, ref.query)


def test_a_turns_belt_is_tools_where_the_belt_repairs_typos(tools_router):
    """The belt reads a mistyped query with its typos of the tools' words repaired, as ``Router.tools`` does,
    and the turn's reason says which part read it otherwise."""
    t = TurnRouter(tools_router)
    q = "restrat the nginx servce"
    got, ref = t.turn(q), tools_router.tools(q)
    assert got.belt is not None and got.belt.names == ref.names and "restart_service" in ref.names
    assert (
        got.reason.message == "every part decided on one embedding; the belt read it with its typos repaired"
    )
    (batched,) = t.turn_batch([q])
    assert batched.belt.names == ref.names and batched.reason == got.reason
    clean = t.turn("restart the nginx service")
    assert clean.reason.message == "every part decided on one embedding"
