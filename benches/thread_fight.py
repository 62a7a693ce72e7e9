"""Thread pools that don't fight (issue 15): do the scan's rayon workers, still
spinning after a parallel scan, slow the next query's ONNX Runtime encode in a
`Router.route()` loop, and do ORT's spinning intra-op threads slow the routing
step? `route()` p50/p95 over consecutive DISTINCT CLINC150 test queries (the
encoder's query cache is off, so no query is served from a cache) on the
150 routes x 100 exemplars router with e5-small-int8:

    cd benches && python thread_fight.py [--queries 1000] [--block 250] [--warmup 30] [--scan-rows 200000]

Configurations (each runs the same queries, interleaved A B C C' D A B C C' D ... in
blocks of --block queries so machine noise hits all alike):
  A  defaults: sequential routing step, ORT spinning on.
  B  routing step on the rayon pool (`_native.set_route_parallel_cutoff(0)`).
  C  defaults, but a large parallel VectorIndex scan (--scan-rows x 384 f32,
     flat, k = 5, both cores) runs between consecutive route() calls, so rayon
     workers are still spinning when the next encode starts; only route() is timed.
  C' control for C: the same scan, then a 5 ms sleep before route(), so the
     rayon workers are asleep again but the scan has still evicted the caches
     (separates spinning workers from cache pollution).
  D  the same router with its encoder swapped for one loaded with
     `spinning=False` (same model, same index and policy).

encode = Decision.timings.tokenize + encode (the encoder call); rest = wall - encode.
A second table gives the per-query paired differences of each configuration to A.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import routecore
from bench_router import router_for
from routecore import Encoder, _native
from routecore.evaluation import datasets as D

ROOT = Path(__file__).resolve().parents[1]
SETUP = ("e5-small-int8", "clinc150 (150 routes x 100)")
CONFIGS = ("A", "B", "C", "C'", "D")
LABEL = {
    "A": "A defaults (sequential routing step, ORT spinning)",
    "B": "B routing step on rayon pool (route cutoff 0)",
    "C": "C parallel scan between route() calls",
    "C'": "C' same scan, then 5 ms sleep (control)",
    "D": "D ORT spinning off",
}


def cpu() -> tuple[str, bool, bool]:
    text = Path("/proc/cpuinfo").read_text()
    model = next(
        (ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")),
        platform.processor(),
    )
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    return model, "avx2" in flags, any(f.startswith("avx512") for f in flags)


def distinct_texts(n: int) -> list[str]:
    seen: dict[str, None] = {}
    for s in D.clinc150("test").samples:
        seen.setdefault(s.text, None)
    out = list(seen)
    if len(out) < n:
        sys.exit(f"only {len(out)} distinct CLINC150 test texts, need {n}")
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--block", type=int, default=250)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--scan-rows", type=int, default=200_000)
    a = ap.parse_args()

    texts = distinct_texts(a.queries + a.warmup * len(CONFIGS))
    queries, warm = texts[: a.queries], texts[a.queries :]  # warm-up texts are never measured

    t = time.perf_counter()
    r = router_for(*SETUP)
    build_s = time.perf_counter() - t
    enc_spin = r.encoder
    enc_nospin = Encoder.load(None, cache_size=0, spinning=False)
    assert enc_nospin.dim == enc_spin.dim

    rng = np.random.default_rng(0)
    ix = routecore.VectorIndex(enc_spin.dim, backend="flat", storage="f32")
    step = 50_000
    for s in range(0, a.scan_rows, step):
        e = min(a.scan_rows, s + step)
        v = rng.standard_normal((e - s, enc_spin.dim), dtype=np.float32)
        ix.add(np.arange(s, e, dtype=np.uint64), v)
    probes = rng.standard_normal((64, enc_spin.dim), dtype=np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)

    cutoff0 = _native.route_parallel_cutoff()
    scan_ms: list[float] = []
    n_scan = [0]

    def scan() -> None:
        t = time.perf_counter()
        ix.search(probes[n_scan[0] % len(probes)], 5)
        scan_ms.append((time.perf_counter() - t) * 1e3)
        n_scan[0] += 1

    def run(cfg: str, qs: list[str], rows: list | None) -> None:
        if cfg == "B":
            _native.set_route_parallel_cutoff(0)
        if cfg == "D":
            r.encoder = enc_nospin
        try:
            for q in qs:
                if cfg in ("C", "C'"):
                    scan()
                    if cfg == "C'":
                        time.sleep(0.005)
                t0 = time.perf_counter()
                d = r.route(q)
                wall = (time.perf_counter() - t0) * 1e3
                if rows is not None:
                    rows.append((wall, d.timings.tokenize + d.timings.encode))
        finally:
            _native.set_route_parallel_cutoff(cutoff0)
            r.encoder = enc_spin

    for i, cfg in enumerate(CONFIGS):  # 30 warm-up queries per configuration, distinct from the measured ones
        run(cfg, warm[i * a.warmup : (i + 1) * a.warmup], None)

    res: dict[str, list] = {c: [] for c in CONFIGS}
    t = time.perf_counter()
    for b in range(0, a.queries, a.block):
        for cfg in CONFIGS:
            gc.collect()
            run(cfg, queries[b : b + a.block], res[cfg])
    loop_s = time.perf_counter() - t

    model, avx2, avx512 = cpu()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    print(f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M:%S} UTC")
    print(
        f"cpu: {model}, {platform.machine()}, {len(os.sched_getaffinity(0))} cores, "
        f"avx2={'yes' if avx2 else 'no'}, "
        f"avx512={'yes' if avx512 else 'no'}, kernels {_native.simd_level()}"
    )
    print(f"command: python {' '.join(sys.argv)}  (cwd benches/)")
    print(f"git: {commit}{' (+ uncommitted changes)' if dirty else ''}")
    print(
        f"router: {SETUP[0]}, {SETUP[1]}, {len(r.route_specs)} routes, "
        f"table storage {r.route_table.table.index.storage}, "
        f"built in {build_s:.0f} s; encoder threads {enc_spin.threads}, cache off"
    )
    print(f"cutoffs: parallel_cutoff {_native.parallel_cutoff()}, route_parallel_cutoff {cutoff0} (B sets 0)")
    print(
        f"C scan: {a.scan_rows} x {enc_spin.dim} f32 flat, k=5, "
        f"p50 {np.percentile(scan_ms, 50):.1f} ms per scan (not counted in route())"
    )
    print(
        f"{a.queries} distinct queries per configuration, interleaved in blocks of {a.block} "
        f"({' '.join(CONFIGS)} x {-(-a.queries // a.block)}), "
        f"{a.warmup} warm-up queries per configuration; loop {loop_s:.0f} s\n"
    )

    print(
        "| config | route() p50 ms | route() p95 ms | encode p50 ms | encode p95 ms "
        "| rest p50 µs | rest p95 µs |"
    )
    print("|---|---|---|---|---|---|---|")
    for cfg in CONFIGS:
        x = np.array(res[cfg])
        wall, enc = x[:, 0], x[:, 1]
        rest = (wall - enc) * 1e3
        p = np.percentile
        print(
            f"| {LABEL[cfg]} | {p(wall, 50):.2f} | {p(wall, 95):.2f} | {p(enc, 50):.2f} | {p(enc, 95):.2f} | "
            f"{p(rest, 50):.0f} | {p(rest, 95):.0f} |"
        )

    # The same query texts run under every configuration: per-query paired differences to A.
    a0 = np.array(res["A"])
    print("\nPaired per-query differences to A (same query text; median [IQR]):\n")
    print("| config | Δ route() ms | Δ encode ms | Δ rest µs |")
    print("|---|---|---|---|")
    for cfg in CONFIGS[1:]:
        dx = np.array(res[cfg]) - a0
        dw, de = dx[:, 0], dx[:, 1]
        dr = (dw - de) * 1e3
        q = lambda v, f: f"{np.median(v):+{f}} [{np.percentile(v, 25):+{f}}, {np.percentile(v, 75):+{f}}]"  # noqa: E731
        print(f"| {cfg} | {q(dw, '.2f')} | {q(de, '.2f')} | {q(dr, '.0f')} |")


if __name__ == "__main__":
    main()
