"""The routing cut learned from answers (routecore.routers.assembly.learned_medium, issue 37): answered
queries the router did not route measure the band under its cut, and lower the cut where they were right."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from routecore import Router, RouteSpec
from routecore.routers.assembly import learned_medium
from routecore.updates.learning import MIN_ANSWERS, learner


def calibration(router, medium=0.9):
    return replace(router.calibration, source="prior", medium=medium)


@pytest.fixture(scope="module")
def router(encoder):
    return Router(
        [
            RouteSpec("billing", ("my invoice is wrong", "I was charged twice", "refund my last payment")),
            RouteSpec("shipping", ("where is my parcel", "the delivery is late", "track my order")),
        ],
        encoder=encoder,
    )


def test_the_cut_comes_down_to_where_the_answers_were_right(router):
    rng = np.random.default_rng(0)
    p1 = rng.uniform(0.3, 0.9, 1000)
    right = rng.uniform(size=1000) < np.where(p1 >= 0.6, 0.99, 0.5)  # right above 0.6, a coin below
    cal = learned_medium(calibration(router), (p1, right), 0.90)
    # The lowest cut above which the answers are right on 90 % (a lower bound): under 0.6, the coins
    # below it are diluted by the sure ones above, as among routed queries they would be.
    assert 0.5 < cal.medium < 0.6 and right[p1 >= cal.medium].mean() >= 0.9
    note = cal.stats["learned_medium"]
    assert note["answers"] == 1000 and note["was"] == 0.9 and note["medium"] == cal.medium


def test_the_cut_is_never_raised_and_a_fitted_one_is_kept(router):
    p1 = np.linspace(0.3, 0.89, 500)
    wrong = np.zeros(500, bool)
    assert learned_medium(calibration(router), (p1, wrong), 0.90).medium == 0.9  # nothing was right
    fitted = replace(calibration(router, 0.8), source="fitted")
    assert learned_medium(fitted, (p1, ~wrong), 0.90) is fitted


def test_answers_below_the_cut_are_kept_and_a_refit_reads_them(encoder):
    r = Router(
        [
            RouteSpec("billing", ("my invoice is wrong", "I was charged twice", "refund my last payment")),
            RouteSpec("shipping", ("where is my parcel", "the delivery is late", "track my order")),
            RouteSpec("account", ("reset my password", "I cannot log in", "delete my account")),
        ],
        encoder=encoder,
    )
    lr = learner(r)
    queries = ["I have a question about money", "something about my stuff", "help me with my thing"]
    for q in queries:
        d = r.route(q)
        if d.tier == "low" and d.reason.code in ("low_confidence", "tie"):
            best = max(d.probabilities, key=d.probabilities.__getitem__)
            n = len(lr.answers)
            r.learn(q, best)
            assert len(lr.answers) == n + 1 and lr.answers[-1] == (pytest.approx(d.confidence), True)
    # Enough answers, all right and all under the cut: the next refit lowers it.
    old = r.calibration.medium
    lr.answers.extend([(old - 0.01 - 0.3 * i / MIN_ANSWERS, True) for i in range(MIN_ANSWERS)])
    lr.since_refit = r.spec_policy.learn_refit_every
    r.learn("please refund the double charge on my card", "billing")
    lr.wait()
    note = r.calibration.stats["learned_medium"]  # "was": the refit's own cut, for the grown config
    assert note["answers"] == len(lr.answers) and r.calibration.medium == note["medium"] < note["was"]
    assert r.calibration.medium < old and r.policy.medium == r.calibration.medium
