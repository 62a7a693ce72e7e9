"""Metric functions against hand-computed cases; calibration on synthetic scores."""

from __future__ import annotations

import numpy as np
import pytest

from routecore.evaluation import metrics as M
from routecore.evaluation.calibrate import fit, fit_temperature, fit_thresholds


def test_accuracy_f1_per_label_by_hand():
    gold = ["a", "a", "b", "b", "c"]
    pred = ["a", "b", "b", "b", "a"]
    assert M.accuracy(gold, pred) == pytest.approx(3 / 5)
    pl = M.per_label(gold, pred)
    # a: tp1 fp1 fn1 -> p .5 r .5 ; b: tp2 fp1 fn0 -> p 2/3 r 1 ; c: tp0 -> 0
    assert pl["a"]["precision"] == pytest.approx(0.5) and pl["a"]["recall"] == pytest.approx(0.5)
    assert pl["b"]["precision"] == pytest.approx(2 / 3) and pl["b"]["recall"] == 1.0
    assert pl["c"]["f1"] == 0.0
    assert M.macro_f1(gold, pred) == pytest.approx((0.5 + 0.8 + 0.0) / 3)
    assert M.confusion(gold, pred, ["a", "b", "c"]).tolist() == [[1, 1, 0, 0], [0, 2, 0, 0], [1, 0, 0, 0]]


def test_oos_metrics_by_hand():
    gold = ["oos", "oos", "a", "b"]
    pred = [None, "a", None, "b"]
    o = M.oos_prf(gold, pred, "oos")
    assert (o["precision"], o["recall"], o["f1"]) == (0.5, 0.5, 0.5)
    assert M.in_scope_accuracy(gold, pred, "oos") == 0.5


def test_tool_metrics_by_hand():
    gold = [("x",), ("y", "z")]
    ranked = [["x", "a", "b"], ["a", "z", "y"]]
    m = M.tool_metrics(gold, ranked, ks=(1, 3))
    assert m["recall@1"] == pytest.approx(0.5) and m["recall@3"] == 1.0
    assert m["precision@1"] == pytest.approx(0.5) and m["precision@3"] == pytest.approx((1 / 3 + 2 / 3) / 2)
    assert m["mrr"] == pytest.approx((1 + 1 / 2) / 2)


def test_coverage_and_latency_by_hand():
    cov = M.coverage_curve([0.9, 0.8, 0.1, 0.2], [True, True, False, False], points=2)
    assert cov[-1]["accuracy"] == 0.5 and cov[0]["accuracy"] == 1.0
    assert M.latency([1, 2, 3, 4])["p50"] == 2.5


def synthetic(n=3000, routes=5, true_t=0.6, seed=0):
    rng = np.random.default_rng(seed)
    gold, S = [], np.zeros((n, routes), np.float32)
    for i in range(n):
        if rng.random() < 0.2:
            gold.append("oos")
            S[i] = rng.uniform(0.1, true_t - 0.02, routes)
        else:
            r = int(rng.integers(routes))
            gold.append(f"r{r}")
            S[i] = rng.uniform(0.1, 0.5, routes)
            S[i, r] = rng.uniform(true_t + 0.02, 1.0)
    return S, gold, [f"r{i}" for i in range(routes)]


@pytest.mark.parametrize("objective", ["accuracy", "macro_f1", "oos_f1"])
def test_calibration_recovers_known_threshold(objective):
    S, gold, names = synthetic()
    t, per, value = fit_thresholds(S, gold, names, objective=objective, coverage=0.9)
    assert 0.58 - 0.02 <= t <= 0.62 + 0.02
    assert value > 0.97


def test_per_route_thresholds_recovered():
    rng = np.random.default_rng(1)
    n, R = 4000, 3
    th_true = [0.4, 0.6, 0.8]
    gold, S = [], np.zeros((n, R), np.float32)
    for i in range(n):
        r = int(rng.integers(R))
        S[i] = rng.uniform(0.0, 0.3, R)
        if rng.random() < 0.3:
            gold.append("oos")
            S[i, r] = rng.uniform(0.3, th_true[r] - 0.01)
        else:
            gold.append(f"r{r}")
            S[i, r] = rng.uniform(th_true[r] + 0.01, 1.0)
    t, per, _ = fit_thresholds(S, gold, ["r0", "r1", "r2"])
    got = [per.get(f"r{r}", t) for r in range(R)]
    assert np.allclose(got, th_true, atol=0.03), got


def test_temperature_and_fit_result():
    S, gold, names = synthetic()
    assert 0.005 <= fit_temperature(S, gold, names) <= 0.5
    res = fit(S, gold, names, objective="precision_at_coverage", coverage=0.7)
    assert res.objective == "precision_at_coverage" and 0 <= res.high <= 1 and 0 <= res.margin <= 1


def test_oos_recall_objective_respects_the_in_scope_floor():
    S, gold, names = synthetic(true_t=0.6)
    # blur the classes so that recall of out-of-scope costs in-scope accuracy
    S = S + np.random.default_rng(3).normal(0, 0.08, S.shape).astype(np.float32)
    t, _, _ = fit_thresholds(S, gold, names, objective="oos_recall", coverage=0.9, per_route=False)
    arg, best = S.argmax(1), S.max(1)
    pred = [names[a] if b >= t else None for a, b in zip(arg, best)]
    assert M.in_scope_accuracy(gold, pred, "oos") >= 0.9 - 1e-9
    looser = [names[a] if b >= t - 0.05 else None for a, b in zip(arg, best)]
    assert M.oos_prf(gold, pred, "oos")["recall"] >= M.oos_prf(gold, looser, "oos")["recall"]
