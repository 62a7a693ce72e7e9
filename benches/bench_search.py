"""Top-5 search: routecore vs numpy (matmul + argpartition) vs FAISS IndexFlatIP,
single query and batch of 64, N in {1e2..1e6}, d in {384, 1024}, 1 and 2 threads;
compact storage (f16, int8) at N = 1e6; the machine's read bandwidth."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from conftest import clustered, rounds_for
from routecore import VectorIndex, _native

K = 5
SIZES = [100, 1_000, 10_000, 100_000, 1_000_000]
DIMS = [384, 1024]
CASES = [
    (d, n, b, t) for d in DIMS for n in SIZES for b in (1, 64) for t in ((1, 2) if n >= 10_000 else (1,))
]


def build(n, d):
    import faiss

    db = clustered(n, d, seed=n + d)
    q = clustered(64, d, seed=1)
    ix = VectorIndex(d, backend="flat")
    ix.add(np.arange(n), db)
    fx = faiss.IndexFlatIP(d)
    fx.add(db)
    return {"db": db, "q": q, "rc": ix, "faiss": fx}


def numpy_topk(db, q, k):
    s = q @ db.T
    part = np.argpartition(-s, k, axis=-1)[..., :k]
    order = np.argsort(-np.take_along_axis(s, part, -1), axis=-1)
    return np.take_along_axis(part, order, -1)


def set_threads(t):
    import faiss

    faiss.omp_set_num_threads(t)
    _native.set_parallel_cutoff(1 << 20 if t > 1 else 1 << 62)  # 1 << 20: the default cutoff


@pytest.mark.parametrize("impl", ["routecore", "numpy", "faiss"])
@pytest.mark.parametrize("d,n,batch,threads", CASES, ids=[f"d{d}-n{n}-b{b}-t{t}" for d, n, b, t in CASES])
def test_search(benchmark, dataset_cache, impl, d, n, batch, threads):
    data = dataset_cache.get((n, d), lambda: build(n, d))
    q = data["q"][0] if batch == 1 else data["q"]
    set_threads(threads)
    benchmark.group = f"search d={d} n={n} batch={batch} threads={threads}"
    benchmark.extra_info.update(
        {"n": n, "d": d, "batch": batch, "threads": threads, "impl": impl, "bytes": n * d * 4}
    )
    with threadpool_limits(threads):
        if impl == "routecore":
            fn = lambda: data["rc"].search(q, K)  # noqa: E731
        elif impl == "numpy":
            fn = lambda: numpy_topk(data["db"], q, K)  # noqa: E731
        else:
            q2 = q[None, :] if batch == 1 else q
            fn = lambda: data["faiss"].search(q2, K)  # noqa: E731
        benchmark.pedantic(fn, rounds=rounds_for(n * d * 4 * (1 if batch == 1 else 4)), warmup_rounds=1)
    set_threads(2)


COMPACT = [(d, s, t) for d in DIMS for s in ("f32", "f16", "int8") for t in (1, 2)]


@pytest.mark.parametrize("d,storage,threads", COMPACT, ids=[f"d{d}-{s}-t{t}" for d, s, t in COMPACT])
def test_compact_1m(benchmark, dataset_cache, d, storage, threads):
    n = 1_000_000
    data = dataset_cache.get((n, d), lambda: build(n, d))
    key = f"rc_{storage}"
    data.pop("faiss", None)  # not needed here; frees n*d*4 bytes
    if key not in data:
        for other in ("rc_f16", "rc_int8"):
            data.pop(other, None)
        ix = VectorIndex(d, backend="flat", storage=storage)
        ix.add(np.arange(n), data["db"])
        data[key] = ix
    ix = data[key]
    q = data["q"]
    exact = data["rc"].search(q, K).ids
    got = ix.search(q, K).ids
    set_threads(threads)
    benchmark.group = f"compact n=1e6 d={d} threads={threads}"
    benchmark.extra_info.update(
        {
            "d": d,
            "storage": storage,
            "threads": threads,
            "top5_equal_exact": float((exact == got).all(axis=1).mean()),
        }
    )
    benchmark.pedantic(lambda: ix.search(q[0], K), rounds=5, warmup_rounds=1)
    set_threads(2)


@pytest.mark.parametrize("threads", [1, 2])
def test_read_bandwidth(benchmark, threads):
    benchmark.group = "read bandwidth"
    gbps = _native.read_bandwidth(1024, threads, 5)
    benchmark.extra_info.update({"threads": threads, "gb_per_s": gbps})
    benchmark.pedantic(lambda: None, rounds=1)
