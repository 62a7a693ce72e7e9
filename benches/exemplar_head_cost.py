"""Per-query non-encoder cost of route() with and without the exemplar head (CLINC150: 150 routes x 100).

python benches/exemplar_head_cost.py
"""

from __future__ import annotations

import time

import numpy as np

from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import build_router, embed


def main() -> None:
    enc = Encoder.load()
    tr, te = D.clinc150("train"), D.clinc150("test")
    texts = [s.text for s in te.samples][:1000]
    X = embed(enc, [s.text for s in te.samples])[:1000]
    routers = {
        h: build_router(tr, enc, head="exemplars" if h == "exemplars" else False)
        for h in ("off", "exemplars")
    }
    res = {h: [] for h in routers}
    for _ in range(3):  # rounds, the two routers interleaved
        for h, r in routers.items():
            for t, x in zip(texts, X):
                t0 = time.perf_counter()
                r.route(t, vector=x)
                res[h].append((time.perf_counter() - t0) * 1e3)
    for h, v in res.items():
        p50, p95, p99 = np.percentile(np.array(v), [50, 95, 99])
        print(f"{h}: everything but the encoder p50 {p50:.3f} ms, p95 {p95:.3f} ms, p99 {p99:.3f} ms")


if __name__ == "__main__":
    main()
