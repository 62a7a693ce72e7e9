"""Where does a parallel scan start to pay? Single-query top-5, sequential vs the
rayon pool, for growing N x d. The crossover sets DEFAULT_PARALLEL_CUTOFF."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import clustered
from routecore import VectorIndex, _native

SIZES = [(n, d) for d in (384, 1024) for n in (250, 500, 1000, 1500, 2000, 3000, 5000)]


@pytest.mark.parametrize("mode", ["sequential", "parallel"])
@pytest.mark.parametrize("n,d", SIZES, ids=[f"n{n}-d{d}" for n, d in SIZES])
def test_cutoff(benchmark, n, d, mode):
    ix = VectorIndex(d, backend="flat")
    ix.add(np.arange(n), clustered(n, d, seed=n))
    q = clustered(1, d, seed=7)[0]
    _native.set_parallel_cutoff(1 << 62 if mode == "sequential" else 1)
    benchmark.group = f"cutoff n={n} d={d}"
    benchmark.extra_info.update({"n": n, "d": d, "elements": n * d, "mode": mode})
    try:
        benchmark.pedantic(lambda: ix.search(q, 5), rounds=2000, warmup_rounds=20)
    finally:
        _native.set_parallel_cutoff(1 << 20)
