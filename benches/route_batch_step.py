"""The native routing step of a batch: one ``score_routes`` call per query against one
``score_routes_batch`` call for all of them (the exemplar table read once per tile), per storage.

    ROUTECORE_HOME=/tmp/rchome python benches/route_batch_step.py [--model NAME] [--shots 10,full]
        [--storage auto,f32] [--limit 1000] [--rounds 3]

Routes from CLINC150's train split (``full``: every row; ``10``: 10 per label from the few-shot pool,
seed 0), ``--limit`` dev queries embedded once; each round times the per-query calls, then the batch
call, in one process. Prints µs per query (median of the rounds) and the route_batch throughput with
the batched step and without it (``RouteTable._scored`` off), vectors given (no encoder in the loop).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from few_shot import pool, sample, splits  # noqa: E402
from routecore import Encoder  # noqa: E402
from routecore.evaluation.runner import routes_from_split  # noqa: E402
from routecore.routers import route_table  # noqa: E402
from routecore.routers.router import Router  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="multilingual-e5-small")
    ap.add_argument("--shots", default="10,full")
    ap.add_argument("--storage", default="auto,f32")
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    enc = Encoder.load(a.model)
    train, test = splits("clinc150", "dev")
    texts = [s.text for s in sample(test, a.limit).samples]
    X = np.ascontiguousarray(enc.encode(texts), np.float32)
    head = [
        "train",
        "storage",
        "rows x dim",
        "step per query (µs)",
        "batched step (µs)",
        "route_batch on / off (q/s)",
    ]
    print("| " + " | ".join(head) + " |\n" + "|---" * len(head) + "|")
    real = route_table.RouteTable._scored
    for shots in a.shots.split(","):
        k = None if shots == "full" else int(shots)
        routes = routes_from_split(train if k is None else pool(train), shots=k)
        for storage in a.storage.split(","):
            r = Router(routes, encoder=enc, storage=storage)
            rt = r.route_table
            p = rt.step(rt.prepare(texts[0], X[0]), ())
            nat = rt.table.index.native
            one, batch, on, off = [], [], [], []
            for _ in range(a.rounds):
                t = time.perf_counter()
                for x in X:
                    nat.score_routes(x, p, None)
                one.append((time.perf_counter() - t) / len(X) * 1e6)
                t = time.perf_counter()
                nat.score_routes_batch(X, [p] * len(X), [None] * len(X))
                batch.append((time.perf_counter() - t) / len(X) * 1e6)
                for mode, out in ((real, on), (lambda self, *args: {}, off)):
                    route_table.RouteTable._scored = mode  # type: ignore[method-assign]
                    t = time.perf_counter()
                    r.route_batch(texts, vectors=X)
                    out.append(len(X) / (time.perf_counter() - t))
            route_table.RouteTable._scored = real  # type: ignore[method-assign]
            rows = len(nat.entries()[0])
            med = [statistics.median(v) for v in (one, batch, on, off)]
            print(
                f"| {shots} | {nat.storage} | {rows} x {X.shape[1]} | {med[0]:.1f} | {med[1]:.1f} | "
                f"{med[2]:.0f} / {med[3]:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
