"""The calibration fits against the plain searches they replaced: the vectorised tier search
against the double loop, the ternary temperature search against the whole grid; and the routing cut
learned from answers (``learned_medium``, issue 37)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore.calibrate.calibration_record import Calibration
from routecore.calibrate.fits import fit_temperature, fit_tiers, learned_medium, wilson_lower
from routecore.calibrate.stats import CalibrationStats


def reference_tiers(p1, margin, correct, target, min_selected=10):
    """Every (high, margin) pair of the grid, one mask each."""
    best = safest = None
    for h in np.linspace(0.3, 0.99, 70):
        for m in np.linspace(0.0, 0.9, 46):
            sel = (p1 >= h) & (margin >= m)
            n = int(sel.sum())
            if n < min_selected:
                break
            lb = float(wilson_lower(correct[sel].sum(), n))
            if lb >= target and (best is None or n > best[2]):
                best = (float(h), float(m), n)
            if safest is None or (lb, n) > (safest[2], safest[3]):
                safest = (float(h), float(m), lb, n)
    if best is not None:
        return best[0], best[1]
    return None if safest is None else (safest[0], safest[1])


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(0, 2**32 - 1), st.sampled_from([0.8, 0.9, 0.95]), st.booleans())
def test_fit_tiers_matches_the_double_loop(n, seed, target, coarse):
    rng = np.random.default_rng(seed)
    p1 = rng.uniform(0, 1, n) ** rng.uniform(0.2, 3)
    margin = p1 * rng.uniform(0, 1, n)
    if coarse:  # ties on the grid's own values
        p1, margin = np.round(p1, 2), np.round(margin, 1)
    correct = rng.uniform(0, 1, n) < (0.5 + 0.5 * p1) ** rng.uniform(0.5, 4)
    assert fit_tiers(p1, margin, correct, target) == reference_tiers(p1, margin, correct, target)


def test_fit_tiers_edge_cases():
    assert fit_tiers(np.zeros(0), np.zeros(0), np.zeros(0, bool), 0.95) is None
    p1 = np.full(50, 0.99)
    assert fit_tiers(p1, np.full(50, 0.9), np.ones(50, bool), 0.9) == (
        0.3,
        0.0,
    )  # all right: the first widest pair
    assert fit_tiers(p1, np.full(50, 0.9), np.arange(50) < 5, 0.9) == (
        0.3,
        0.0,
    )  # none reaches it: the safest


def reference_temperature(S, gold):
    """Every temperature of the grid."""
    keep = gold >= 0
    s, y = S[keep].astype(np.float64), gold[keep]
    s = np.where(np.isfinite(s), s, s[np.isfinite(s)].min() - 1.0 if np.isfinite(s).any() else 0.0)
    grid = np.geomspace(0.005, 0.5, 80)
    nll = []
    for t in grid:
        z = s / t
        z -= z.max(axis=1, keepdims=True)
        nll.append(-(z[np.arange(len(y)), y] - np.log(np.exp(z).sum(axis=1))).mean())
    return float(grid[int(np.argmin(nll))])


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 200),
    st.integers(2, 40),
    st.integers(0, 2**32 - 1),
    st.floats(0.001, 0.3),
    st.floats(0.0, 1.0),
    st.booleans(),
)
def test_fit_temperature_matches_the_whole_grid(rows, cols, seed, spread, lift, holes):
    rng = np.random.default_rng(seed)
    S = rng.normal(0.8, spread, (rows, cols))
    gold = rng.integers(-1, cols, rows)  # -1: a row without gold, ignored
    S[np.arange(rows), np.maximum(gold, 0)] += lift * spread
    if holes:
        S[rng.uniform(size=S.shape) < 0.2] = -np.inf
    if not (gold >= 0).any():
        gold[0] = 0
    assert fit_temperature(S, gold) == reference_temperature(S, gold)


def prior(medium: float = 0.9) -> Calibration:
    """A calibration from a prior, with ``medium`` as its routing cut and a stat of its own."""
    stats = CalibrationStats(held_out=6)
    return Calibration("prior", 0.02, 0.95, 0.15, medium, 0.7, 0.1, 0.3, 0.02, 0.9, 0.8, stats=stats)


def test_learned_medium_comes_down_to_where_the_answers_were_right():
    rng = np.random.default_rng(0)
    p1 = rng.uniform(0.3, 0.9, 1000)
    right = rng.uniform(size=1000) < np.where(p1 >= 0.6, 0.99, 0.5)  # right above 0.6, a coin below
    cal = learned_medium(prior(), (p1, right), 0.90)
    # The lowest cut above which the answers are right on 90 % (a lower bound): under 0.6, the coins
    # below it are diluted by the sure ones above, as among routed queries they would be.
    assert 0.5 < cal.medium < 0.6 and right[p1 >= cal.medium].mean() >= 0.9
    note = cal.stats.learned_medium
    assert note == {"answers": 1000, "medium": cal.medium, "was": 0.9, "target": 0.90}
    # the rest of the stats is kept
    assert cal.stats.held_out == 6 and replace(cal, medium=0.9, stats=CalibrationStats(held_out=6)) == prior()


def test_learned_medium_is_never_raised_and_a_fitted_or_manual_cut_is_kept():
    p1 = np.linspace(0.3, 0.89, 500)
    wrong = np.zeros(500, bool)
    assert learned_medium(prior(), (p1, wrong), 0.90) == prior()  # nothing was right
    assert learned_medium(prior(0.3), (p1, ~wrong), 0.90) == prior(0.3)  # would raise it
    zero_label = replace(prior(), source="zero-label")
    assert learned_medium(zero_label, (p1, ~wrong), 0.90).medium == 0.3  # all right: the lowest p1
    for source in ("fitted", "manual"):
        kept = replace(prior(0.8), source=source)
        assert learned_medium(kept, (p1, ~wrong), 0.90) is kept
    assert learned_medium(prior(), (np.zeros(0), np.zeros(0, bool)), 0.90) == prior()  # no answers
