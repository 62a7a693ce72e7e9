"""Route decisions on crafted vectors: tiers, margins, strategies A/B, bias
rules, out of scope, affinity, collisions, clarification, fallback chain."""

from __future__ import annotations

import json
import logging

import pytest

from routecore.config.specs import RouteSpec, RouteThresholds
from routecore.decide.policy import CLARIFY, BiasRule, Policy
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.router import Router
from stubs import StubEncoder, it_ops_rules, mix, unit
from stubs import manual as _manual


def manual(**kw):
    """The pinned policy with the IT-ops bias rules these routes were written for."""
    return _manual(**{"bias_rules": it_ops_rules(), **kw})


ROUTES = [
    RouteSpec("INCIDENT", ("e-incident",), domain="ops", fallback_on_error="RAG"),
    RouteSpec("RAG", ("e-rag",), domain="docs", fallback_on_error="GENERAL"),
    RouteSpec("GENERAL", ("e-general",), domain="general"),
]
AXES = {"e-incident": unit(0), "e-rag": unit(1), "e-general": unit(2)}


def router(policy=None, **queries):
    enc = StubEncoder({**AXES, **queries})
    return Router(ROUTES, encoder=enc, policy=policy or manual())


def test_high_tier_routes_directly():
    d = router(q=mix(a0=0.9, a1=0.3)).route("q")
    assert (d.action, d.route, d.tier) == ("route", "INCIDENT", "high")
    assert d.raw_scores["INCIDENT"] == pytest.approx(0.9, abs=1e-5)
    assert sum(d.probabilities.values()) == pytest.approx(1, abs=1e-5)
    assert d.top_exemplars[0].text == "e-incident"
    assert d.fallback_chain == ("INCIDENT", "RAG", "GENERAL") and d.error_message.startswith("Sorry")


def test_medium_tier_gives_hint():
    # gap 0.06 between INCIDENT and GENERAL -> p1 ~ 0.77: medium, no bias rule on this pair's window?
    # (0.06 > 0.05)
    d = router(q=mix(a0=0.7, a2=0.64)).route("q")
    assert d.tier == "medium" and d.hint == "INCIDENT" and d.route == "INCIDENT" and not d.used_llm


def test_low_tier_clarifies_without_llm():
    d = router(manual(three_way_within=0.0, bias_rules=()), q=mix(a0=0.5, a1=0.49, a2=0.48)).route("q")
    assert d.tier == "low" and d.action == "clarify" and d.route == "CLARIFY"
    assert set(d.candidates) == {"INCIDENT", "RAG"} and "Do you mean" in d.question


def test_low_action_none():
    d = router(
        manual(low_action="none", three_way_within=0.0, bias_rules=()), q=mix(a0=0.5, a1=0.49, a2=0.48)
    ).route("q")
    assert (d.action, d.route) == ("none", None)


def test_out_of_scope_is_no_route():
    d = router(q=unit(5)).route("q")
    assert (d.action, d.route, d.tier) == ("none", None, "low")
    assert d.fallback_chain == ()


def test_strategy_a_lowers_thresholds_for_previous_route():
    # p1 ~ 0.8, margin ~ 0.6: medium normally, high when it continues the previous route.
    q = mix(a0=0.6, a1=0.53)
    assert router(q=q).route("q").tier == "medium"
    d = router(q=q).route("q", previous="INCIDENT")
    assert d.tier == "high" and d.previous_route == "INCIDENT"
    assert router(q=q).route("q", previous="RAG").tier == "medium"


def test_strategy_b_boosts_previous_route_and_renormalises():
    q = mix(a0=0.6, a1=0.57)  # INCIDENT slightly ahead
    p = manual(previous_strategy="boost", previous_boost=0.5, bias_rules=(), three_way_within=0.0)
    d = router(p, q=q).route("q", previous="RAG")
    assert d.route == "RAG"
    assert sum(d.probabilities.values()) == pytest.approx(1, abs=1e-5)
    base = router(manual(bias_rules=(), three_way_within=0.0), q=q).route("q")
    assert base.route == "INCIDENT"


@pytest.mark.parametrize(
    "cos,expected,rule",
    [
        ({"a1": 0.58, "a2": 0.60}, "RAG", "RAG vs GENERAL"),
        ({"a0": 0.60, "a1": 0.58}, "CLARIFY", "RAG vs INCIDENT"),
        ({"a0": 0.58, "a2": 0.60}, "INCIDENT", "INCIDENT vs GENERAL"),
        ({"a0": 0.57, "a1": 0.56, "a2": 0.55}, "CLARIFY", "three-way"),
    ],
)
def test_it_ops_bias_rules(cos, expected, rule):
    d = router(q=mix(**cos)).route("q")
    assert d.route == expected and rule in d.bias_rule
    if expected == "CLARIFY":
        assert d.action == "clarify" and len(d.candidates) >= 2


def test_bias_rules_read_the_cosine_gap_either_way_and_three_way_ties_only_below_high():
    from routecore.decide.policy import bias_winner

    p = manual(bias_rules=(BiasRule("A", "B", CLARIFY, within=0.05),), three_way_within=0.05)
    names = ["A", "B", "C"]
    # A head may rank the lower cosine first: the gap is read either way.
    assert bias_winner(names, [0, 1, 2], [0.70, 0.74, 0.50], p)[0] == CLARIFY
    assert bias_winner(names, [0, 1, 2], [0.70, 0.80, 0.50], p) is None
    tie = [0.70, 0.69, 0.68]
    assert "three-way" in bias_winner(names, [0, 1, 2], tie, p)[1]
    # At the high tier the three-way tie is not asked; the pair's rule still is.
    assert bias_winner(names, [0, 1, 2], tie, p, three_way=False)[1].startswith("A vs B")
    assert bias_winner(["A", "C", "B"], [0, 1, 2], tie, p, three_way=False) is None


def test_library_defaults_carry_no_domain_rules():
    """A stranger's routes named RAG/GENERAL/INCIDENT get no rule they did not write."""
    assert Policy().bias_rules == ()
    r = Router(
        ROUTES, encoder=StubEncoder({**AXES, "q": mix(a0=0.60, a1=0.58)}), policy=manual(bias_rules=())
    )
    assert r.route("q").bias_rule is None


def test_custom_bias_rule_and_window():
    p = manual(bias_rules=(BiasRule("GENERAL", "RAG", "GENERAL", within=0.1),))
    d = router(p, q=mix(a1=0.65, a2=0.58)).route("q")
    assert d.route == "GENERAL"


def test_per_route_threshold_overrides():
    q = mix(a0=0.6, a1=0.53)
    assert (
        router(manual(per_route={"INCIDENT": {"high": 0.75, "margin": 0.1}}), q=q).route("q").tier == "high"
    )
    assert router(manual(per_route={"INCIDENT": {"min_score": 0.95}}), q=q).route("q").action == "none"
    with pytest.raises(ConfigError):
        router(manual(per_route={"NOPE": {"high": 0.5}}))


def test_route_spec_thresholds_apply_under_the_policy():
    q = mix(a0=0.6, a1=0.53)  # p1 ~ 0.80: medium with the default high of 0.85

    def with_spec(th, policy=None):
        routes = [RouteSpec(ROUTES[0].name, ROUTES[0].utterances, domain="ops", thresholds=th)] + ROUTES[1:]
        return Router(routes, encoder=StubEncoder({**AXES, "q": q}), policy=policy or manual())

    assert with_spec({}).route("q").tier == "medium"
    assert with_spec({"high": 0.75, "margin": 0.1}).route("q").tier == "high"
    assert with_spec({"medium": 0.9}).route("q").tier == "low"
    assert with_spec({"min_score": 0.95}).route("q").action == "none"
    # Policy.per_route (explicit or fitted) wins over the spec, key by key.
    r = with_spec({"high": 0.75, "margin": 0.1}, manual(per_route={"INCIDENT": {"high": 0.99}}))
    assert r.route("q").tier == "medium"
    assert r.policy.per_route["INCIDENT"] == RouteThresholds(high=0.99, margin=0.1)
    with pytest.raises(ConfigError, match="route 'INCIDENT'"):
        with_spec({"high": 1.5})


@pytest.mark.parametrize("per_route", [{"RAG": {"high": 1.5}}, {"RAG": {"temperature": 0.1}}, {"RAG": 0.5}])
def test_bad_per_route_overrides_are_rejected(per_route):
    with pytest.raises(ConfigError, match="per_route"):
        manual(per_route=per_route)


def test_thresholds_lookup():
    p = manual(per_route={"RAG": {"previous_high": 0.6, "medium": 0.4}})
    assert p.thresholds("RAG", continuing=True) == (0.6, 0.10, 0.4, 0.30)
    assert p.thresholds("RAG", continuing=False) == (0.85, 0.15, 0.4, 0.30)
    assert p.thresholds("GENERAL", continuing=True) == (0.70, 0.10, 0.50, 0.30)
    assert manual().thresholds("GENERAL", continuing=False) == (0.85, 0.15, 0.50, 0.30)


@pytest.mark.parametrize(
    "bad", [{"high": 1.5}, {"margin": -0.1}, {"min_score": 2}, {"temperature": 0}, {"previous_strategy": "x"}]
)
def test_thresholds_outside_unit_interval_are_rejected(bad):
    with pytest.raises(ConfigError):
        manual(**bad)


def test_unknown_previous_route():
    with pytest.raises(InvalidArgumentError, match="unknown previous route"):
        router(q=unit(0)).route("q", previous="NOPE")


def test_affinity_changes_adjusted_not_raw():
    q = mix(a0=0.7, a1=0.68)
    d = router(q=q).route("q", context_domains=["docs"])
    assert d.raw_scores["RAG"] == pytest.approx(0.68, abs=1e-5)
    assert d.adjusted_scores["RAG"] == pytest.approx(0.68 * 1.15, abs=1e-5)
    assert d.adjusted_scores["INCIDENT"] == pytest.approx(0.7 * 0.7, abs=1e-5)
    assert d.route == "RAG"


def test_affinity_keeps_a_negative_in_domain_route_ahead():
    """Issue 35 §3: as products, the in-domain RAG (-0.6 x 1.15 = -0.69) fell below INCIDENT
    (-0.8 x 0.7 = -0.56)."""
    d = router(q=mix(a0=-0.8, a1=-0.6)).route("q", context_domains=["docs"])
    assert d.raw_scores["RAG"] == pytest.approx(-0.6, abs=1e-5)
    assert d.adjusted_scores["RAG"] == pytest.approx(-0.6 / 1.15, abs=1e-5)
    assert d.adjusted_scores["INCIDENT"] == pytest.approx(-0.8 / 0.7, abs=1e-5)
    assert sorted(d.adjusted_scores, key=lambda n: -d.adjusted_scores[n]) == ["GENERAL", "RAG", "INCIDENT"]
    assert d.probabilities["RAG"] > d.probabilities["INCIDENT"]


def test_collision_alert_names_both_routes():
    d = router(manual(bias_rules=(), three_way_within=0.0), q=mix(a0=0.7, a2=0.66)).route("q")
    [a] = [a for a in d.alerts if a.kind == "collision"]
    assert (
        "INCIDENT" in a.message and "GENERAL" in a.message and a.data["gap"] == pytest.approx(0.04, abs=1e-4)
    )
    assert d.collision and d.system_prompt_alert == a.message
    as_json = json.loads(d.to_json())
    assert as_json["collision"] is True and as_json["system_prompt_alert"] == a.message
    clear = router(manual(bias_rules=(), three_way_within=0.0), q=mix(a0=0.9, a2=0.3)).route("q")
    assert not clear.collision and clear.system_prompt_alert is None


def test_clarification_answer_is_routed_among_candidates():
    r = router(q=mix(a0=0.60, a1=0.58))
    first = r.route("q")
    assert first.action == "clarify"
    r.encoder.table["q\nthe documentation"] = mix(a1=0.4, a2=0.85)  # GENERAL would win if not restricted
    second = r.route("the documentation", clarify=first)
    assert second.route == "RAG" and second.probabilities["GENERAL"] == 0


def test_decision_is_json_and_logged(caplog):
    d = router(q=unit(0)).route("q")
    back = json.loads(d.to_json())
    assert back["route"] == "INCIDENT" and set(back["timings"]) >= {"tokenize", "encode", "score", "policy"}
    with caplog.at_level(logging.DEBUG, logger="routecore"):
        router(q=unit(0)).route("q")
    assert "raw_scores" in caplog.text and "adjusted_scores" in caplog.text


def test_any_query_string_is_routed():
    r = router()
    for q in ["", " ", "\x00", "🚀" * 100, "x" * 10000]:
        assert r.route(q).action in ("route", "clarify", "none")


def test_encoder_failure_without_llm_is_error_decision():
    r = router()
    r.encoder.fail = True
    d = r.route("anything")
    assert d.action == "error" and d.route is None and d.alerts[0].kind == "encoder_error"


def test_degraded_decision_is_logged(caplog):
    r = router()
    r.encoder.fail = True
    with caplog.at_level(logging.DEBUG, logger="routecore"):
        r.route("anything")
    assert "route decision" in caplog.text and "encoder_error" in caplog.text
