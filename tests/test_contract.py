"""The contract of every router other than Router (issue 35 items 1 and 2), as properties.

ContextRouter, KnowledgeRouter, LLMToolRouter and Cascade each have a call, a batch call
and an async call. For any string (lone surrogates included), an encoder that fails and
an LLM that fails or answers names it does not have, nothing but a RoutecoreError
escapes, and each degrades the way docs/routers.md says. Crafted-vector encoders
(tests/stubs.py: a text with a lone surrogate cannot even be hashed by it, as no real
tokenizer can read one) keep these fast.
"""

from __future__ import annotations

import asyncio
import json
import threading
from functools import lru_cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore import (
    Cascade,
    Context,
    ContextRouter,
    KnowledgeRouter,
    KnowledgeSelection,
    LLMToolRouter,
    Router,
    RoutingMetrics,
    ToolBelt,
    ToolRouting,
)
from routecore.config.specs import RouteSpec, ToolSpec
from routecore.decide.conversation import routing_text
from routecore.decision import REASON_CODES, Decision
from routecore.errors import InvalidArgumentError, LLMError, RoutecoreError
from routecore.llm.llm import LLMChoice
from routecore.routers.context import CONTEXT_REASONS
from routecore.routers.knowledge import KNOWLEDGE_REASONS
from routecore.routers.tool_routing import TOOL_ROUTING_REASONS
from stubs import ANY_TEXT, CONTRACT_PROPS, StubEncoder, manual, mix, unit

TEXT, PROPS = ANY_TEXT, CONTRACT_PROPS

EXEMPLARS = {
    "a1": unit(0),
    "a2": mix(a0=0.95),
    "b1": unit(1),
    "b2": mix(a1=0.95),
    "low": unit(2),
    "high": unit(3),
    "restart a service": unit(4),
    "read the logs": unit(5),
}
ROUTES = (RouteSpec("A", ("a1", "a2")), RouteSpec("B", ("b1", "b2")))
TOOLS = (
    ToolSpec("restart", "restart a service"),
    ToolSpec("logs", "read the logs"),
    ToolSpec("search", "search the docs", core=True),
)


def readable(q: str) -> bool:
    """Whether anything of ``q`` is left to encode (lone surrogates and pictographs are not read)."""
    return bool(q.strip()) and bool(routing_text(q)[0].strip())


class StubLLM:
    """The LLM fallback of a Router: answers ``self.answer``, or raises when it is an exception."""

    def __init__(self) -> None:
        self.answer: object = "A"
        self.calls = 0

    def choose(self, request):
        self.calls += 1
        if isinstance(self.answer, BaseException):
            raise self.answer
        return LLMChoice(str(self.answer))


class StubClient:
    """The chat client of an LLMToolRouter: ``post`` answers ``self.answer`` as a chat completion."""

    model, temperature, max_tokens = "m", 0.0, None

    def __init__(self) -> None:
        self.answer: object = '<tool_selection>{"selected_tools": ["logs"]}</tool_selection>'

    def post(self, body):
        if isinstance(self.answer, BaseException):
            raise self.answer
        return json.dumps({"choices": [{"message": {"content": self.answer}}]})

    def close(self) -> None:
        pass


@lru_cache(maxsize=None)
def world():
    """Every router, once: on shared stub encoders and stub LLMs that each test sets and puts back."""
    enc = StubEncoder(EXEMPLARS)
    llm = StubLLM()
    layers = {
        "intent": Router(ROUTES, encoder=enc, policy=manual(low_action="none")),
        "urgency": Router(
            (RouteSpec("low", ("low",)), RouteSpec("high", ("high",))),
            encoder=enc,
            policy=manual(low_action="none"),
        ),
    }
    context = ContextRouter(layers, exhaustive=["urgency"])
    knowledge = KnowledgeRouter(Router(ROUTES, encoder=enc, policy=manual(), llm=llm))
    tools_router = Router(tools=TOOLS, encoder=enc, policy=manual(tool_threshold=0.5))
    client = StubClient()
    llm_tools = LLMToolRouter(tools_router, client=client, mode="llm")  # every tool a candidate
    semantic_tools = LLMToolRouter(tools_router, mode="semantic")
    fast_enc = StubEncoder(EXEMPLARS, "stub:fast")
    cascade = Cascade(
        Router(ROUTES, encoder=fast_enc, policy=manual(low_action="none")),
        Router(ROUTES, encoder=enc, policy=manual(), llm=llm),
    )
    return enc, fast_enc, llm, client, context, knowledge, llm_tools, semantic_tools, cascade


@pytest.fixture()
def w():
    """The routers, with every stub put back after the test."""
    enc, fast_enc, llm, client, *_ = got = world()
    yield got
    enc.fail = fast_enc.fail = False
    llm.answer, client.answer = "A", '<tool_selection>{"selected_tools": ["logs"]}</tool_selection>'


def round_trip(cls, result):
    """``result`` through ``to_dict`` (JSON-ready) and back through ``cls.from_dict``."""
    json.dumps(result.to_dict())
    return cls.from_dict(result.to_dict())


def all_calls(call, batch, acall, abatch, q):
    """The result of ``q`` through the call, the batch call and the async calls (all equal in kind)."""
    one = call(q)
    many = batch([q, "a1"])
    a_one = asyncio.run(acall(q))
    a_many = asyncio.run(abatch([q]))
    assert len(many) == 2 and len(a_many) == 1
    return [one, many[0], a_one, a_many[0]]


# -- ContextRouter -----------------------------------------------------------------------------------


@PROPS
@given(q=TEXT, fail=st.booleans())
def test_context_router_any_text_and_a_failing_encoder(q, fail):
    enc, *_, context, _, _, _, _ = world()
    enc.fail = fail
    try:
        got = all_calls(context.detect, context.detect_batch, context.adetect, context.adetect_batch, q)
    finally:
        enc.fail = False
    for c in got:
        assert isinstance(c, Context) and c.reason.code in CONTEXT_REASONS and c.query == q
        assert set(c.layers) == {"intent", "urgency"}
        want = "empty_query" if not readable(q) else ("error" if fail else "context")
        assert c.reason.code == want, (c.reason, q)
        for r in c.layers.values():
            assert r.decision.reason.code in REASON_CODES
            if want == "error":  # each layer degraded as Router.route does (no LLM: an error decision)
                assert (r.decision.action, r.label, r.decision.reason.code) == ("error", None, "error")
            if want == "empty_query":
                assert r.decision.reason.code == "empty_query"
        if want == "context":  # the exhaustive layer names a label whatever its decision
            assert c.label("urgency") in ("low", "high")
        assert any(a.kind == "invalid_text" for a in c.alerts) == (q != q.encode("utf-8", "ignore").decode())
        assert round_trip(Context, c).to_dict() == c.to_dict()


def test_context_router_reports_to_its_metrics_and_refuses_non_text(w):
    *_, context, _, _, _, _ = w
    m = RoutingMetrics()
    context.metrics = m
    try:
        context.detect("a1")
        context.detect_batch(["b1", "\ud800"])
        asyncio.run(context.adetect("low"))
    finally:
        context.metrics = None
    recs = m.records()
    assert [r["kind"] for r in recs] == ["context"] * 4
    enc = w[0]
    before = enc.calls
    batch = context.detect_batch(["a1", "", "b1", "high"])
    assert enc.calls == before + 1  # one batched encoder call for every readable query
    assert [c.to_dict()["layers"] for c in batch] == [
        context.detect(q).to_dict()["layers"] for q in ["a1", "", "b1", "high"]
    ]
    assert recs[0]["labels"] == {"intent": "A", "urgency": context.detect("a1").label("urgency")}
    with pytest.raises(InvalidArgumentError):
        context.detect(b"a1")
    with pytest.raises(InvalidArgumentError):
        context.detect_batch("a1")


# -- KnowledgeRouter ---------------------------------------------------------------------------------


@PROPS
@given(q=TEXT, fail=st.booleans(), answer=st.sampled_from(["A", "B", "wiki", "CLARIFY", "raise"]))
def test_knowledge_router_any_text_a_failing_encoder_and_any_llm_answer(q, fail, answer):
    enc, _, llm, *_ = world()
    kr = world()[5]
    enc.fail, llm.answer = fail, LLMError("down") if answer == "raise" else answer
    try:
        got = all_calls(kr.collections, kr.collections_batch, kr.acollections, kr.acollections_batch, q)
    finally:
        enc.fail, llm.answer = False, "A"
    for s in got:
        assert isinstance(s, KnowledgeSelection) and s.reason.code in KNOWLEDGE_REASONS
        assert set(s.names) <= {"A", "B"} and sum(p for _, p in s.collections) == pytest.approx(1.0)
        if not readable(q):
            assert (s.source, s.reason.code) == ("fallback", "empty_query")
        elif fail and answer in ("A", "B"):  # the encoder failed: the LLM's collection, checked, alone
            assert (s.source, s.collections) == ("llm", ((answer, 1.0),))
        elif fail:  # the LLM failed, asked to clarify or named no collection: the fallback, and why
            assert (s.source, s.reason.code, s.names) == ("fallback", "error", ["A", "B"])
        else:
            assert s.source in ("router", "llm", "fallback")
            if s.source == "llm":
                assert s.names[0] == answer
        assert round_trip(KnowledgeSelection, s) == s


def test_knowledge_router_names_deprecated_aliases_and_metrics(w):
    *_, kr, _, _, _ = w
    with pytest.warns(DeprecationWarning, match="collections"):
        old = kr.select("a1")
    with pytest.warns(DeprecationWarning, match="collections_batch"):
        many = kr.select_many(["a1", "b1"])
    assert old == kr.collections("a1") and many == kr.collections_batch(["a1", "b1"])
    assert [s.names[0] for s in many] == ["A", "B"] and many[0].reason.code == "ranked"
    m = RoutingMetrics()
    kr.metrics = m
    try:
        kr.collections_batch(["a1", "", "b1"])
    finally:
        kr.metrics = None
    assert [r["kind"] for r in m.records()] == ["knowledge"] * 3
    enc = w[0]
    before = enc.calls
    kr.collections_batch(["a1", "b1", "a2"])
    assert enc.calls == before + 1  # one batched encoder call
    with pytest.raises(InvalidArgumentError):
        kr.collections(None)


# -- LLMToolRouter -----------------------------------------------------------------------------------

ANSWERS = {
    "good": '<tool_selection>{"selected_tools": ["logs", "format_disk"]}</tool_selection>',
    "unknown": '<tool_selection>{"selected_tools": ["format_disk"]}</tool_selection>',
    "garbage": "no idea",
    "llm_error": LLMError("timed out"),
    "crash": RuntimeError("the caller's client crashed"),
}


@PROPS
@given(q=TEXT, fail=st.booleans(), answer=st.sampled_from(sorted(ANSWERS)))
def test_llm_tool_router_any_text_a_failing_encoder_and_any_llm_answer(q, fail, answer):
    enc, _, _, client, *_ = world()
    r = world()[6]
    enc.fail, client.answer = fail, ANSWERS[answer]
    try:
        got = all_calls(r.choose_tools, r.choose_tools_batch, r.achoose_tools, r.achoose_tools_batch, q)
    finally:
        enc.fail, client.answer = False, ANSWERS["good"]
    for t in got:
        assert isinstance(t, ToolRouting) and t.reason.code in TOOL_ROUTING_REASONS and t.query == q
        assert set(t.tools) <= {"restart", "logs", "search"}  # the LLM's answers are checked
        if not readable(q):
            assert (t.tools, t.reason.code) == (("search",), "empty_query")  # the core tools
        elif answer == "good":  # the unknown name dropped, the encoder or not; the core tool joins
            assert (t.source, t.tools, t.dropped, t.reason.code) == (
                "llm",
                ("logs", "search"),
                ("format_disk",),
                "llm",
            )
        elif fail:  # no encoder and no usable answer: the core tools, and why
            assert (t.source, t.tools, t.reason.code) == ("semantic", ("search",), "error")
        else:  # the semantic belt, and why
            assert (t.source, t.reason.code) == ("semantic", "fallback") and t.fallback
        assert round_trip(ToolRouting, t) == t


@PROPS
@given(q=TEXT, fail=st.booleans())
def test_llm_tool_router_semantic_mode_any_text_and_a_failing_encoder(q, fail):
    enc = world()[0]
    r = world()[7]
    enc.fail = fail
    try:
        got = all_calls(r.choose_tools, r.choose_tools_batch, r.achoose_tools, r.achoose_tools_batch, q)
    finally:
        enc.fail = False
    for t in got:
        want = "empty_query" if not readable(q) else ("error" if fail else "semantic")
        assert t.reason.code == want and t.source == "semantic"
        if want == "semantic":
            assert t.tools == tuple(t.belt.names) and isinstance(t.belt, ToolBelt)
        assert round_trip(ToolRouting, t) == t


def test_llm_tool_router_names_the_alias_and_metrics(w):
    *_, r, _, _ = w
    with pytest.warns(DeprecationWarning, match="choose_tools"):
        old = r.select("read the logs")
    assert old.tools == r.choose_tools("read the logs").tools == ("logs", "search")  # and the core tool
    m = RoutingMetrics()
    r.metrics = m
    try:
        r.choose_tools_batch(["read the logs", "restart a service"])
    finally:
        r.metrics = None
    recs = m.records()
    assert [(x["kind"], x["tools"], x["source"]) for x in recs] == [("tools", ["logs"], "llm")] * 2
    enc = w[0]
    before = enc.calls
    got = r.choose_tools_batch(["read the logs", "", "restart a service"])
    assert enc.calls == before + 1  # one batched encoder call, then each query's LLM call
    one = [r.choose_tools(q) for q in ["read the logs", "", "restart a service"]]
    assert [(t.tools, t.source, t.reason, t.dropped) for t in got] == [
        (t.tools, t.source, t.reason, t.dropped) for t in one
    ]
    with pytest.raises(InvalidArgumentError):
        r.choose_tools(3)


# -- Cascade -------------------------------------------------------------------------------------------


@PROPS
@given(q=TEXT, fast_fails=st.booleans(), strong_fails=st.booleans(), answer=st.sampled_from(["B", "wiki"]))
def test_cascade_any_text_and_failing_encoders(q, fast_fails, strong_fails, answer):
    enc, fast_enc, llm, *_ = world()
    c = world()[8]
    fast_enc.fail, enc.fail, llm.answer = fast_fails, strong_fails, answer
    try:
        got = all_calls(c.route, c.route_batch, c.aroute, c.aroute_batch, q)
    finally:
        fast_enc.fail, enc.fail, llm.answer = False, False, "A"
    for d in got:
        assert isinstance(d, Decision) and d.reason.code in REASON_CODES
        served = [a.data["served_by"] for a in d.alerts if a.kind == "cascade"]
        if not readable(q):
            assert (d.action, d.reason.code, served) == ("none", "empty_query", ["strong"])
        elif fast_fails and strong_fails:  # as Router.route: the strong router's LLM, checked, else error
            want = ("route", "B") if answer == "B" else ("error", None)
            assert (d.action, d.route) == want and served == ["strong"]
        elif fast_fails:
            assert served == ["strong"] and d.action != "error"
        assert round_trip(Decision, d).to_dict() == d.to_dict()


def test_cascade_counts_under_a_lock_batches_and_reports(w):
    *_, c = w
    c.served = {"fast": 0, "strong": 0}
    m = RoutingMetrics()
    c.metrics = m
    try:
        ds = c.route_batch(["a1", "low", "b1"], previous=["A", None, "B"])
        assert [d.route for d in ds[::2]] == ["A", "B"] and len(ds) == 3
        assert [d.to_dict() for d in ds] == [
            c.route(q, previous=p).to_dict() | {"timings": d.to_dict()["timings"]}
            for q, p, d in zip(["a1", "low", "b1"], ["A", None, "B"], ds)
        ]

        def work():
            for _ in range(50):
                c.route("a1")

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        c.metrics = None
    assert sum(c.served.values()) == 6 + 200 and len(m.records()) == 6 + 200
    assert 0 < c.fast_share < 1
    with pytest.raises(RoutecoreError, match="vectors"):
        c.route_batch(["a1"], vectors=[[0.0]])
    with pytest.raises(InvalidArgumentError):
        c.route_batch("a1")
