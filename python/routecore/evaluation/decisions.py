"""The router's own decisions on precomputed embeddings, and `fit`'s end-to-end
objective on them (the figures themselves: :mod:`routecore.decide.figures`).

:func:`decide_vectors` runs the router's decision step (tiers, out of scope, ties,
bias rules, clarification; the linear head when there is one) on query vectors,
without encoding anything again, so `fit` scores exactly the decision the router
makes. :func:`fit_routed_cut` then picks the ``medium`` cut that routes the most
validation queries while the routed ones stay right on ``Policy.route_precision``;
with a head, :func:`fit_head_tiers` first fits the tiers on the head's own
probabilities (a cosine softmax's tiers mean nothing on them).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

import numpy as np

from routecore.calibrate.calibration import Calibration, wilson_lower
from routecore.calibrate.fits import Targets, fit_tiers, top2
from routecore.decide.figures import DecisionFigures, decision_figures
from routecore.decide.fitted import RoutedCut
from routecore.errors import InvalidArgumentError

if TYPE_CHECKING:
    from routecore.routers.router import Router


def decide_vectors(router: Router, X: np.ndarray, texts: Sequence[str]) -> list[tuple[str, str | None, str]]:
    """(action, route, tier) of ``router``'s decision for each query (vector ``X[i]`` of text
    ``texts[i]``; no previous route, no context): the route table's own decision step."""
    rt = router.route_table
    out = []
    for x, text in zip(X, texts):
        d = rt.decide(text, x, None, (), None, time.perf_counter())
        out.append((d.action, d.route, d.tier))
    return out


def fit_routed_cut(
    router: Router,
    X: np.ndarray,
    texts: Sequence[str],
    gold: Sequence[str],
    steps: int = 48,
) -> RoutedCut:
    """Install the ``medium`` cut whose decisions route the most of ``X`` with the routed
    ones right on at least ``policy.route_precision`` (Wilson lower bound); when no cut
    gets there, the one with the best bound. Returns that cut with the decision figures it gives."""
    cal = _calibration(router)
    target = Targets.of(router.policy).route_precision
    best: tuple[tuple[bool, float], float, DecisionFigures] | None = None
    for m in np.linspace(0.05, 0.99, steps):  # above `high` too: a head's high tier may rest on its margin
        router.calibrate(replace(cal, medium=float(m)))
        f = decision_figures(decide_vectors(router, X, texts), gold)
        n_routed = round(f.routed_share * len(gold))
        lb = float(wilson_lower(f.right_of_routed, n_routed)) if n_routed else 0.0
        key = (lb >= target, f.routed_share if lb >= target else lb)
        if best is None or key > best[0]:
            best = (key, float(m), f)
    assert best is not None
    router.calibrate(replace(cal, medium=best[1]))
    return RoutedCut(best[1], target, best[2])


def fit_head_tiers(
    router: Router, X: np.ndarray, texts: Sequence[str], gold: Sequence[str]
) -> dict[str, float]:
    """Install ``high``/``margin`` (at ``Policy.high_precision``) and the previous route's
    pair (at ``Policy.previous_precision``) fitted on the probabilities the router's head
    gives the in-scope rows of ``X`` it keeps in scope, as the router reads them (lexical
    gain included). Returns what it installed; nothing when too few rows pass."""
    rt, names = router.route_table, [r.name for r in router.route_specs]
    rows: list[tuple[float, float, bool]] = []
    for x, text, g in zip(X, texts, gold):
        if g not in names:
            continue
        d = rt.decide(text, x, None, (), None, time.perf_counter())
        if d.reason is None or d.reason.code != "out_of_scope":
            p1, mg, arg = top2(np.array([d.probabilities[n] for n in names], np.float64)[None, :])
            rows.append((float(p1[0]), float(mg[0]), names[int(arg[0])] == g))
    if not rows:
        return {}
    p1s, mgs, right = (np.array(c) for c in zip(*rows))
    fields: dict[str, float] = {}
    cal = _calibration(router)
    tiers = fit_tiers(p1s, mgs, right, router.policy.high_precision)
    if tiers is not None:
        fields.update(high=tiers[0], margin=tiers[1])
        cal = replace(cal, high=tiers[0], margin=tiers[1])
        prev = fit_tiers(p1s, mgs, right, router.policy.previous_precision)
        if prev is not None:
            fields.update(previous_high=prev[0], previous_margin=prev[1])
            cal = replace(cal, previous_high=prev[0], previous_margin=prev[1])
        router.calibrate(cal)
    return fields


def _calibration(router: Router) -> Calibration:
    if router.calibration is None:
        raise InvalidArgumentError(
            "fit: the router has no calibration to fit (a manual policy is not fitted)"
        )
    return router.calibration
