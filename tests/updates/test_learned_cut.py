"""The routing cut learned from answers (issue 37), through a learning router: answered queries the router
did not route are kept and measure the band under its cut, and a refit lowers the cut where they were
right (the fit itself, routecore.calibrate.fits.learned_medium, is tested in tests/calibrate/test_fits.py)."""

from __future__ import annotations

import pytest

from routecore import Router, RouteSpec
from routecore.updates.learning import MIN_ANSWERS, learner


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
    note = r.calibration.stats.learned_medium  # "was": the refit's own cut, for the grown config
    assert note is not None and note["answers"] == len(lr.answers)
    assert r.calibration.medium == note["medium"] < note["was"]
    assert r.calibration.medium < old and r.policy.medium == r.calibration.medium
