"""Default model timings (issue 12): `Encoder.load()` cold and warm, and
`Router.route()` / `Router.tools()` on the examples, split into encode and the rest.

    python benches/default_timings.py [--runs 5] [--queries 200] [--model PATH]

Cold: a fresh `python` process per run that imports routecore and loads the
encoder (import and load timed separately, plus the process's wall time); warm:
a second `Encoder.load()` in that process. Routing: 200 distinct queries of ~16
and ~32 tokens (CLINC150 test texts joined and cut to the length, tokens counted
by the encoder with its "query" prefix and special tokens), query cache off
(`Encoder.load(cache_size=0)`), threads=1 and 2; each query is routed once after
one warm-up pass over 20 other queries. encode = `timings.encode + timings.tokenize`,
rest = `timings.total - encode`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from routecore import Encoder
t1 = time.perf_counter()
e = Encoder.load(MODEL)
t2 = time.perf_counter()
e2 = Encoder.load(MODEL)
t3 = time.perf_counter()
e.encode_with_stats(["warm up the model"])
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "cold_load_s": t2 - t1, "warm_load_s": t3 - t2,
                  "first_encode_ms": (t4 - t3) * 1e3, "model": e.model_id}))
"""


def queries(enc, n: int, target: int) -> list[str]:
    from routecore.evaluation import datasets as D

    texts = [s.text for s in D.clinc150("test").samples]
    out, seen, i = [], set(), 0
    while len(out) < n + 20:
        words: list[str] = []
        j = i
        while len(enc.tokenize([" ".join(words)], kind="query")[0]) < target:
            words += texts[j % len(texts)].split()
            j += 1
        while len(words) > 1 and len(enc.tokenize([" ".join(words)], kind="query")[0]) > target:
            words.pop()
        q = " ".join(words)
        if q not in seen:
            seen.add(q)
            out.append(q)
        i = j
    return out


def pct(a) -> dict:
    a = np.asarray(a)
    return {"p50": round(float(np.percentile(a, 50)), 3), "p95": round(float(np.percentile(a, 95)), 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--model", default=None)
    a = ap.parse_args()
    child = CHILD.replace("MODEL", repr(a.model))
    loads = []
    for _ in range(a.runs):
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True)
        loads.append({**json.loads(r.stdout), "process_wall_s": time.perf_counter() - t})
    summary = {
        k: {
            "runs": [round(x[k], 3) for x in loads],
            "median": round(float(np.median([x[k] for x in loads])), 3),
        }
        for k in ("import_s", "cold_load_s", "warm_load_s", "first_encode_ms", "process_wall_s")
    }
    print(json.dumps({"model": loads[0]["model"], "load": summary}), flush=True)

    from routecore import Encoder, Router

    probe = Encoder.load(a.model, cache_size=0)
    sets = {t: queries(probe, a.queries, t) for t in (16, 32)}
    for t, qs in sets.items():
        lens = [len(x) for x in probe.tokenize(qs, kind="query")]
        print(
            json.dumps(
                {
                    "target_tokens": t,
                    "distinct": len(set(qs)),
                    "tokens_mean": round(float(np.mean(lens)), 2),
                    "tokens_min": min(lens),
                    "tokens_max": max(lens),
                    "example": qs[0],
                }
            ),
            flush=True,
        )
    del probe
    for threads in (1, 2):
        enc = Encoder.load(a.model, cache_size=0, threads=threads)
        routers = {
            "route it_ops_routes.yaml": Router.from_config(
                ROOT / "examples" / "it_ops_routes.yaml", encoder=enc
            ),
            "tools tools.yaml": Router.from_config(ROOT / "examples" / "tools.yaml", encoder=enc),
        }
        for what, r in routers.items():
            call = r.route if what.startswith("route") else r.tools
            for t, qs in sets.items():
                for q in qs[a.queries :]:  # warm-up on the 20 extra queries
                    call(q)
                enc_ms, rest_ms, total_ms, wall_ms = [], [], [], []
                for q in qs[: a.queries]:
                    t0 = time.perf_counter()
                    d = call(q)
                    wall_ms.append((time.perf_counter() - t0) * 1e3)
                    e = d.timings.encode + d.timings.tokenize
                    enc_ms.append(e)
                    rest_ms.append(d.timings.total - e)
                    total_ms.append(d.timings.total)
                print(
                    json.dumps(
                        {
                            "call": what,
                            "threads": threads,
                            "tokens": t,
                            "n": len(enc_ms),
                            "encode_ms": pct(enc_ms),
                            "rest_ms": pct(rest_ms),
                            "total_ms": pct(total_ms),
                            "wall_ms": pct(wall_ms),
                        }
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    main()
