"""The routing cut adapted to a router's own queries (routecore.calibrate.traffic)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore import Router
from routecore.calibrate.prior import DecisionPrior, p_right
from routecore.calibrate.traffic import TrafficCut
from routecore.config.specs import RouteSpec
from routecore.decide.policy import Policy
from routecore.examples import IT_OPS_ROUTES

PRIOR = DecisionPrior(
    weights=(-1.9, 0.6, 0.48, -0.35, 0.72, 0.1, -0.03, 0.11),
    medium=0.88,
    high=0.995,
    previous_high=0.785,
    span={"top1_dense": [0.47, 1.0], "per_route": [5.0, 20.0], "routes": [4.0, 150.0]},
    traffic=0.965,
)
Z = PRIOR.features(0.8, 10, 60)


def test_p_right_many_is_p_right():
    p1 = np.array([0.05, 0.4, 0.7, 0.93, 0.999])
    assert np.allclose(PRIOR.p_right_many(p1, Z), [p_right(PRIOR.weights, float(p), Z) for p in p1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=300), st.floats(0.2, 0.99))
def test_the_cut_is_the_lowest_at_the_level_and_never_above_the_calibrated_one(p1, ceiling):
    t = TrafficCut(PRIOR, Z, ceiling)
    cut = t.compute(np.array(p1))
    assert cut <= ceiling
    right = PRIOR.p_right_many(np.array(p1), Z)

    def mean_above(c: float) -> float:
        keep = np.array(p1) >= c
        return float(right[keep].mean()) if keep.any() else 1.0

    if cut < ceiling:  # lowered: the queries it routes meet the level ...
        assert mean_above(cut) >= PRIOR.traffic - 1e-9
    # ... and no lower observed probability would
    lower = [p for p in p1 if p < cut]
    assert all(mean_above(p) < PRIOR.traffic for p in lower if p < ceiling)


def test_it_waits_for_warmup_then_moves_on_every_stride():
    t = TrafficCut(PRIOR, Z, 0.9, warmup=100, window=500, every=25)
    for _ in range(99):
        t.observe(0.999)
    assert t.cut is None and t.lowered(0.9) is None
    t.observe(0.999)
    assert t.cut == pytest.approx(0.9)  # every query sure: nothing under the calibrated cut to route
    for _ in range(25):
        t.observe(0.6)
    assert t.cut is not None and t.cut <= 0.9
    assert t.seen == 125
    for _ in range(2000):
        t.observe(0.05)  # the window keeps the last 500: only unsure queries are left
    assert t.cut == pytest.approx(0.9)


def test_lowered_applies_to_the_calibrated_cut_only():
    t = TrafficCut(PRIOR, Z, 0.9, warmup=1, every=1)
    for p in [0.999] * 300 + [0.5]:
        t.observe(p)
    assert t.cut is not None and t.cut < 0.9
    assert t.lowered(0.9) == t.cut
    assert t.lowered(0.7) is None  # a per-route or hand-set cut holds


def test_observers_on_many_threads_lose_nothing():
    t = TrafficCut(PRIOR, Z, 0.9, warmup=10, window=100_000, every=7)

    def feed() -> None:
        for _ in range(2000):
            t.observe(0.97)

    threads = [threading.Thread(target=feed) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert t.seen == 16_000 and t.cut is not None


ROUTES = [
    RouteSpec(
        "BILLING",
        (
            "I was charged twice",
            "refund my last invoice",
            "why is my bill so high",
            "update my credit card",
            "cancel my subscription payment",
        ),
    ),
    RouteSpec(
        "INCIDENT",
        (
            "the server is down",
            "the website returns a 500 error",
            "the VPN keeps disconnecting",
            "production is on fire",
            "the database is unreachable",
        ),
    ),
    RouteSpec(
        "ACCOUNT",
        (
            "reset my password",
            "I cannot log in",
            "change my email address",
            "enable two-factor authentication",
            "delete my account",
        ),
    ),
    RouteSpec(
        "SMALLTALK",
        ("hello there", "how are you today", "thanks a lot", "tell me a joke", "good morning"),
    ),
]


@pytest.fixture(scope="module")
def small() -> Router:
    return Router(ROUTES)


AMBIGUOUS = [
    "I need help",
    "something is wrong",
    "can you look at this",
    "it does not work",
    "question about my money",
    "j'ai un souci",
    "the page is slow",
    "I have a problem with my card",
    "my login page is broken",
    "the app charged me but shows an error",
]


def test_a_router_on_its_prior_lowers_its_cut_from_its_queries(small):
    table = small.route_table
    assert small.calibrated == "prior" and table.traffic is not None
    ceiling = table.traffic.ceiling
    before = {q: small.route(q) for q in AMBIGUOUS}
    for _ in range(1000):
        table.traffic.observe(0.999)  # a stream of sure queries ...
    table.traffic.observe(0.2)  # ... and one unsure: the expected precision allows a far lower cut
    cut = table.traffic.cut
    assert cut is not None and cut < ceiling
    after = {q: small.route(q) for q in AMBIGUOUS}
    moved = [q for q in AMBIGUOUS if before[q].action != "route" and after[q].action == "route"]
    assert moved, "no ambiguous query crossed the lowered cut"
    for q in moved:
        d = after[q]
        assert d.tier == "medium" and d.confidence >= cut
        assert d.reason.code == "likely" and "adapted to" in d.reason.message
    for q in AMBIGUOUS:  # what was routed stays routed, to the same route
        if before[q].action == "route":
            assert after[q].route == before[q].route


@pytest.mark.parametrize("policy", [{"routes": {"adapt_cut": False}}, {"routes": {"medium": 0.8}}])
def test_the_cut_stays_fixed_when_the_config_says_so(policy):
    assert Router(ROUTES, policy=Policy.from_dict(policy)).route_table.traffic is None


def test_the_cut_stays_fixed_outside_the_configs_the_prior_measured():
    r = Router.from_config(IT_OPS_ROUTES)  # three routes: the prior saw four and more
    assert r.calibrated == "prior" and r.route_table.traffic is None


WIDE = DecisionPrior(
    weights=PRIOR.weights,
    medium=0.88,
    high=0.995,
    previous_high=0.785,
    span={"per_route": [5.0, 20.0], "routes": [4.0, 150.0]},
    traffic=0.965,
    traffic_wide=[[100.0, 0.975], [40.0, 0.97]],
)


@pytest.mark.parametrize(
    "per_route, routes, level",
    [
        (10, 60, 0.965),  # within the span: the prior's own level
        (20, 4, 0.965),
        (30, 60, 0.97),  # larger configs: the level measured for their size (sorted by size)
        (40, 150, 0.97),
        (41, 60, 0.975),
        (100, 60, 0.975),
        (101, 60, 0.0),  # beyond every size measured: the cut stays fixed
        (10, 3, 0.0),  # fewer routes than the prior saw
        (10, 151, 0.0),
        (4, 60, 0.0),
    ],
)
def test_the_traffic_level_is_the_one_measured_for_the_configs_size(per_route, routes, level):
    assert WIDE.traffic_level(per_route, routes) == level
    assert PRIOR.traffic_level(per_route, routes) == (0.965 if level == 0.965 else 0.0)


@pytest.mark.parametrize("wide", [[[40.0]], [[40.0, 1.5]], [[0.0, 0.97]], "40", [["a", 0.9]]])
def test_malformed_wide_levels_are_config_errors(wide):
    from routecore.errors import ConfigError

    with pytest.raises(ConfigError, match="traffic_wide"):
        DecisionPrior(
            weights=PRIOR.weights, medium=0.9, high=0.99, previous_high=0.8, span={}, traffic_wide=wide
        )


def test_a_precision_goal_keeps_the_wide_levels_out():
    with_targets = DecisionPrior(
        **{**WIDE.__dict__, "targets": {"0.9": [0.8, 0.92], "0.95": [0.9, 0.97]}}  # type: ignore[arg-type]
    )
    assert with_targets.at(0.9).traffic_wide == () and with_targets.at(None).traffic_wide == WIDE.traffic_wide


def test_a_cut_keeps_the_level_it_was_built_at():
    z = WIDE.features(0.8, 60, 60)
    p1 = np.array([0.999] * 300 + [0.3, 0.5, 0.7])
    loose, strict = TrafficCut(WIDE, z, 0.9), TrafficCut(WIDE, z, 0.9, level=0.975)
    assert strict.level == 0.975 and loose.level == 0.965
    assert strict.compute(p1) >= loose.compute(p1)


def test_a_config_larger_than_the_fitted_ones_adapts_at_its_measured_level():
    """The shipped e5 prior measured levels for configs of 40 and of every train utterance a route."""
    from routecore.calibrate.prior import prior_for

    fifty = [
        RouteSpec(f"R{i}", tuple(f"{word} number {j} of topic {i}" for j in range(50)))
        for i, word in enumerate(("alpha", "bravo", "charlie", "delta"))
    ]
    r = Router(fifty)
    prior = prior_for(r.encoder.model_id)
    assert prior is not None and prior.traffic_wide
    t = r.route_table.traffic
    assert r.calibrated == "prior" and t is not None
    assert t.level == prior.traffic_level(50, 4) and t.level >= prior.traffic
