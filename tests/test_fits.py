"""The calibration fits: the vectorised tier search against the plain double loop it replaced."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore.fits import fit_tiers, wilson_lower


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
    assert fit_tiers(p1, np.full(50, 0.9), np.ones(50, bool), 0.9) == (0.3, 0.0)  # all right: the first widest pair
    assert fit_tiers(p1, np.full(50, 0.9), np.arange(50) < 5, 0.9) == (0.3, 0.0)  # none reaches it: the safest
