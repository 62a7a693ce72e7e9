"""Router's side of the contract (issue 35 item 2; the other routers: tests/test_contract.py).

For any string (lone surrogates included) and an encoder that fails, route(), tools() and
their batch and async calls return a result: a route decision degrades to the LLM or to
``error``, a tool belt to the core tools with reason ``error``. With an LLM fallback that fails,
crashes or answers a name the router does not have, a decision routes only to one of its own routes.
Nothing but a RoutecoreError escapes.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore import Router, ToolBelt
from routecore.config.specs import RouteSpec, ToolSpec
from routecore.decide.policy import CLARIFY
from routecore.decision import REASON_CODES, Decision
from routecore.errors import LLMError
from routecore.llm.llm import LLMChoice
from stubs import ANY_TEXT, CONTRACT_PROPS, StubEncoder, manual, mix, unit
from test_contract import readable

TEXT, PROPS = ANY_TEXT, CONTRACT_PROPS

EXEMPLARS = {
    "a1": unit(0),
    "a2": mix(a0=0.95),
    "b1": unit(1),
    "b2": mix(a1=0.95),
    "restart a service": unit(4),
    "read the logs": unit(5),
    "search the docs": unit(6),
}
ENC = StubEncoder(EXEMPLARS)
ROUTER = Router(
    (RouteSpec("A", ("a1", "a2")), RouteSpec("B", ("b1", "b2"))),
    tools=(
        ToolSpec("restart", "restart a service"),
        ToolSpec("logs", "read the logs"),
        ToolSpec("search", "search the docs", core=True),
    ),
    encoder=ENC,
    policy=manual(low_action="none", tool_threshold=0.5),
)


def every_call(kind: str, q: str) -> list:
    r = ROUTER
    one, batch = (r.route, r.route_batch) if kind == "route" else (r.tools, r.tools_batch)
    aone, abatch = (r.aroute, r.aroute_batch) if kind == "route" else (r.atools, r.atools_batch)
    return [one(q), *batch([q, "a1"]), asyncio.run(aone(q)), *asyncio.run(abatch([q]))]


@PROPS
@given(q=TEXT, fail=st.booleans())
def test_route_and_tools_answer_any_text_and_a_failing_encoder(q, fail):
    ENC.fail = fail
    try:
        decisions, belts = every_call("route", q), every_call("tools", q)
    finally:
        ENC.fail = False
    assert all(isinstance(d, Decision) and d.reason.code in REASON_CODES for d in decisions)
    assert all(isinstance(b, ToolBelt) and b.reason is not None for b in belts)
    if fail:
        read = [d for d in decisions if d.reason.code not in ("empty_query",)]
        assert all(d.action != "route" and d.reason.code == "error" for d in read)
        for b in belts:
            if b.reason.code != "empty_query":
                # the core tools only, and why
                assert b.reason.code == "error" and b.names == ["search"]
                assert [a.kind for a in b.alerts] == ["encoder_error"]
    for b in belts:  # nothing to read or no encoder: the always-on tools still
        if b.reason.code in ("empty_query", "error"):
            assert b.names == ["search"] and b.no_tool


@PROPS
@given(q=TEXT, before=TEXT, fail=st.booleans())
def test_a_query_after_any_previous_turn_and_a_failing_encoder(q, before, fail):
    """``previous_query`` of any text (lone surrogates, long or blank): a decision for every call,
    route() and route_batch() alike."""
    ENC.fail = fail
    try:
        one = ROUTER.route(q, previous_query=before)
        many = ROUTER.route_batch([q, "a1"], previous_query=[before, before])
        aone = asyncio.run(ROUTER.aroute(q, previous_query=before))
    finally:
        ENC.fail = False
    for d in (one, *many, aone):
        assert isinstance(d, Decision) and d.reason.code in REASON_CODES
    assert (one.action, one.route, one.reason.code) == (many[0].action, many[0].route, many[0].reason.code)
    assert (aone.action, aone.route) == (one.action, one.route)


def test_an_unknown_context_domain_is_set_aside_and_said():
    r = Router(
        (RouteSpec("A", ("a1", "a2"), domain="ops"), RouteSpec("B", ("b1", "b2"), domain="docs")),
        encoder=ENC,
        policy=manual(low_action="none"),
    )
    plain = r.route("a1")
    for d in (r.route("a1", context_domains=["opps"]), *r.route_batch(["a1"], context_domains=["opps", ""])):
        assert (d.route, dict(d.adjusted_scores)) == (plain.route, dict(plain.adjusted_scores))
        (said,) = [a.message for a in d.alerts if a.kind == "context_domain"]
        assert "'opps'" in said and "not applied" in said and "docs, ops" in said
    applied = r.route("a1", context_domains=["docs", "opps"])  # the known one still applies
    assert applied.adjusted_scores["A"] < plain.adjusted_scores["A"]


def test_a_clarify_route_in_any_case_is_no_previous_route():
    assert ROUTER.route("a1", previous="clarify").previous_route is None
    assert ROUTER.route("a1", previous="Clarify").route == ROUTER.route("a1").route


def test_a_bad_top_k_or_threshold_names_only_itself():
    from routecore.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match=r"^top_k must be a whole number >= 1, got 0$"):
        ROUTER.tools("a1", top_k=0)
    with pytest.raises(InvalidArgumentError, match=r"^threshold must be a number in \[0, 1\], got 2$"):
        ROUTER.tools("a1", threshold=2)


class StubLLM:
    """A Router's LLM fallback: answers ``self.answer``, or raises it when it is an exception."""

    def __init__(self) -> None:
        self.answer: object = "A"

    def choose(self, request):
        if isinstance(self.answer, BaseException):
            raise self.answer
        return LLMChoice(self.answer)  # whatever a client may hand back, a str or not


LLM = StubLLM()
WITH_LLM = Router(
    (RouteSpec("A", ("a1", "a2")), RouteSpec("B", ("b1", "b2"))), encoder=ENC, llm=LLM, policy=manual()
)
LLM_ANSWERS = {
    "A": "A",
    "B": "B",
    "clarify": CLARIFY,
    "unknown": "LOGIN_OUTAGE",
    "blank": "",
    "not a str": 3,
    "llm error": LLMError("timed out"),
    "crash": RuntimeError("the caller's client crashed"),
}


@PROPS
@given(q=TEXT, fail=st.booleans(), answer=st.sampled_from(sorted(LLM_ANSWERS)))
def test_route_with_an_llm_that_fails_or_answers_anything(q, fail, answer):
    ENC.fail, LLM.answer = fail, LLM_ANSWERS[answer]
    r = WITH_LLM
    try:
        got = [
            r.route(q),
            *r.route_batch([q, "a1"]),
            asyncio.run(r.aroute(q)),
            *asyncio.run(r.aroute_batch([q])),
        ]
    finally:
        ENC.fail, LLM.answer = False, "A"
    for d in got:
        assert isinstance(d, Decision) and d.reason.code in REASON_CODES
        assert d.action != "route" or d.route in ("A", "B")  # the LLM's answer is checked in the router
        assert Decision.from_dict(d.to_dict()).to_dict() == d.to_dict()
    d = got[0]
    if not readable(q):
        assert (d.action, d.reason.code) == ("none", "empty_query")
    elif fail:  # no scores: the LLM's answer if it is one of the routes (or to clarify), else an error
        want = {"A": ("route", "A"), "B": ("route", "B"), "clarify": ("clarify", CLARIFY)}
        assert (d.action, d.route) == want.get(answer, ("error", None)), (answer, d.reason)
