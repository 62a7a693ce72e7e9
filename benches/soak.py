"""Soak: 1M `Router.route()` calls on the bundled model, cache hits and misses mixed,
RSS sampled every 50k calls (issue 16 §4). Not run in CI.

    cd benches && python soak.py [--calls 1000000] [--miss 0.05] [--json OUT]

Hits come from 500 fixed queries (the encoder's query cache holds 1024); each miss
is a query never seen before, so it is embedded and enters the cache, evicting
an old entry. A leak shows as RSS that keeps growing after the first samples.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from pathlib import Path


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1_000_000)
    ap.add_argument("--miss", type=float, default=0.05, help="share of calls with a query never seen before")
    ap.add_argument("--every", type=int, default=50_000)
    ap.add_argument("--json")
    args = ap.parse_args()
    from routecore import Router
    from routecore.examples import IT_OPS_ROUTES

    router = Router.from_config(IT_OPS_ROUTES)
    rng = random.Random(0)
    words = (
        "server vpn password printer incident backup kafka oracle billing latency disk cpu network ticket"
    ).split()
    hits = [f"{rng.choice(words)} {rng.choice(words)} issue number {i}" for i in range(500)]
    samples = [{"calls": 0, "rss_mb": rss_mb(), "s": 0.0}]
    t0 = time.perf_counter()
    misses = 0
    for i in range(1, args.calls + 1):
        if rng.random() < args.miss:
            misses += 1
            q = f"{rng.choice(words)} {rng.choice(words)} fresh query {i}"
        else:
            q = hits[rng.randrange(len(hits))]
        router.route(q)
        if i % args.every == 0:
            samples.append({"calls": i, "rss_mb": rss_mb(), "s": time.perf_counter() - t0})
            print(json.dumps(samples[-1]), flush=True)
    stats = router.encoder.cache_stats()
    out = {
        "machine": f"{platform.node()} {os.cpu_count()} cpus",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "calls": args.calls,
        "misses": misses,
        "cache": stats.__dict__,
        "samples": samples,
        "rss_growth_after_first_sample_mb": samples[-1]["rss_mb"] - samples[1]["rss_mb"]
        if len(samples) > 2
        else None,
    }
    print(json.dumps({k: v for k, v in out.items() if k != "samples"}))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
