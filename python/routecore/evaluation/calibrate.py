"""Fitting the policy on a validation split, vectorised over precomputed route
scores: global and per-route ``min_score``, softmax temperature, and the
high-tier ``high``/``margin`` pair. Never sees the test split."""

from __future__ import annotations

from typing import Literal, Sequence

import numpy as np

from routecore.calibrate import calibration as C
from routecore.decide.fitted import FitResult
from routecore.errors import InvalidArgumentError

Objective = Literal["accuracy", "macro_f1", "precision_at_coverage", "oos_f1", "oos_recall"]


def _predictions(best: np.ndarray, arg: np.ndarray, th: np.ndarray, oos: int) -> np.ndarray:
    """Predicted class per sample for thresholds ``th`` [T, n] (or per-sample [n])."""
    return np.where(best >= th, arg, oos)


def _macro_f1_many(pred: np.ndarray, gold: np.ndarray, n_classes: int) -> np.ndarray:
    """Macro-F1 over gold classes for each row of ``pred`` [T, n]."""
    gold = np.asarray(gold).ravel()
    present = np.unique(gold)
    T = pred.shape[0]
    out = np.empty(T)
    gold_counts = np.bincount(gold, minlength=n_classes).astype(np.float64)
    for t in range(T):
        p = pred[t]
        tp = np.bincount(gold[p == gold], minlength=n_classes).astype(np.float64)
        pc = np.bincount(p, minlength=n_classes).astype(np.float64)
        prec = np.divide(tp, pc, out=np.zeros_like(tp), where=pc > 0)
        rec = np.divide(tp, gold_counts, out=np.zeros_like(tp), where=gold_counts > 0)
        f1 = np.divide(2 * prec * rec, prec + rec, out=np.zeros_like(tp), where=(prec + rec) > 0)
        out[t] = f1[present].mean()
    return out


def objective_many(
    pred: np.ndarray,
    gold: np.ndarray,
    objective: str,
    n_classes: int,
    answered: np.ndarray | None = None,
    coverage: float = 0.9,
) -> np.ndarray:
    """Objective per row of ``pred`` [T, n]; class ``n_classes - 1`` is out of scope.

    ``oos_f1`` / ``oos_recall`` are the out-of-scope F1 / recall among rows whose
    in-scope accuracy is at least ``coverage`` (rows below that floor rank by
    their in-scope accuracy). ``oos_recall`` does not depend on how many
    out-of-scope rows the validation split has, so it transfers to other priors.
    """
    if objective in ("oos_f1", "oos_recall"):
        oos = n_classes - 1
        g = np.broadcast_to(gold, pred.shape)
        ins = g != oos
        acc_in = ((pred == g) & ins).sum(axis=1) / np.maximum(ins.sum(axis=1), 1)
        tp = ((pred == oos) & ~ins).sum(axis=1)
        pp, gp = (pred == oos).sum(axis=1), (~ins).sum(axis=1)
        prec = np.divide(tp, pp, out=np.zeros(len(tp)), where=pp > 0)
        rec = np.divide(tp, gp, out=np.zeros(len(tp)), where=gp > 0)
        f1 = np.divide(2 * prec * rec, prec + rec, out=np.zeros(len(tp)), where=(prec + rec) > 0)
        score = f1 if objective == "oos_f1" else rec + 1e-6 * acc_in  # ties: keep more in-scope
        values: np.ndarray = np.where(acc_in >= coverage, score, acc_in - 1.0)
        return values
    if objective == "accuracy":
        accuracy: np.ndarray = (pred == gold).mean(axis=1)
        return accuracy
    if objective == "macro_f1":
        return _macro_f1_many(pred, gold, n_classes)
    if objective == "precision_at_coverage":
        ans = answered if answered is not None else np.ones_like(pred, dtype=bool)
        cov = ans.mean(axis=1)
        correct = ((pred == gold) & ans).sum(axis=1)
        prec = np.divide(correct, ans.sum(axis=1), out=np.zeros(len(cov)), where=ans.sum(axis=1) > 0)
        ranked: np.ndarray = np.where(cov >= coverage, prec, -1.0 + cov)  # infeasible rows rank by coverage
        return ranked
    raise InvalidArgumentError(
        "objective must be accuracy, macro_f1, precision_at_coverage, oos_f1 or oos_recall, "
        f"got {objective!r}"
    )


def fit_thresholds(
    scores: np.ndarray,
    gold: Sequence[str],
    routes: Sequence[str],
    oos_label: str = "oos",
    *,
    objective: Objective = "accuracy",
    coverage: float = 0.9,
    per_route: bool = True,
    grid: int = 200,
    min_gain: int = 2,
    cut_scores: np.ndarray | None = None,
) -> tuple[float, dict[str, float], float]:
    """Global then per-route ``min_score`` on raw route scores ``scores`` [n, R]; the cut reads
    ``cut_scores`` [n] (the best route's cosine in a hybrid router), or the best score."""
    names = list(routes)
    R = len(names)
    idx = {n: i for i, n in enumerate(names)}
    g = np.array([idx.get(x, R) for x in gold])  # R = out of scope (or unknown)
    arg = scores.argmax(axis=1)
    best = scores.max(axis=1) if cut_scores is None else np.asarray(cut_scores, dtype=np.float64)
    cands = np.unique(np.quantile(best, np.linspace(0, 1, grid)))
    cands = np.concatenate([[best.min() - 1e-6], cands, [best.max() + 1e-6]])
    pred = _predictions(best[None, :], arg[None, :], cands[:, None], R)
    vals = objective_many(pred, g[None, :], objective, R + 1, best[None, :] >= cands[:, None], coverage)
    t_global = float(cands[int(np.argmax(vals))])
    th = np.full(R, t_global)
    if per_route:

        def correct_at(r_mask: np.ndarray, t: float) -> int:
            return int(((np.where(best[r_mask] >= t, arg[r_mask], R)) == g[r_mask]).sum())

        for r in range(R):
            m = arg == r
            if m.sum() < 3:
                continue
            local = np.unique(np.concatenate([[t_global], best[m], best[m] + 1e-6]))
            counts = np.array([correct_at(m, t) for t in local])
            base = correct_at(m, t_global)
            if counts.max() - base >= min_gain:
                th[r] = float(local[int(np.argmax(counts))])
        pred_pr = _predictions(best, arg, th[arg], R)
        val_pr = objective_many(
            pred_pr[None, :], g[None, :], objective, R + 1, (best >= th[arg])[None, :], coverage
        )[0]
        if val_pr < vals.max():
            th[:] = t_global  # per-route refinement must not hurt the real objective
    per = {names[r]: float(th[r]) for r in range(R) if th[r] != t_global}
    return t_global, per, float(vals.max())


def _gold_columns(gold: Sequence[str], routes: Sequence[str]) -> np.ndarray:
    idx = {n: i for i, n in enumerate(routes)}
    return np.array([idx.get(x, -1) for x in gold], dtype=np.int64)


def fit_temperature(scores: np.ndarray, gold: Sequence[str], routes: Sequence[str]) -> float:
    """Temperature minimising the softmax NLL on in-scope validation samples
    (:func:`routecore.calibrate.calibration.fit_temperature` on labelled rows)."""
    g = _gold_columns(gold, routes)
    return C.fit_temperature(scores, g) if (g >= 0).any() else 0.05


def fit_tiers(
    scores: np.ndarray,
    gold: Sequence[str],
    routes: Sequence[str],
    temperature: float,
    target_precision: float = 0.95,
) -> tuple[float, float]:
    """(high, margin) giving the largest high-tier coverage whose precision on
    validation is at least ``target_precision`` (the zero-label fit's rule,
    :func:`routecore.calibrate.calibration.fit_tiers`, on validation rows)."""
    p1, mg, arg = C.top2(C.softmax(scores, temperature))
    return C.fit_tiers(p1, mg, arg == _gold_columns(gold, routes), target_precision) or (0.85, 0.15)


def fit(
    scores: np.ndarray,
    gold: Sequence[str],
    routes: Sequence[str],
    oos_label: str = "oos",
    *,
    objective: Objective = "accuracy",
    coverage: float = 0.9,
    per_route: bool = True,
    target_precision: float = 0.95,
    cut_scores: np.ndarray | None = None,
) -> FitResult:
    t, per, value = fit_thresholds(
        scores,
        gold,
        routes,
        oos_label,
        objective=objective,
        coverage=coverage,
        per_route=per_route,
        cut_scores=cut_scores,
    )
    temp = fit_temperature(scores, gold, routes)
    high, margin = fit_tiers(scores, gold, routes, temp, target_precision)
    return FitResult(objective, value, t, per, temp, high, margin)
