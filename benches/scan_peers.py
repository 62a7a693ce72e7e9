"""Exact top-k scan against its peers, all in one run on one machine (issue 15).

One query (or a batch), k = 5, random unit vectors, for each N and d:
numpy (`S @ q` + argpartition), routecore `VectorIndex` (f32, int8 + exact
re-rank), FAISS `IndexFlatIP` and `IndexScalarQuantizer(QT_8bit)`, usearch's
exact search (f32, i8), NumKong's packed dot products (f32, i8) + argpartition.
Every timing is the median of a block of calls; the blocks of all contenders
alternate, and each figure is the minimum (and the median) of its block medians.

Thread counts are fixed from the environment, before anything is imported:

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 \\
        ROUTECORE_SIMD=avx2 python benches/scan_peers.py --sizes 1000,10000,100000

`--threads N` (default 1) is passed to FAISS and usearch; set the variables
above to the same N. Needs the `bench` extra (faiss-cpu, usearch, numkong).
The int8 results are checked against an f32 brute force on every query.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

from routecore import VectorIndex, _native


def unit(n: int, d: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def topk_rows(s: np.ndarray, k: int) -> np.ndarray:
    """Top-k column indices per row of a score matrix (or of a vector)."""
    p = np.argpartition(-s, k, axis=-1)[..., :k]
    order = np.argsort(-np.take_along_axis(s, p, -1), axis=-1, kind="stable")
    return np.take_along_axis(p, order, -1)


def cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    keep = ["avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni"]
                    return " ".join(x for x in keep if x in have)
    except OSError:
        pass
    return platform.machine()


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def contenders(
    S: np.ndarray, k: int, threads: int, batch: int, peers: set[str]
) -> dict[str, Callable[[np.ndarray], Any]]:
    n, d = S.shape
    out: dict[str, Callable[[np.ndarray], Any]] = {}
    out["numpy f32"] = lambda q: topk_rows(q @ S.T, k)
    for kind in ("f32", "int8"):
        ix = VectorIndex(d, backend="flat", storage=kind)
        ix.add(np.arange(n), S)
        out[f"routecore {kind}"] = lambda q, ix=ix: ix.search(q, k)
    if "faiss" in peers:
        import faiss

        faiss.omp_set_num_threads(threads)
        flat = faiss.IndexFlatIP(d)
        flat.add(S)
        sq8 = faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
        sq8.train(S)
        sq8.add(S)
        out["FAISS Flat"] = lambda q: flat.search(q.reshape(-1, d), k)
        out["FAISS SQ8"] = lambda q: sq8.search(q.reshape(-1, d), k)
    if "usearch" in peers:
        from usearch.index import MetricKind, search

        S8 = np.clip(np.rint(S * 127.0), -127, 127).astype(np.int8)
        out["usearch f32"] = lambda q: search(S, q, k, MetricKind.IP, exact=True, threads=threads)
        out["usearch i8"] = lambda q: search(
            S8,
            np.clip(np.rint(q * 127.0), -127, 127).astype(np.int8),
            k,
            MetricKind.IP,
            exact=True,
            threads=threads,
        )
    if "numkong" in peers:
        import numkong as nk

        pf = nk.dots_pack(S)
        S8 = np.clip(np.rint(S * 127.0), -127, 127).astype(np.int8)
        p8 = nk.dots_pack(S8)

        def nk_f32(q: np.ndarray) -> np.ndarray:
            return topk_rows(np.asarray(nk.dots_packed(q.reshape(-1, d), pf)), k)

        def nk_i8(q: np.ndarray) -> np.ndarray:
            q8 = np.clip(np.rint(q.reshape(-1, d) * 127.0), -127, 127).astype(np.int8)
            return topk_rows(np.asarray(nk.dots_packed(q8, p8)), k)

        out["NumKong f32"] = nk_f32
        out["NumKong i8"] = nk_i8
    return out


def check_exact(
    S: np.ndarray, fns: dict[str, Callable[[np.ndarray], Any]], qs: np.ndarray, k: int
) -> dict[str, int]:
    """Queries (of `qs`) whose routecore top-k equals the f32 brute force."""
    want = topk_rows(qs @ S.T, k)
    agree = {}
    for name in ("routecore f32", "routecore int8"):
        r = fns[name](qs)
        agree[name] = int(sum(np.array_equal(np.asarray(r.ids)[j], want[j]) for j in range(len(qs))))
    return agree


def run(
    S: np.ndarray, fns: dict[str, Callable[[np.ndarray], Any]], qs: np.ndarray, batch: int, rounds: int
) -> dict[str, list[float]]:
    n = S.shape[0]
    per = max(3, min(200, int(2e6 / max(1, n * batch))))
    pick = (lambda j: qs[j % len(qs)]) if batch == 1 else (lambda j: qs[(j * batch) % len(qs) :][:batch])
    meds: dict[str, list[float]] = {name: [] for name in fns}
    for f in fns.values():  # warm-up
        for j in range(min(per, 10)):
            f(pick(j))
    for _ in range(rounds):
        for name, f in fns.items():
            t = []
            for j in range(per):
                q = pick(j)
                s = time.perf_counter_ns()
                f(q)
                t.append(time.perf_counter_ns() - s)
            meds[name].append(statistics.median(t) / 1e3)
    return meds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--dims", default="384")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--peers", default="faiss,usearch,numkong")
    ap.add_argument("--json", help="write every block median here")
    a = ap.parse_args()
    peers = set(filter(None, a.peers.split(",")))
    env = {
        v: os.environ.get(v, "")
        for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "RAYON_NUM_THREADS", "ROUTECORE_SIMD")
    }
    head = (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {cpu_model()}, "
        f"{os.cpu_count()} cpus; flags: {cpu_flags()}; "
        f"routecore kernels: {_native.simd_level()}; env {env}; k={a.k}, batch={a.batch}, rounds={a.rounds}"
    )
    print(head)
    report: dict[str, Any] = {"header": head, "cases": []}
    for d in map(int, a.dims.split(",")):
        qs = unit(64 * max(1, a.batch), d, 7)
        for n in map(int, a.sizes.split(",")):
            S = unit(n, d, 1)
            fns = contenders(S, a.k, a.threads, a.batch, peers)
            exact = check_exact(S, fns, qs[:64], a.k)
            meds = run(S, fns, qs, a.batch, a.rounds)
            base = min(meds["numpy f32"])
            print(f"\nN={n:,} d={d}  (exact top-{a.k} vs f32 brute force on 64 queries: {exact})")
            unit_label = "µs/call" if a.batch == 1 else f"µs per batch of {a.batch} (queries/s)"
            print(f"| contender | min {unit_label} | median | numpy / this |")
            print("|---|---|---|---|")
            for name, m in meds.items():
                lo, md = min(m), statistics.median(m)
                qps = "" if a.batch == 1 else f" ({a.batch / lo * 1e6:,.0f}/s)"
                print(f"| {name} | {lo:,.1f}{qps} | {md:,.1f} | {base / lo:.2f}× |")
            # The probe's figure at the scanned tables' sizes, read by as many threads.
            bw = {}
            for kind, width in (("f32", 4), ("int8", 1)) if a.batch == 1 else ():
                mb = max(1, round(n * d * width / 2**20))
                probe = _native.read_bandwidth(mb, a.threads, 5)
                got = n * d * width / (min(meds[f"routecore {kind}"]) * 1e-6) / 1e9
                bw[kind] = {"probe_gbs": probe, "scan_gbs": got}
                print(
                    f"routecore {kind} scan reads {got:.1f} GB/s; probe at {mb} MB, "
                    f"{a.threads} thread(s): {probe:.1f} GB/s ({got / probe:.0%})"
                )
            report["cases"].append(
                {"n": n, "d": d, "exact": exact, "bandwidth": bw, "block_medians_us": meds}
            )
            del fns
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
