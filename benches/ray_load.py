"""Load of the Ray Serve path (issue 18): routecore.integrations.ray, 2 replicas on a local
Ray (2 CPUs, 0.5 CPU a replica, no dashboard), driven through the DeploymentHandle by
closed-loop asyncio clients. Not run in CI.

    python benches/ray_load.py [--clients 8,32] [--requests 320] [--max-batch 32] [--wait-ms 5] [--json OUT]

Each client sends ``handle.route.remote(query)``, awaits the decision, sends the next;
every query is new (a counter in the text), so the encoder's query cache never
answers. ``--requests`` requests per concurrency level (bounded), after a warm-up of
``2 x clients`` not counted. Reported: p50/p95/p99 latency and throughput, and the
in-process ``Router.route()`` p50 for scale.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

TEMPLATES = [
    "the production server {} is down",
    "how do I configure the VPN client number {}",
    "where is the runbook for service {}",
    "database {} connections keep timing out",
    "le site {} renvoie des erreurs 500",
    "restart the payment service {}",
]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


async def drive(handle: Any, clients: int, requests: int, start: int) -> tuple[list[float], float]:
    counter = iter(range(start, start + requests))
    lat: list[float] = []

    async def client() -> None:
        for i in counter:
            q = TEMPLATES[i % len(TEMPLATES)].format(i)
            t = time.perf_counter()
            await handle.route.remote(q)
            lat.append((time.perf_counter() - t) * 1000)

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return lat, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", default="8,32")
    ap.add_argument("--requests", type=int, default=320)
    ap.add_argument("--max-batch", type=int, default=32)
    ap.add_argument("--wait-ms", type=float, default=5.0)
    ap.add_argument("--json")
    args = ap.parse_args()

    import ray
    from ray import serve

    from routecore import Router
    from routecore.examples import IT_OPS_ROUTES
    from routecore.integrations.ray import deployment

    config = Path(tempfile.mkdtemp()) / "routes.yaml"
    config.write_text(
        yaml.safe_dump(yaml.safe_load(IT_OPS_ROUTES.read_text(encoding="utf-8")), allow_unicode=True),
        encoding="utf-8",
    )
    local = Router.from_config(config)
    inproc = []
    for i in range(200):
        t = time.perf_counter()
        local.route(TEMPLATES[i % len(TEMPLATES)].format(10**6 + i))
        inproc.append((time.perf_counter() - t) * 1000)

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=200 * 1024 * 1024,
        log_to_driver=False,
        configure_logging=False,
    )
    results: dict[str, Any] = {
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "inprocess_p50_ms": statistics.median(inproc),
        "max_batch": args.max_batch,
        "wait_ms": args.wait_ms,
        "levels": [],
    }
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": 0})
        app = deployment(
            config=config,
            num_replicas=2,
            ray_actor_options={"num_cpus": 0.5},
            max_batch_size=args.max_batch,
            batch_wait_timeout_s=args.wait_ms / 1000,
            max_ongoing_requests=64,
        )
        handle = serve.run(app, name="routecore_load", route_prefix=None, blocking=False)
        start = 0
        for clients in [int(c) for c in args.clients.split(",")]:
            asyncio.run(drive(handle, clients, 2 * clients, start))  # warm-up
            start += 2 * clients
            lat, wall = asyncio.run(drive(handle, clients, args.requests, start))
            start += args.requests
            row = {
                "clients": clients,
                "requests": len(lat),
                "rps": len(lat) / wall,
                "p50_ms": pct(lat, 50),
                "p95_ms": pct(lat, 95),
                "p99_ms": pct(lat, 99),
            }
            results["levels"].append(row)
            print(
                f"clients={clients:3d}  n={row['requests']}  {row['rps']:7.1f} req/s  "
                f"p50 {row['p50_ms']:6.1f} ms  "
                f"p95 {row['p95_ms']:6.1f} ms  p99 {row['p99_ms']:6.1f} ms",
                flush=True,
            )
    finally:
        serve.shutdown()
        ray.shutdown()
    print(f"in-process Router.route() p50 {results['inprocess_p50_ms']:.2f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
