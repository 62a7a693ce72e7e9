"""Benchmark helpers. Run with `pytest benches --benchmark-only` (see BENCHMARKS.md)."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

SHARED = Path(os.environ.get("ROUTECORE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def rounds_for(bytes_scanned: int) -> int:
    """Fewer rounds for scans that stream gigabytes."""
    if bytes_scanned > 1 << 30:
        return 5
    if bytes_scanned > 1 << 26:
        return 20
    return 200


def clustered(n: int, d: int, seed: int = 0, centers: int = 1000, noise: float = 0.35) -> np.ndarray:
    """Unit vectors drawn around `centers` random centres (stands in for embeddings)."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centers, d)).astype(np.float32)
    out = np.empty((n, d), dtype=np.float32)
    step = 100_000
    for s in range(0, n, step):
        e = min(n, s + step)
        out[s:e] = c[rng.integers(0, centers, e - s)] + noise * rng.standard_normal(
            (e - s, d), dtype=np.float32
        )
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


class OneDataset:
    """Holds the data of one (n, d) at a time, so 1M x 1024 runs fit in memory."""

    def __init__(self) -> None:
        self.key = None
        self.items: dict = {}

    def get(self, key, build):
        if key != self.key:
            self.items.clear()
            gc.collect()
            self.key = key
            self.items.update(build())
        return self.items


@pytest.fixture(scope="session")
def dataset_cache():
    return OneDataset()
