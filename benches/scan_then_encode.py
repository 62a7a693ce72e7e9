"""How long after a parallel scan does the next encode run slower? (issue 15)

    python benches/scan_then_encode.py [--rows 200000] [--queries 200]

The bundled e5 encoder (query cache off) encodes distinct CLINC150 test queries; before
each, a 200,000 x 384 f32 flat `VectorIndex.search` (k = 5, on both cores) runs, then a
sleep of 0 / 0.2 / 1 / 2 / 5 ms; "no scan" is the control. Only the encode is timed;
settings interleaved in blocks of 50 queries. If a 0.2 ms sleep removes the tail, the
threads that just scanned are the cause, not the caches the scan evicted (the p50s show
those).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from routecore import Encoder, VectorIndex
from routecore.evaluation import datasets as D


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=200, help="per setting")
    a = ap.parse_args()
    enc = Encoder.load(cache_size=0)
    waits: list[float | None] = [None, 0.0, 0.0002, 0.001, 0.002, 0.005]
    block = 50
    texts = [s.text for s in D.clinc150("test").samples][: a.queries * len(waits)]
    rng = np.random.default_rng(0)
    X = rng.standard_normal((a.rows, enc.dim)).astype(np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    ix = VectorIndex(enc.dim, backend="flat", storage="f32")
    ix.add(np.arange(len(X), dtype=np.uint64), X)
    for t in texts[:30]:
        enc.encode([t])
    ms: dict[float | None, list[float]] = {w: [] for w in waits}
    for start in range(0, a.queries, block):
        for w in waits:
            for t in texts[start : start + block]:
                if w is not None:
                    ix.search(X[0], 5)
                    if w > 0:
                        time.sleep(w)
                t0 = time.perf_counter()
                enc.encode([t])
                ms[w].append((time.perf_counter() - t0) * 1e3)
    for w, v in ms.items():
        p50, p95 = np.percentile(v, [50, 95])
        print(
            f"{'no scan' if w is None else f'sleep {w * 1e3:g} ms'}: "
            f"encode p50 {p50:.2f} ms, p95 {p95:.2f} ms"
        )


if __name__ == "__main__":
    main()
