"""The native head (``_native.RouteHead``) a route table reads: the trained head's softmax
through the table's columns, renormalised over the routes and moved by the gains, against
numpy (hypothesis), and its typed errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore import _native
from routecore.calibrate.linear_head import LinearHead
from routecore.errors import DimensionMismatchError, InvalidArgumentError, NonFiniteError


def reference(head: LinearHead, cols: list[int], oos: int, q, gain, temperature):
    p = np.append(head.proba(q)[0].astype(np.float64), 0.0)
    probs = p[cols]
    best, out = probs.max(), p[oos]
    probs = probs / probs.sum() if probs.sum() > 0 else np.full(len(probs), 1 / len(probs))
    if gain is not None and np.any(gain != 0):
        z = np.log(np.maximum(probs, 1e-30)) + gain / temperature
        probs = np.exp(z - z.max())
        probs /= probs.sum()
    return probs, best, out


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 48),
    st.integers(2, 9),
    st.integers(0, 2**32 - 1),
    st.booleans(),
    st.floats(0.01, 2.0),
)
def test_reads_the_heads_softmax_in_table_order(dim, classes, seed, with_gain, temperature):
    rng = np.random.default_rng(seed)
    head = LinearHead(
        rng.normal(0, 2, (dim, classes)).astype(np.float32),
        rng.normal(0, 1, classes).astype(np.float32),
        [f"c{i}" for i in range(classes)],
        "c0",
    )
    cols = list(rng.permutation(np.arange(1, classes))) + [classes]  # every route, then one it lacks
    q = rng.normal(0, 1, dim).astype(np.float32)
    gain = rng.normal(0, 0.05, len(cols)).astype(np.float32) if with_gain else None
    native = _native.RouteHead(head.W, head.b, [int(c) for c in cols], 0)
    got = native.read(q, gain, temperature)
    probs, best, out = reference(head, cols, 0, q, gain, temperature)
    assert native.routes == len(cols)
    np.testing.assert_allclose(got.probs, probs, atol=2e-5)
    assert got.best == pytest.approx(best, abs=1e-5)
    assert got.out_of_scope == pytest.approx(out, abs=1e-5)
    assert got.probs[-1] < 1e-6  # the route the head lacks


def test_a_gain_of_minus_infinity_leaves_a_route_out():
    # a route a required entity leaves out gains -inf (routecore.decide.tables): probability 0
    head = _native.RouteHead(np.eye(3, dtype=np.float32), np.zeros(3, np.float32), [0, 1], 2)
    q = np.array([1.0, 0.0, 0.0], np.float32)
    got = head.read(q, np.array([-np.inf, 0.0], np.float32), 0.05)
    assert got.probs.tolist() == [0.0, 1.0]
    both = head.read(q, np.array([-np.inf, -np.inf], np.float32), 0.05)
    assert both.probs.tolist() == [0.5, 0.5]


def test_bad_input_raises_typed_errors():
    W, b = np.ones((4, 3), np.float32), np.zeros(3, np.float32)
    with pytest.raises(InvalidArgumentError):
        _native.RouteHead(W, b, [5], 2)  # a column past the classes
    with pytest.raises(NonFiniteError):
        _native.RouteHead(np.full((4, 3), np.nan, np.float32), b, [0], 2)
    head = _native.RouteHead(W, b, [0, 1], 2)
    with pytest.raises(DimensionMismatchError):
        head.read(np.ones(5, np.float32))
    with pytest.raises(NonFiniteError):
        head.read(np.array([np.nan, 0, 0, 0], np.float32))
    with pytest.raises(InvalidArgumentError):
        head.read(np.ones(4, np.float32), np.ones(3, np.float32))  # a gain per route
    with pytest.raises(InvalidArgumentError):
        head.read(np.ones(4, np.float32), np.ones(2, np.float32), 0.0)
    with pytest.raises(NonFiniteError):
        head.read(np.ones(4, np.float32), np.array([np.inf, 0], np.float32))
