"""The static table's router alone (issue 38): ``route()`` p50 / p95 and ``route_batch`` throughput
on dev queries, no transformer in the process.

    ROUTECORE_HOME=/tmp/rchome python benches/static_router_latency.py [--static NAME|PATH]
        [--sets clinc150,massive-fr] [--shots 10,full] [--limit 1000] [--rounds 3]

Routes from each train split (``full``: every row; ``10``: 10 per label from the few-shot pool,
seed 0), the default policy; every dev query routed once to warm the caches, then ``--rounds``
timed passes of one ``route()`` a query, then one ``route_batch`` of them all. The table is built
once into the model cache (``routecore models distill``) before this runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from few_shot import pool, sample, splits  # noqa: E402
from routecore import Encoder  # noqa: E402
from routecore.evaluation.runner import routes_from_split  # noqa: E402
from routecore.routers.router import Router  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--static", default="multilingual-e5-small-static")
    ap.add_argument("--sets", default="clinc150,massive-fr")
    ap.add_argument("--shots", default="10,full")
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    enc = Encoder.load(a.static)
    print("| set | train | route p50 / p95 (ms) | route_batch (q/s) |\n|---|---|---|---|")
    for name in a.sets.split(","):
        train, test = splits(name, "dev")
        texts = [s.text for s in sample(test, a.limit).samples]
        for shots in a.shots.split(","):
            k = None if shots == "full" else int(shots)
            router = Router(routes_from_split(train if k is None else pool(train), shots=k), encoder=enc)
            for q in texts:
                router.route(q)
            ts = []
            for _ in range(a.rounds):
                for q in texts:
                    t = time.perf_counter()
                    router.route(q)
                    ts.append(time.perf_counter() - t)
            t = time.perf_counter()
            router.route_batch(texts)
            qps = len(texts) / (time.perf_counter() - t)
            p50, p95 = 1e3 * np.median(ts), 1e3 * np.percentile(ts, 95)
            print(f"| {name} | {shots} | {p50:.3f} / {p95:.3f} | {qps:.0f} |", flush=True)


if __name__ == "__main__":
    main()
