"""How late the event loop runs while many ``Router.aroute`` calls are in flight.

    python benches/event_loop_lag.py [--calls 1000] [--tick-ms 5] [--cache] [--repeat 3]

A task sleeps ``--tick-ms`` at a time on the loop and records how late each sleep wakes
up (the loop's lag), while ``--calls`` concurrent ``aroute`` calls run on the IT-ops
example router (the bundled encoder; its query cache off unless ``--cache``). The native
work runs in worker threads and releases the GIL, so the lag should stay near one
scheduling quantum. Prints, per repeat, the wall time of the calls, the number of
ticks, and the p50/p95/max lag in milliseconds, then one JSON line with the machine,
the date and the command.

tests/routers/test_router_api.py keeps the behavioural half (the loop runs other tasks while
the calls are in flight); the figures live here (issue 35 §8).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import sys
import time

import numpy as np

from routecore import Encoder, Router
from routecore.examples import IT_OPS_ROUTES

QUERIES = [
    "Peux-tu me donner l'état de l'incident INC20481234 ?",
    "what is the escalation path for a P1 on the billing platform",
    "hello there",
    "how do I reset my VPN password",
    "le serveur Kafka ne répond plus depuis ce matin",
    "quelle est la procédure de sauvegarde Oracle",
    "thanks, that's all",
    "open a ticket for the broken printer",
]


async def one_run(router: Router, calls: int, tick: float) -> dict[str, float]:
    """``calls`` concurrent aroute calls with a ticker on the loop: wall time and lag percentiles."""
    lags: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            t = time.perf_counter()
            await asyncio.sleep(tick)
            lags.append(time.perf_counter() - t - tick)

    task = asyncio.create_task(ticker())
    t0 = time.perf_counter()
    await asyncio.gather(*(router.aroute(QUERIES[i % len(QUERIES)]) for i in range(calls)))
    wall = time.perf_counter() - t0
    stop.set()
    await task
    ms = np.array(lags) * 1e3
    return {
        "wall_s": round(wall, 3),
        "ticks": len(lags),
        "lag_p50_ms": round(float(np.percentile(ms, 50)), 2),
        "lag_p95_ms": round(float(np.percentile(ms, 95)), 2),
        "lag_max_ms": round(float(ms.max()), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--tick-ms", type=float, default=5.0)
    ap.add_argument(
        "--cache", action="store_true", help="keep the encoder's query cache on (the test's setting)"
    )
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    enc = Encoder.load() if a.cache else Encoder.load(cache_size=0)
    router = Router.from_config(IT_OPS_ROUTES, encoder=enc)
    for q in QUERIES:  # warm the session and the tokenizer
        router.route(q)
    runs = []
    for i in range(a.repeat):
        r = asyncio.run(one_run(router, a.calls, a.tick_ms / 1e3))
        runs.append(r)
        print(
            f"run {i + 1}: {a.calls} calls in {r['wall_s']} s; {r['ticks']} ticks of {a.tick_ms} ms; lag p50 "
            f"{r['lag_p50_ms']} ms, p95 {r['lag_p95_ms']} ms, max {r['lag_max_ms']} ms"
        )
    print(
        json.dumps(
            {
                "bench": "event_loop_lag",
                "calls": a.calls,
                "tick_ms": a.tick_ms,
                "cache": a.cache,
                "runs": runs,
                "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
                "python": platform.python_version(),
                "date": datetime.date.today().isoformat(),
                "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
            }
        )
    )


if __name__ == "__main__":
    main()
