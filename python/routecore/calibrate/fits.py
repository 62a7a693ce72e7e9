"""The fits of zero-label calibration and ``routecore fit``: temperature by likelihood,
tiers and ``medium`` at a precision target (Wilson lower bound), the out-of-scope cut, and
``medium`` again from the answers a learning router got (:func:`learned_medium`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from routecore.calibrate.calibration_record import Calibration


def softmax(S: np.ndarray, temperature: float) -> np.ndarray:
    z = S.astype(np.float64) / temperature
    z = np.where(np.isfinite(z), z, -np.inf)
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    probs: np.ndarray = p / p.sum(axis=1, keepdims=True)
    return probs


#: The lowest temperature :func:`fit_temperature` returns (the floor of its grid).
TEMPERATURE_FLOOR = 0.005


def fit_temperature(S: np.ndarray, gold: np.ndarray) -> float:
    """Temperature minimising the softmax NLL of the gold columns (``gold`` >= 0), on a
    geometric grid. The NLL is convex in 1 / temperature, so a ternary search over the
    grid finds the grid's minimum with about 22 evaluations instead of 80."""
    keep = gold >= 0
    s, y = S[keep].astype(np.float64), gold[keep]
    s = np.where(np.isfinite(s), s, s[np.isfinite(s)].min() - 1.0 if np.isfinite(s).any() else 0.0)
    grid = np.geomspace(
        TEMPERATURE_FLOOR, 0.5, 80
    )  # perfectly separated rows would push it down without bound
    s = s - s.max(axis=1, keepdims=True)  # the shift cancels in the NLL; z <= 0 for every temperature
    gold_s = s[np.arange(len(y)), y]
    seen: dict[int, float] = {}

    def nll(i: int) -> float:
        if i not in seen:
            z = s / grid[i]
            seen[i] = float(-(gold_s / grid[i] - np.log(np.exp(z).sum(axis=1))).mean())
        return seen[i]

    lo, hi = 0, len(grid) - 1
    while hi - lo > 2:
        a, b = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        if nll(a) <= nll(b):
            hi = b
        else:
            lo = a
    return float(grid[min(range(lo, hi + 1), key=lambda i: (nll(i), i))])


def top2(P: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best probability, its margin over the second, and the best column."""
    arg = P.argmax(axis=1)
    p1 = P[np.arange(len(P)), arg]
    p2 = np.partition(P, -2, axis=1)[:, -2] if P.shape[1] > 1 else np.zeros(len(P))
    return p1, p1 - p2, arg


def top2_gold(P: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Best probability, margin and whether the best is ``gold``, per row of ``P``."""
    p1, mg, arg = top2(P)
    return p1, mg, arg == gold


def wilson_lower(right: np.ndarray | float, n: np.ndarray | float, z: float = 1.645) -> np.ndarray:
    """One-sided 95 % Wilson lower bound of a precision ``right / n``."""
    n = np.maximum(np.asarray(n, dtype=np.float64), 1.0)
    p = np.asarray(right, dtype=np.float64) / n
    d = 1 + z * z / n
    lower: np.ndarray = (p + z * z / (2 * n) - z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / d
    return lower


def fit_tiers(
    p1: np.ndarray, margin: np.ndarray, correct: np.ndarray, target: float, min_selected: int = 10
) -> tuple[float, float] | None:
    """(high, margin) with the largest coverage whose precision is at least ``target``
    (its Wilson lower bound, so that a small selection is not trusted on luck).

    When no pair reaches ``target`` (few held-out rows), the pair whose Wilson
    bound is highest, i.e. the safest the data can vouch for; None when no pair
    selects ``min_selected`` rows."""
    best: tuple[float, float, float] | None = None
    safest: tuple[float, float, float, float] | None = None
    margins = np.linspace(0.0, 0.9, 46)
    ok = np.asarray(correct, dtype=np.float64)
    for h in np.linspace(0.3, 0.99, 70):
        above = p1 >= h
        # Rows selected at each margin cut, and how many are right: one sort instead of 46 masks.
        m_sel = np.sort(margin[above])
        right_desc = np.concatenate(
            [[0.0], np.cumsum(ok[above][np.argsort(margin[above], kind="stable")][::-1])]
        )
        n = len(m_sel) - np.searchsorted(m_sel, margins, side="left")
        valid = n >= min_selected  # a prefix: larger margins select fewer rows
        if not valid[0]:
            continue
        k = int(np.argmin(valid)) if not valid.all() else len(margins)
        n, right = n[:k], right_desc[n[:k]]
        lb = wilson_lower(right, n)
        hit = np.flatnonzero(lb >= target)
        if len(hit):
            i = int(hit[np.argmax(n[hit])])  # the first of the largest selections
            if best is None or n[i] > best[2]:
                best = (float(h), float(margins[i]), float(n[i]))
        top = np.flatnonzero(lb == lb.max())
        i = int(top[np.argmax(n[top])])  # the first pair with the highest (bound, size)
        if safest is None or (float(lb[i]), int(n[i])) > (safest[2], safest[3]):
            safest = (float(h), float(margins[i]), float(lb[i]), float(n[i]))
    if best is not None:
        return best[0], best[1]
    return None if safest is None else (safest[0], safest[1])


def fit_medium(p1: np.ndarray, correct: np.ndarray, target: float) -> float | None:
    """The lowest ``p1`` cut whose routed rows (``p1 >= cut``) are right on at least ``target``."""
    if not len(p1):
        return None
    order = np.argsort(-p1, kind="stable")
    ok = np.flatnonzero(wilson_lower(np.cumsum(correct[order]), np.arange(1, len(order) + 1)) >= target)
    return float(p1[order][ok[-1]]) if len(ok) else None


def learned_medium(
    calibration: Calibration, answers: tuple[np.ndarray, np.ndarray], target: float
) -> Calibration:
    """``calibration`` with its routing cut ``medium`` lowered to the lowest best probability above
    which the answered queries (all of them under the cut when they were asked) were right on
    ``target`` (Wilson lower bound, as zero-label fits read it, :func:`fit_medium`): the users' own
    queries measure the band the calibration was unsure of. Never raised; a fitted or manual
    calibration is kept. ``answers``: (best probability, right) per answered query."""
    if calibration.source not in ("prior", "zero-label"):
        return calibration
    p1, right = answers
    cut = fit_medium(np.asarray(p1, np.float64), np.asarray(right, bool), target)
    if cut is None or cut >= calibration.medium:
        return calibration
    note = {"answers": int(len(p1)), "medium": cut, "was": calibration.medium, "target": target}
    return replace(calibration, medium=cut, stats=replace(calibration.stats, learned_medium=note))


def fit_min_score(inscope: np.ndarray, background: np.ndarray) -> float:
    """The out-of-scope cut that best separates in-scope from background best scores
    (largest in-scope kept plus background rejected, Youden's J). Background queries
    scoring above the in-scope median look in scope for this route set and are not
    counted against it."""
    if not len(inscope):
        return float(np.quantile(background, 0.95)) if len(background) else -1.0
    bg = background[background < np.median(inscope)]
    if not len(bg):
        return float(inscope.min()) - 1e-6
    cands = np.unique(np.concatenate([inscope, bg + 1e-6]))
    kept = 1.0 - np.searchsorted(np.sort(inscope), cands, side="left") / len(inscope)
    rejected = np.searchsorted(np.sort(bg), cands, side="left") / len(bg)
    return float(cands[int(np.argmax(kept + rejected))])


#: What routed decisions aim at on held-out exemplars when the policy sets no ``route_precision``.
ROUTE_PRECISION = 0.90


@dataclass(frozen=True)
class Targets:
    """What the tiers aim for on held-out exemplars (probabilities of being right)."""

    high_precision: float = 0.95
    route_precision: float = ROUTE_PRECISION
    previous_precision: float = 0.90
    #: Share of background queries whose best tool stays under the tool floor.
    tool_background_rejected: float = 0.90

    @classmethod
    def of(cls, policy: Any) -> "Targets":
        """A policy's targets (its ``route_precision`` unset: :data:`ROUTE_PRECISION`)."""
        route = policy.route_precision
        return cls(
            policy.high_precision, ROUTE_PRECISION if route is None else route, policy.previous_precision
        )


def top2_correct(
    S: np.ndarray, gold: np.ndarray, temperature: float, R: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Held-out rows' best probability, margin and whether the best is their own route."""
    if not len(S):
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=bool)
    if R < 2:
        return np.ones(len(S)), np.ones(len(S)), np.ones(len(S), dtype=bool)
    p1, mg, arg = top2(softmax(S, temperature))
    return p1, mg, arg == gold
