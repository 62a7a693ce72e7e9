"""One full native scoring step (top-k + per-route aggregation + softmax +
affinity + collision) over 150 routes x 100 exemplars, against the time needed
just to stream the exemplar matrix (f32, or the int8 codes) at the measured
bandwidth. int8 is what routers use for tables this large (storage="auto")."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import clustered
from routecore import VectorIndex, _native


@pytest.mark.parametrize("storage", ["f32", "int8"])
@pytest.mark.parametrize("d", [384, 1024])
@pytest.mark.parametrize("threads", [1, 2])
def test_scoring_step(benchmark, d, threads, storage):
    routes, per = 150, 100
    n = routes * per
    db = clustered(n, d, seed=d, centers=routes)
    ix = VectorIndex(d, backend="flat", storage=storage)
    ix.add(
        np.arange(n),
        db,
        labels=[f"route{i // per}" for i in range(n)],
        domains=[f"dom{i // per % 7}" for i in range(n)],
    )
    q = clustered(1, d, seed=9, centers=routes)[0]
    impl = ix._impl
    # The routing step has its own cutoff (sequential by default at this size, see
    # ROUTE_PARALLEL_CUTOFF); here it is forced so both kernels are measured.
    _native.set_route_parallel_cutoff(1 << 20 if threads > 1 else 1 << 62)
    bw = _native.read_bandwidth(256, threads, 5)
    stream_us = n * d * (4 if storage == "f32" else 1) / (bw * 1e9) * 1e6
    benchmark.group = f"scoring step 150x100 threads={threads}"
    benchmark.extra_info.update(
        {"d": d, "threads": threads, "storage": storage, "bandwidth_gbps": bw, "stream_us": stream_us}
    )
    params = _native.StepParams(active_domains=["dom1"])
    fn = lambda: impl.score_routes(q, params)  # noqa: E731
    benchmark.pedantic(fn, rounds=300, warmup_rounds=5)
    _native.set_route_parallel_cutoff(1 << 24)
