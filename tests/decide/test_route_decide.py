"""The high tier needs support (routecore.decide.route_decide): a head sure of a query farther from every
exemplar than a held-out exemplar is from its own route decides at the medium tier, and says so."""

from __future__ import annotations

from dataclasses import replace

import pytest

from routecore import Router
from routecore.calibrate.calibration_record import Calibration
from routecore.config.specs import RouteSpec
from routecore.decide.policy import Policy
from stubs import StubEncoder, manual, mix, unit

#: Two banking routes of three utterances, as a first config is written.
CARDS = [
    RouteSpec(
        "card_arrival",
        (
            "when will my new card arrive",
            "my card still has not been delivered",
            "how long does card delivery take",
        ),
    ),
    RouteSpec(
        "exchange_rate",
        ("what exchange rate do you use", "how do you convert currencies", "is the exchange rate good today"),
    ),
]


@pytest.fixture(scope="module")
def cards(encoder):
    return Router(CARDS, encoder=encoder), Router(CARDS, encoder=encoder, policy=Policy(high_support=0.0))


def test_a_near_domain_query_far_from_the_exemplars_is_not_routed_at_the_high_tier(cards):
    # A BANKING77 dev query of another intent (card_swallowed): the head alone put it at the
    # high tier of card_arrival, p 1.00, though no exemplar is as close to it as they are to each other.
    r, without = cards
    q = "The ATM machine ate my card."
    assert without.route(q).tier == "high"
    d = r.route(q)
    assert (d.action, d.route, d.tier, d.reason.code) == ("route", "card_arrival", "medium", "likely")
    cosine = max(d.raw_scores.values())
    assert cosine < r.policy.high_support
    assert "support" in d.reason.message and f"{cosine:.3f}" in d.reason.message


def test_in_scope_queries_keep_the_high_tier(cards):
    r, _ = cards
    for q, route in (
        ("when is my new card going to arrive", "card_arrival"),
        ("what is your exchange rate", "exchange_rate"),
    ):
        d = r.route(q)
        assert (d.route, d.tier, d.reason.code) == (route, "high", "confident"), d.reason


def test_the_support_is_the_calibrations_match_unless_pinned(cards):
    r, without = cards
    assert r.policy.high_support == pytest.approx(r.calibration.match)
    assert without.policy.high_support == 0.0  # explicit values win
    fallback = replace(r.calibration, stats=replace(r.calibration.stats, match_fallback="no held-out row"))
    assert Policy().resolve(fallback).high_support is None  # a constant is not a support


def test_a_language_the_exemplars_do_not_cover_moves_the_support_by_its_offset():
    cal = Calibration(
        "zero-label",
        0.02,
        0.9,
        0.1,
        0.6,
        0.9,
        0.1,
        0.8,
        0.02,
        0.9,
        0.7,
        languages={
            "fr": {"centroid": [1.0, 0.0], "offset": -0.05},
            "de": {"centroid": [0.0, 1.0], "offset": 0.0, "support_offset": -0.08},
        },
    )
    assert cal.for_language("fr").support == pytest.approx(0.85)
    assert cal.for_language("de").support == pytest.approx(0.82)  # the head's: offset 0, support kept
    assert Policy().resolve(cal.for_language("fr")).high_support == pytest.approx(0.85)


def test_a_pinned_support_above_the_best_cosine_caps_the_tier():
    enc = StubEncoder({"e0": unit(0), "e1": unit(1), "sure": mix(a0=0.99, a2=0.14)})
    routes = [RouteSpec("A", ("e0",)), RouteSpec("B", ("e1",))]
    assert Router(routes, encoder=enc, policy=manual()).route("sure").tier == "high"
    d = Router(routes, encoder=enc, policy=manual(high_support=0.995)).route("sure")
    assert (d.action, d.route, d.tier) == ("route", "A", "medium")
