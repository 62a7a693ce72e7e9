"""routecore.decide.figures: the decision figures eval, fit, the decision log and the benches share."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore.decide.figures import decision_figures
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
