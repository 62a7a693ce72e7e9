"""routecore.decide.figures: the decision figures eval, fit, the decision log and the benches share."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore.decide.figures import decision_figures, reliability
from routecore.errors import InvalidArgumentError

ROUTES = ("A", "B", "C")
decision = st.one_of(
    st.tuples(st.just("route"), st.sampled_from(ROUTES), st.sampled_from(("high", "medium"))),
    st.tuples(st.just("clarify"), st.sampled_from(ROUTES + (None,)), st.just("low")),
    st.tuples(st.just("none"), st.none(), st.just("low")),
)


@given(st.lists(st.tuples(decision, st.sampled_from(ROUTES + (None, "oos"))), min_size=1, max_size=60))
def test_the_shares_add_up_and_precision_counts_the_routed_only(rows):
    decs, gold = [d for d, _ in rows], [g for _, g in rows]
    f = decision_figures(decs, gold)
    assert f.n == len(rows)
    assert f.routed_share + f.clarify_rate + f.none_rate == pytest.approx(1.0)
    routed = [(d, g) for d, g in rows if d[0] == "route"]
    right = sum(d[1] == g for d, g in routed)
    assert f.right_of_routed == right
    assert f.routed_accuracy == (pytest.approx(right / len(routed)) if routed else None)
    # a query that should be declined (None, or a label no route has) is wrong when routed
    wrong_high = sum(d[2] == "high" and d[1] != g for d, g in routed)
    assert f.confident_wrong_rate == pytest.approx(wrong_high / len(rows))
    assert set(f.to_dict()) == {
        "routed_share",
        "routed_accuracy",
        "confident_wrong_rate",
        "clarify_rate",
        "none_rate",
    }


def test_raw_top1_is_reported_when_measured():
    f = decision_figures([("route", "A", "high")], ["A"], raw_top1=0.9, dense_top1=0.8)
    assert f.to_dict()["raw_top1_accuracy"] == 0.9 and f.to_dict()["dense_top1_accuracy"] == 0.8


def test_one_label_per_decision():
    with pytest.raises(InvalidArgumentError):
        decision_figures([("route", "A", "high")], [])


@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), max_size=80))
def test_reliability_bins_partition_the_decisions_and_the_ece_is_their_weighted_gap(rows):
    conf, ok = [c for c, _ in rows], [o for _, o in rows]
    rel = reliability(conf, ok)
    assert rel.n == len(rows) and sum(b.n for b in rel.bins) == len(rows)
    for b in rel.bins:
        inside = [(c, o) for c, o in rows if b.lo <= c < b.hi or (b.hi == 1.0 and c == 1.0)]
        assert len(inside) == b.n
        assert b.mean_confidence == pytest.approx(sum(c for c, _ in inside) / b.n)
        assert b.success_rate == pytest.approx(sum(o for _, o in inside) / b.n)
    gap = sum(b.n / len(rows) * abs(b.success_rate - b.mean_confidence) for b in rel.bins) if rows else None
    assert rel.ece == (pytest.approx(gap) if rows else None)


def test_reliability_by_hand_and_its_json_form():
    rel = reliability([0.9, 0.9, 0.1, 0.1], [True, False, False, False])
    assert rel.ece == pytest.approx(0.5 * 0.4 + 0.5 * 0.1)
    first = {"bin": [0.1, 0.2], "n": 2, "mean_confidence": 0.1, "success_rate": 0.0}
    assert rel.to_dict()["table"][0] == first
    with pytest.raises(InvalidArgumentError):
        reliability([0.5], [])


def test_reliability_bins_are_lo_to_hi_and_a_confidence_outside_0_1_is_in_none():
    rel = reliability([0.8999999999999999, 0.9, 1.0, -0.1, 1.2], [True] * 5)
    assert rel.n == 5 and [(b.lo, b.n) for b in rel.bins] == [(0.8, 1), (0.9, 2)]
