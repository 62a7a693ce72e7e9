"""The contract with an LLM that fails or answers a name the router does not have, for the routers whose
LLM is a Router's fallback: Cascade (the strong router's), ContextRouter (each layer's) and, through
them, TurnRouter (tests/routers/test_turn.py). KnowledgeRouter and LLMToolRouter are in
tests/test_contract.py, Router in tests/routers/test_router_contract.py.

docs/routers.md: nothing but a RoutecoreError escapes; an LLM's answer is checked against the router's own
names in the router; an LLM that fails (``LLMError``, or any exception of the caller's client) or names
something else is set aside: the decision is the one a router without an LLM makes (reason
``llm_failed``), and when the encoder failed too, an ``error`` decision with an ``llm_error`` alert.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache

from hypothesis import given
from hypothesis import strategies as st

from routecore import Cascade, Context, ContextRouter, Router
from routecore.config.specs import RouteSpec
from routecore.decision import REASON_CODES, Decision
from routecore.errors import LLMError
from routecore.routers.context import CONTEXT_REASONS
from stubs import StubEncoder, manual, mix
from test_contract import EXEMPLARS, PROPS, ROUTES, TEXT, StubLLM, all_calls, readable, round_trip

#: What the LLM answers: a name of the intent layer and of the routes, a name of the urgency layer only,
#: a name of nothing, and two failures.
ANSWERS = ["A", "high", "wiki", LLMError("timed out"), RuntimeError("the caller's client crashed")]
URGENCY = (RouteSpec("low", ("low",)), RouteSpec("high", ("high",)))
#: A query as close to A as to B: the low tier, over the out-of-scope cut, so the LLM is asked.
BETWEEN = mix(a0=0.6, a1=0.6)
#: Any text, or the one that reaches the LLM with scores.
QUERY = st.one_of(TEXT, st.just("between"))


def check_llm_decision(d: Decision, answer: object, names: tuple[str, ...], encoder_failed: bool) -> None:
    """``d``, decided by a Router over ``names`` whose LLM answered ``answer``, as docs/routers.md says."""
    assert isinstance(d, Decision) and d.reason.code in REASON_CODES
    assert d.action != "route" or d.route in names  # the answer is checked in the router
    valid = isinstance(answer, str) and answer in names
    if not valid:  # set aside: never "used", never the reason
        assert not d.used_llm and d.reason.code != "llm", d.reason
    if d.reason.code == "empty_query":
        return
    if encoder_failed:  # no scores: the LLM's route, else an error decision that says the LLM failed too
        want = ("route", answer, "llm") if valid else ("error", None, "error")
        assert (d.action, d.route, d.reason.code) == want, d.reason
        assert valid or any(a.kind == "llm_error" for a in d.alerts)
    elif d.reason.code == "llm_failed":  # asked and set aside: the decision made without it
        assert not valid and any(a.kind == "fallback" for a in d.alerts)


@lru_cache(maxsize=None)
def llm_world():
    """A stub encoder, a stub LLM, a ContextRouter whose two layers (one exhaustive) fall back to that
    LLM, and a Cascade whose strong router does."""
    table = {**EXEMPLARS, "between": BETWEEN}
    enc, fast_enc, llm = StubEncoder(table), StubEncoder(table, "stub:fast"), StubLLM()
    layers = {
        "intent": Router(ROUTES, encoder=enc, policy=manual(), llm=llm),
        "urgency": Router(URGENCY, encoder=enc, policy=manual(), llm=llm),
    }
    context = ContextRouter(layers, exhaustive=["urgency"])
    cascade = Cascade(
        Router(ROUTES, encoder=fast_enc, policy=manual(low_action="none")),
        Router(ROUTES, encoder=enc, policy=manual(), llm=llm),
    )
    return enc, fast_enc, llm, context, cascade


@PROPS
@given(q=QUERY, fail=st.booleans(), answer=st.sampled_from(ANSWERS))
def test_context_layers_with_an_llm_that_fails_or_answers_anything(q, fail, answer):
    enc, _, llm, context, _ = llm_world()
    enc.fail, llm.answer = fail, answer
    before = llm.calls
    try:
        one = context.detect(q)
        asked = llm.calls > before
        got = [
            one,
            *all_calls(context.detect, context.detect_batch, context.adetect, context.adetect_batch, q),
        ]
    finally:
        enc.fail, llm.answer = False, "A"
    for c in got:
        assert isinstance(c, Context) and c.reason.code in CONTEXT_REASONS
        want = "empty_query" if not readable(q) else ("error" if fail else "context")
        assert c.reason.code == want
        for name, names in (("intent", ("A", "B")), ("urgency", ("low", "high"))):
            r = c.layers[name]
            check_llm_decision(r.decision, answer, names, fail)
            assert r.label is None or r.label in names
            if fail and readable(q):  # each layer degraded as Router.route does: its LLM, else error
                assert r.label == (answer if answer in names else None)
        assert round_trip(Context, c).to_dict() == c.to_dict()
    if asked and not fail and not isinstance(answer, str):  # the LLM was asked and failed
        assert any(r.decision.reason.code == "llm_failed" for r in one.layers.values())


@PROPS
@given(q=QUERY, fast_fails=st.booleans(), strong_fails=st.booleans(), answer=st.sampled_from(ANSWERS))
def test_cascade_with_an_llm_that_fails_or_answers_anything(q, fast_fails, strong_fails, answer):
    _, fast_enc, llm, _, c = llm_world()
    enc = llm_world()[0]
    fast_enc.fail, enc.fail, llm.answer = fast_fails, strong_fails, answer
    try:
        got = all_calls(c.route, c.route_batch, c.aroute, c.aroute_batch, q)
    finally:
        fast_enc.fail, enc.fail, llm.answer = False, False, "A"
    for d in got:
        served = [a.data["served_by"] for a in d.alerts if a.kind == "cascade"]
        # Only the strong router has an LLM, and only its encoder's failure leaves it without scores.
        check_llm_decision(d, answer, ("A", "B"), fast_fails and strong_fails and readable(q))
        if fast_fails and readable(q):
            assert served == ["strong"]
        assert round_trip(Decision, d).to_dict() == d.to_dict()


def test_an_llm_asked_and_set_aside_gives_the_decision_made_without_it():
    """A query that reaches the LLM (the strong router's, the intent layer's): a failing or unknown
    answer gives the decision made without it, reason ``llm_failed``; a valid one is taken."""
    enc, fast_enc, llm, _, c = llm_world()
    for answer in ANSWERS[2:]:
        llm.answer, before = answer, llm.calls
        try:
            d = c.route("between")
            layer = asyncio.run(llm_world()[3].adetect("between")).layers["intent"].decision
        finally:
            llm.answer = "A"
        assert llm.calls >= before + 2
        for x in (d, layer):
            assert (x.reason.code, x.used_llm) == ("llm_failed", False), (answer, x.reason)
            check_llm_decision(x, answer, ("A", "B"), False)
    llm.answer = "B"
    try:
        d, layer = c.route("between"), llm_world()[3].detect("between").layers["intent"]
    finally:
        llm.answer = "A"
    assert (d.action, d.route, d.reason.code, d.used_llm) == ("route", "B", "llm", True)
    assert (layer.label, layer.decision.reason.code) == ("B", "llm")
