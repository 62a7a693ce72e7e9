"""VectorIndex: correctness against numpy, bad input, compact storage, FAISS parity."""

import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore import VectorIndex, _native
from routecore.errors import (
    BadKError,
    DimensionMismatchError,
    DuplicateIdError,
    EmptyIndexError,
    InvalidArgumentError,
    NonFiniteError,
    RoutecoreError,
    UnknownIdError,
)


def normed(x):
    x = np.asarray(x, np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-30)


def ref_search(db, q, k):
    s = normed(q) @ normed(db).T
    order = np.lexsort((np.arange(len(db))[None, :].repeat(len(s), 0), -s), axis=-1)[:, :k]
    return np.take_along_axis(s, order, 1), order


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((500, 32)).astype(np.float32), rng.standard_normal((9, 32)).astype(np.float32)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 200), st.integers(1, 40), st.integers(1, 8), st.integers(0, 2**31))
def test_search_matches_numpy(n, d, nq, seed):
    rng = np.random.default_rng(seed)
    db = rng.standard_normal((n, d)).astype(np.float32)
    q = rng.standard_normal((nq, d)).astype(np.float32)
    k = int(rng.integers(1, n + 1))
    ix = VectorIndex(d, backend="flat")
    ix.add(np.arange(n), db, labels=[f"r{i % 3}" for i in range(n)])
    r = ix.search(q, k)
    s, order = ref_search(db, q, k)
    np.testing.assert_allclose(r.scores, s, atol=1e-5)
    # Equal ids unless two exact-ref scores are within float noise of each other.
    mismatch = r.ids != order
    if mismatch.any():
        np.testing.assert_allclose(r.scores[mismatch], s[mismatch], atol=1e-5)
    assert list(r.labels[0]) == [f"r{int(i) % 3}" for i in r.ids[0]]  # uint64 % int: a float on numpy 1.x


def test_ties_go_to_lower_id():
    ix = VectorIndex(2)
    ix.add([0, 1, 2, 3], [[1, 0], [0, 1], [1, 0], [0, 1]])
    r = ix.search([1.0, 0.0], 4)
    assert list(r.ids) == [0, 2, 1, 3]


def test_single_query_shape_and_batch_shape(data):
    db, q = data
    ix = VectorIndex(32)
    ix.add(np.arange(500), db)
    assert ix.search(q[0], 5).ids.shape == (5,)
    assert ix.search(q, 5).ids.shape == (9, 5)
    assert ix.search(q, 5).scores.dtype == np.float32


def test_float64_and_non_contiguous_are_converted(data):
    db, q = data
    ix = VectorIndex(32)
    ix.add(np.arange(500), db.astype(np.float64))
    strided = np.asfortranarray(q)
    np.testing.assert_array_equal(ix.search(strided, 3).ids, ix.search(q, 3).ids)
    np.testing.assert_array_equal(ix.search(q[:, ::1].astype(np.float64), 3).ids, ix.search(q, 3).ids)


def test_native_layer_rejects_wrong_arrays_with_message():
    ix = _native.FlatIndex(4)
    with pytest.raises(InvalidArgumentError, match="float32"):
        ix.add(np.array([1], np.uint64), np.ones((1, 4), np.float64))
    with pytest.raises(InvalidArgumentError, match="C-contiguous"):
        ix.add(np.array([1], np.uint64), np.ones((4, 2), np.float32).T)


@pytest.mark.parametrize("backend", ["flat", "faiss", "hnsw"])
def test_bad_input_is_typed_and_leaves_index_intact(backend):
    ix = VectorIndex(3, backend=backend)
    with pytest.raises(EmptyIndexError):
        ix.search([1, 0, 0], 1)
    ix.add([1, 2], [[1, 0, 0], [0, 1, 0]], labels=["a", "b"])
    cases = [
        (BadKError, lambda: ix.search([1, 0, 0], 0)),
        (BadKError, lambda: ix.search([1, 0, 0], 3)),
        (DimensionMismatchError, lambda: ix.search([1, 0], 1)),
        (DimensionMismatchError, lambda: ix.add([3], [[1, 0]])),
        (NonFiniteError, lambda: ix.add([3], [[np.nan, 0, 0]])),
        (NonFiniteError, lambda: ix.add([3, 4], [[1, 0, 0], [np.inf, 0, 0]])),
        (DuplicateIdError, lambda: ix.add([1], [[0, 0, 1]])),
        (DuplicateIdError, lambda: ix.add([5, 5], [[0, 0, 1], [0, 1, 1]])),
        (UnknownIdError, lambda: ix.remove([2, 99])),
        (UnknownIdError, lambda: ix.update([99], [[1, 0, 0]])),
        (InvalidArgumentError, lambda: ix.add([-1], [[1, 0, 0]])),
        (InvalidArgumentError, lambda: ix.add([7], [[1, 0, 0]], labels=["a", "b"])),
    ]
    for exc, call in cases:
        with pytest.raises(exc):
            call()
        assert issubclass(exc, RoutecoreError)
    assert len(ix) == 2
    r = ix.search([0, 1, 0], 2)
    assert list(r.ids) == [2, 1] and list(r.labels) == ["b", "a"]


@pytest.mark.parametrize("backend", ["flat", "faiss", "hnsw"])
def test_update_and_remove(backend):
    ix = VectorIndex(2, backend=backend)
    ix.add([10, 20, 30], [[1, 0], [0, 1], [1, 1]], labels=["a", "b", "c"], domains="d")
    ix.update([10], [[0, -1]], labels=["z"])
    ix.remove([20])
    r = ix.search([0, -1], 2)
    assert r.ids[0] == 10 and r.labels[0] == "z"
    assert len(ix) == 2
    ids, vecs, labels, domains = ix.vectors()
    assert sorted(ids.tolist()) == [10, 30] and set(domains) == {"d"}


@pytest.mark.parametrize("backend", ["flat", "faiss"])
def test_label_code_zero_is_the_empty_label(backend):
    # decide/tables.py reads per-route arrays by label code and gives a route without exemplars code 0:
    # the interner's reserved code is a contract (issue 35 §4), in both backends, kept by updates.
    ix = VectorIndex(2, backend=backend)
    assert ix.label_names() == [""]
    ix.add([1, 2, 3], [[1, 0], [0, 1], [1, 1]], labels=["b", "a", "b"])
    assert ix.label_names() == ["", "b", "a"]  # first-seen order after the empty label
    ix.update([1], [[0, -1]], labels=["c"])
    ix.remove([2])
    assert ix.label_names()[0] == "" and ix.label_names()[1:3] == ["b", "a"]


@pytest.mark.parametrize("storage", ["f16", "int8"])
def test_compact_storage_reranks_to_exact_topk(storage):
    rng = np.random.default_rng(1)
    centers = rng.standard_normal((50, 64))
    db = (centers[rng.integers(0, 50, 5000)] + 0.3 * rng.standard_normal((5000, 64))).astype(np.float32)
    q = (centers[rng.integers(0, 50, 200)] + 0.3 * rng.standard_normal((200, 64))).astype(np.float32)
    exact = VectorIndex(64, storage="f32")
    compact = VectorIndex(64, storage=storage)
    for ix in (exact, compact):
        ix.add(np.arange(5000), db)
    a, b = exact.search(q, 5), compact.search(q, 5)
    same = (a.ids == b.ids).all(axis=1).mean()
    assert same >= 0.99
    np.testing.assert_allclose(
        b.scores[(a.ids == b.ids).all(axis=1)], a.scores[(a.ids == b.ids).all(axis=1)], atol=1e-6
    )
    assert compact.storage == storage


def test_faiss_flat_returns_same_topk_as_native(data):
    db, q = data
    flat, fx = VectorIndex(32, backend="flat"), VectorIndex(32, backend="faiss")
    for ix in (flat, fx):
        ix.add(np.arange(500), db, labels=[str(i % 7) for i in range(500)])
    a, b = flat.search(q, 10), fx.search(q, 10)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_allclose(a.scores, b.scores, atol=1e-5)
    np.testing.assert_array_equal(a.labels, b.labels)


def test_auto_backend_moves_to_hnsw_above_threshold(data):
    db, q = data
    ix = VectorIndex(32, hnsw_threshold=100)
    ix.add(np.arange(50), db[:50])
    assert ix.backend == "flat"
    ix.add(np.arange(50, 500), db[50:])
    assert ix.backend == "hnsw" and len(ix) == 500
    exact = VectorIndex(32, backend="flat")
    exact.add(np.arange(500), db)
    recall = np.mean(
        [len(set(a) & set(b)) / 10 for a, b in zip(ix.search(q, 10).ids, exact.search(q, 10).ids)]
    )
    assert recall >= 0.9


def test_vectors_of_the_wrong_width_are_refused_with_their_width():
    """A 768-wide query in a 384-wide index was read as two made-up 384-wide queries."""
    ix = VectorIndex(384)
    ix.add([1, 2], np.eye(2, 384, dtype=np.float32), labels=["a", "b"])
    for bad in (np.ones(768, np.float32), np.ones((2, 768), np.float32), np.ones(100, np.float32)):
        with pytest.raises(DimensionMismatchError, match=f"{bad.shape[-1]} wide"):
            ix.search(bad, k=1)
    with pytest.raises(DimensionMismatchError, match="768 wide"):
        ix.add([3], np.ones((1, 768), np.float32), labels=["c"])
    assert len(ix) == 2


@pytest.mark.parametrize("backend", ["flat", "faiss"])
def test_vectors_is_one_snapshot_under_concurrent_writes(backend):
    """vectors() pairs ids, rows, labels and domains of one state of the index, while
    another thread adds entries (each with a new label and domain) and removes them."""
    d = 8
    ix = VectorIndex(d, backend=backend, normalize=False)
    stop = threading.Event()

    def row(i):
        return np.full((1, d), float(i), np.float32)

    ix.add([1], row(1), labels=["l1"], domains=["d1"])

    def writer():
        for i in range(2, 3000):
            ix.add([i], row(i), labels=[f"l{i}"], domains=[f"d{i}"])
            if i % 3 == 0:
                ix.remove([i])
        stop.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    t = threading.Thread(target=writer)
    t.start()
    try:
        while not stop.is_set():
            ids, vecs, labels, domains = ix.vectors()
            assert len(ids) == len(vecs) == len(labels) == len(domains)
            for i, v, lab, dom in zip(ids.tolist(), vecs, labels, domains):
                assert lab == f"l{i}" and dom == f"d{i}" and v[0] == i
    finally:
        stop.set()
        t.join()
        sys.setswitchinterval(old)


def test_native_is_the_flat_index_or_a_typed_error():
    """``VectorIndex.native`` is typed ``_native.FlatIndex`` (mypy checks the step's reads): a FAISS
    backend, which has no native scoring step, says so with a RoutecoreError."""
    assert isinstance(VectorIndex(8).native, _native.FlatIndex)
    with pytest.raises(InvalidArgumentError, match="faiss index has no native scoring step"):
        VectorIndex(8, backend="faiss").native  # noqa: B018
