"""Native kernels against plain numpy references (hypothesis property tests)."""

import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from routecore import _native
from routecore.decide.policy import affinity_scale
from routecore.errors import BadKError, DimensionMismatchError, InvalidArgumentError, NonFiniteError

finite = st.floats(-1e3, 1e3, allow_nan=False, width=32)


def ref_topk(s, k):
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))[:k]
    return np.array(order), s[order]


@given(
    hnp.arrays(np.float32, st.integers(1, 300), elements=st.sampled_from([0.0, 0.5, 1.0, -1.0]) | finite),
    st.data(),
)
def test_topk_matches_numpy_with_ties(scores, data):
    k = data.draw(st.integers(1, len(scores)))
    vals, idx = _native.topk(scores, k)
    ref_idx, ref_vals = ref_topk(scores, k)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(vals, ref_vals)


def test_topk_rejects_bad_k():
    with pytest.raises(BadKError):
        _native.topk(np.ones(3, np.float32), 0)
    with pytest.raises(BadKError):
        _native.topk(np.ones(3, np.float32), 4)


@given(
    hnp.arrays(
        np.float32, st.integers(1, 50), elements=st.floats(-(2.0**100), 2.0**100, width=32) | st.just(-np.inf)
    ),
    st.floats(0.01, 10),
)
def test_softmax_matches_stable_numpy(x, t):
    p = _native.softmax(x, t)
    if np.all(np.isneginf(x)):
        np.testing.assert_allclose(p, np.full(len(x), 1 / len(x)), rtol=1e-6)
        return
    z = (x.astype(np.float64) - x.max()) / t
    ref = np.exp(z) / np.exp(z).sum()
    np.testing.assert_allclose(p, ref, atol=1e-6)
    assert abs(p.sum() - 1) < 1e-5
    assert np.all(p[np.isneginf(x)] == 0)


def test_softmax_bad_input():
    with pytest.raises(InvalidArgumentError):
        _native.softmax(np.ones(2, np.float32), 0.0)
    with pytest.raises(NonFiniteError):
        _native.softmax(np.array([np.nan], np.float32), 1.0)


@given(st.integers(1, 8), st.integers(1, 80), st.integers(1, 5), st.data())
def test_aggregation_matches_numpy(n_routes, n, topn, data):
    scores = data.draw(hnp.arrays(np.float32, n, elements=st.floats(-1, 1, width=32)))
    routes = data.draw(hnp.arrays(np.uint32, n, elements=st.integers(0, n_routes - 1)))
    for how in ("max", "mean", "topn"):
        got = _native.aggregate(scores, routes, n_routes, how, topn)
        for r in range(n_routes):
            s = scores[routes == r].astype(np.float64)
            if len(s) == 0:
                assert got[r] == -np.inf
                continue
            ref = {"max": s.max(), "mean": s.mean(), "topn": np.sort(s)[::-1][:topn].mean()}[how]
            assert got[r] == pytest.approx(ref, abs=1e-5)


def test_aggregation_rejects_bad_route_code():
    with pytest.raises(InvalidArgumentError):
        _native.aggregate(np.ones(2, np.float32), np.array([0, 3], np.uint32), 2)
    with pytest.raises(InvalidArgumentError):
        _native.aggregate(np.ones(2, np.float32), np.array([0, 1], np.uint32), 2, "median")


@given(st.integers(1, 40), st.integers(1, 4), st.data())
def test_affinity_matches_numpy(n, n_domains, data):
    scores = data.draw(hnp.arrays(np.float32, n, elements=st.floats(-1, 1, width=32)))
    domains = data.draw(hnp.arrays(np.uint32, n, elements=st.integers(0, n_domains - 1)))
    active = data.draw(st.lists(st.booleans(), min_size=n_domains, max_size=n_domains))
    got = _native.apply_affinity(scores, domains, active)
    if not any(active):
        np.testing.assert_array_equal(got, scores)
    else:  # times the factor on scores >= 0, divided by it on negative ones (a product breaks ranks there)
        f = np.where(np.array(active)[domains], np.float32(1.15), np.float32(0.70))
        ref = np.where(scores >= 0, scores * f, scores / f)
        np.testing.assert_allclose(got, ref, rtol=1e-6)
        pos = scores >= 0
        np.testing.assert_array_equal(got[pos], (scores * f)[pos])  # the former product, exactly


def above(s, i, or_level):
    """How many scores of ``s`` are above ``s[i]`` (strictly, or level with it too), ``i`` left out."""
    others = np.delete(s, i)
    return int(np.sum(others >= s[i]) if or_level else np.sum(others > s[i]))


any_sign = st.floats(-3, 3, width=32) | st.just(0.0) | st.just(-np.inf)  # a lexical bias adds to cosines


@given(st.integers(1, 24), st.integers(1, 3), st.floats(1, 4, width=32), st.floats(0, 1, width=32), st.data())
def test_a_boost_never_lowers_a_rank_and_a_demotion_never_raises_one(n, n_domains, boost, penalty, data):
    """Issue 35 §3: for any sign of score, an in-domain route has no more routes strictly above it
    after the affinity than before, and an out-of-domain one keeps every route that was at or above it."""
    scores = data.draw(hnp.arrays(np.float32, n, elements=any_sign))
    domains = data.draw(hnp.arrays(np.uint32, n, elements=st.integers(0, n_domains - 1)))
    active = data.draw(st.lists(st.booleans(), min_size=n_domains, max_size=n_domains))
    got = _native.apply_affinity(scores, domains, active, boost, penalty)
    inside = np.array(active)[domains]
    for i in range(n):
        if inside[i] or not any(active):
            assert above(got, i, False) <= above(scores, i, False), (i, scores, got)
        if not inside[i]:
            assert above(got, i, True) >= above(scores, i, True), (i, scores, got)


def test_the_issue_example_keeps_the_in_domain_route_ahead():
    # -0.6 x 1.15 = -0.69 used to lose to -0.8 x 0.7 = -0.56.
    two = np.array([0, 1], np.uint32)
    got = _native.apply_affinity(np.array([-0.6, -0.8], np.float32), two, [True, False])
    assert got[0] > got[1] and got[0] == pytest.approx(-0.6 / 1.15) and got[1] == pytest.approx(-0.8 / 0.7)
    for bad in (-0.5, np.nan, np.inf):
        with pytest.raises(InvalidArgumentError, match="affinity"):
            _native.apply_affinity(got, two, [True, False], 1.15, bad)


@given(hnp.arrays(np.float32, st.integers(1, 30), elements=any_sign), st.floats(0, 4, width=32))
def test_the_python_scale_is_the_native_one(scores, factor):
    """The anti-pattern demotion (Python) applies a factor as the native affinity does."""
    native = _native.apply_affinity(scores, np.zeros(len(scores), np.uint32), [False, True], 1.0, factor)
    np.testing.assert_array_equal(affinity_scale(scores, factor), native)


@given(st.integers(2, 30), st.data())
def test_collision_matches_numpy(n, data):
    scores = data.draw(
        hnp.arrays(np.float32, n, elements=st.sampled_from([0.5, 0.5625, 0.625]) | st.floats(0, 1, width=32))
    )
    domains = data.draw(hnp.arrays(np.uint32, n, elements=st.integers(0, 2)))
    got = _native.detect_collision(scores, domains, 0.08)
    order, _ = ref_topk(scores, 2)
    a, b = order
    gap = scores[a] - scores[b]
    if domains[a] != domains[b] and gap < 0.08:
        assert got is not None and got[:2] == (a, b) and got[2] == pytest.approx(gap)
    else:
        assert got is None


def test_simd_level_reported():
    level = _native.simd_level()
    assert level in (
        "avx2+fma",
        "avx2+fma+avx512f",
        "avx2+fma+avx512vnni",
        "avx2+fma+avx512f+avx512vnni",
        "portable",
    )
    forced = os.environ.get("ROUTECORE_SIMD")
    if forced == "avx2":
        assert "avx512" not in level
    elif forced == "portable":
        assert level == "portable"


def test_bandwidth_probe_refuses_an_impossible_buffer():
    # Used to abort the interpreter (allocation failure); now a typed error.
    with pytest.raises(InvalidArgumentError, match="bandwidth probe"):
        _native.read_bandwidth(1 << 60, 1, 1)
    assert _native.read_bandwidth(1, 1, 2) > 0.1


@given(st.integers(0, 70), st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_dot_rows_matches_numpy(n, d, seed):
    rng = np.random.default_rng(seed)
    rows, q = rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    got = _native.dot_rows(rows, q)
    assert got.dtype == np.float32 and got.shape == (n,)
    np.testing.assert_allclose(got, rows @ q, rtol=1e-5, atol=1e-4)


def test_dot_rows_past_the_gil_cutoff_and_bad_shapes():
    rng = np.random.default_rng(0)
    rows, q = rng.standard_normal((300, 384)).astype(np.float32), rng.standard_normal(384).astype(np.float32)
    np.testing.assert_allclose(_native.dot_rows(rows, q), rows @ q, rtol=1e-5, atol=1e-4)  # GIL let go
    with pytest.raises(DimensionMismatchError, match="expected 384, got 383"):
        _native.dot_rows(rows, q[:383])
    with pytest.raises(TypeError, match="contiguous"):
        _native.dot_rows(rows[:, ::2], q[:192])
