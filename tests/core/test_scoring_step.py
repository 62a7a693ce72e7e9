"""The native routing step (`FlatIndex.score_routes`) against numpy, for exact
(f32) and int8 storage: int8 re-scores the contenders exactly and bounds the rest."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore import _native


def make(n_routes, per, d, storage, seed, spread=0.7, shuffle=False):
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n_routes, d)).astype(np.float32)
    X = (np.repeat(centres, per, axis=0) + spread * rng.standard_normal((n_routes * per, d))).astype(
        np.float32
    )
    owner = np.arange(len(X)) // per
    if shuffle:  # a route's rows scattered over the table
        p = rng.permutation(len(X))
        X, owner = X[p], owner[p]
    labels = [f"r{o}" for o in owner]
    domains = [f"d{o % 3}" for o in owner]
    ix = _native.FlatIndex(d, storage)
    ix.add(np.arange(len(X), dtype=np.uint64), X, labels, domains)
    q = (centres[seed % n_routes] + 0.5 * rng.standard_normal(d)).astype(np.float32)
    return ix, X, labels, q


def reference(X, labels, names, q, how, n):
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    s = Xn.astype(np.float64) @ (q / np.linalg.norm(q)).astype(np.float64)
    lab = np.array([names.index(x) for x in labels])
    out = np.full(len(names), -np.inf)
    for r in range(len(names)):
        v = np.sort(s[lab == r])[::-1]
        if len(v):
            out[r] = {"max": v[0], "mean": v.mean(), "topn": v[:n].mean()}[how]
    return out, s


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 40),
    st.integers(1, 30),
    st.sampled_from([7, 64, 100, 384]),
    st.sampled_from(["max", "mean", "topn"]),
    st.integers(1, 8),
    st.floats(0.0, 0.2),
    st.integers(0, 10_000),
    st.booleans(),
)
def test_int8_step_is_exact_where_it_matters_and_bounded_elsewhere(
    n_routes, per, d, how, exact_top, band, seed, shuffle
):
    ix, X, labels, q = make(n_routes, per, d, "int8", seed, shuffle=shuffle)
    r = ix.score_routes(q, _native.StepParams(aggregation=how, exact_top=exact_top, exact_band=band))
    names = ix.label_names()
    ref, s = reference(X, labels, names, q, how, 3)
    bound = r.bound
    finite = np.isfinite(ref)
    err = np.abs(r.raw[finite] - ref[finite])
    assert np.all(err <= bound[finite] + 1e-5)
    assert np.all(err[bound[finite] == 0] <= 1e-5)
    # The true best `exact_top` routes, and all within `band` of the best, are exact.
    order = np.argsort(-ref[finite], kind="stable")
    fin_bound = bound[finite]
    assert np.all(fin_bound[order[:exact_top]] == 0)
    assert np.all(fin_bound[ref[finite] >= ref[finite].max() - band + 1e-5] == 0)
    # Best exemplars: exact scores of the true best rows.
    np.testing.assert_allclose(r.top_scores, np.sort(s)[::-1][:5], atol=1e-5)
    assert abs(float(r.probs.sum()) - 1) < 1e-5


@pytest.mark.parametrize("storage", ["f32", "f16"])
def test_exact_storages_report_zero_bounds(storage):
    ix, X, labels, q = make(12, 5, 32, storage, 3)
    r = ix.score_routes(q)
    ref, _ = reference(X, labels, ix.label_names(), q, "max", 3)
    fin = np.isfinite(ref)
    np.testing.assert_allclose(r.raw[fin], ref[fin], atol=1e-5)
    assert not r.bound.any()


def test_int8_floor_and_affinity():
    ix, X, labels, q = make(50, 10, 96, "int8", 7)
    # A floor below every score makes every route exact.
    r = ix.score_routes(q, _native.StepParams(exact_top=1, exact_band=0.0, exact_floor=-2.0))
    assert not r.bound.any()
    # With a domain active, contenders are judged on adjusted scores.
    a = ix.score_routes(q, _native.StepParams(active_domains=["d1"], exact_top=3, exact_band=0.0))
    best = np.argsort(-a.adjusted, kind="stable")[:3]
    assert not a.bound[best].any()
    e = _native.FlatIndex(96, "f32")
    e.add(np.arange(len(X), dtype=np.uint64), X, labels, [f"d{(i // 10) % 3}" for i in range(len(X))])
    b = e.score_routes(q, _native.StepParams(active_domains=["d1"]))
    np.testing.assert_allclose(a.adjusted[best], b.adjusted[best], atol=1e-5)
