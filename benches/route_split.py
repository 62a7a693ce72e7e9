"""Where the non-encoder time of `Router.route()` goes right after an encode:
the native scoring call, the Python policy (`Router.decide_step`) and the rest,
on the 150 x 100 CLINC150 router (int8), hot caches or just after the encode.

    python benches/route_split.py [--parallel] [ENCODER ...]     # minilm-int8, e5-small-int8

--parallel runs the routing step on both cores (the router's default is one).
"""

from __future__ import annotations

import datetime
import sys
import time

import numpy as np

from bench_router import QUERIES, router_for
from routecore import _native


class _Timed:
    """Wraps the native index to time each `score_routes` call."""

    def __init__(self, inner, log):
        self._inner, self._log = inner, log

    def score_routes(self, *a):
        t = time.perf_counter()
        out = self._inner.score_routes(*a)
        self._log["native"] = time.perf_counter() - t
        return out


def main(names, parallel=False) -> None:
    if parallel:
        _native.set_route_parallel_cutoff(0)
    print(
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
        f"routing step on {'2 threads' if parallel else '1 thread'}\n"
    )
    print(
        "| encoder | caches | encode p50 ms | native call p50 µs | policy p50 µs "
        "| rest (wall − encode) p50 µs | rest / encode |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in names:
        r = router_for(name, "clinc150 (150 routes x 100)")
        log: dict = {}
        r.route_table.table.index._impl = _Timed(r.route_table.table.index._impl, log)
        decide = r.decide_step

        def timed_decide(*a):
            t = time.perf_counter()
            out = decide(*a)
            log["policy"] = time.perf_counter() - t
            return out

        r.decide_step = timed_decide
        enc_calls = r.encoder.encode_with_stats
        cached: dict = {}
        for caches in ("after encode", "hot"):
            if caches == "hot":  # the same embeddings, without running the model
                cached.update({q: enc_calls([q]) for q in QUERIES})
                r.encoder.encode_with_stats = lambda t, kind="query": cached[t[0]]
            rows = []
            for i in range(300):
                t0 = time.perf_counter()
                d = r.route(QUERIES[i % 8])
                wall = time.perf_counter() - t0
                enc = (d.timings.tokenize + d.timings.encode) / 1e3 if caches == "after encode" else 0.0
                rows.append((enc, log["native"], log["policy"], wall - enc))
            e, n, p, rest = np.median(np.array(rows[20:]), axis=0)
            enc_ms = f"{e * 1e3:.2f}" if caches == "after encode" else "0 (cached)"
            share = f"{rest / e:.1%}" if caches == "after encode" else ""
            print(
                f"| {name} | {caches} | {enc_ms} | {n * 1e6:.0f} | {p * 1e6:.0f} "
                f"| {rest * 1e6:.0f} | {share} |"
            )
        r.encoder.encode_with_stats = enc_calls


if __name__ == "__main__":
    args = sys.argv[1:]
    par = "--parallel" in args
    main([a for a in args if a != "--parallel"] or ["minilm-int8", "e5-small-int8"], par)
