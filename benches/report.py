"""Turn a pytest-benchmark JSON file into the Markdown tables of BENCHMARKS.md.

python benches/report.py .benchmarks/search.json
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def us(x: float) -> str:
    return f"{x * 1e6:,.1f}"


def main(path: str) -> None:
    data = json.load(open(path))
    m = data["machine_info"]
    print(
        f"Machine: {m.get('cpu', {}).get('brand_raw', '?')}, {m.get('cpu', {}).get('count', '?')} cores; "
        f"date {data['datetime'][:19]}; python {m.get('python_version')}\n"
    )
    searches = defaultdict(dict)
    compact, bw, steps = [], {}, []
    encodes, cache_hits, routers = defaultdict(dict), [], []
    cutoffs = defaultdict(dict)
    for b in data["benchmarks"]:
        e, st = b["extra_info"], b["stats"]
        name = b["name"]
        if name.startswith("test_search"):
            key = (e["d"], e["n"], e["batch"], e["threads"])
            searches[key][e["impl"]] = st
        elif name.startswith("test_compact"):
            compact.append((e, st))
        elif name.startswith("test_read_bandwidth"):
            bw[e["threads"]] = e["gb_per_s"]
        elif name.startswith("test_scoring_step"):
            steps.append((e, st))
        elif name.startswith("test_encode"):
            encodes[(e["model"], e["threads"], e["case"])][e["impl"]] = (st, e)
        elif name.startswith("test_cutoff"):
            cutoffs[(e["d"], e["n"])][e["mode"]] = st["median"]
        elif name.startswith("test_cache_hit"):
            cache_hits.append(st)
        elif name.startswith("test_router_call"):
            routers.append(e)
    if bw:
        print(
            "Read bandwidth: "
            + ", ".join(f"{t} thread(s) {v:.1f} GB/s" for t, v in sorted(bw.items()))
            + "\n"
        )
    if searches:
        print(
            "| d | N | batch | threads | routecore p50 µs | numpy p50 µs | FAISS p50 µs "
            "| vs numpy | vs FAISS | GB/s (routecore) |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for (d, n, b, t), r in sorted(searches.items()):
            if not {"routecore", "numpy", "faiss"} <= r.keys():
                continue
            rc, npy, fx = r["routecore"]["median"], r["numpy"]["median"], r["faiss"]["median"]
            gbs = n * d * 4 / rc / 1e9
            print(
                f"| {d} | {n:,} | {b} | {t} | {us(rc)} | {us(npy)} | {us(fx)} "
                f"| {npy / rc:.2f}× | {fx / rc:.2f}× | {gbs:.1f} |"
            )
        print()
    if compact:
        print("| d | storage | threads | p50 ms (1 query, N=1e6) | throughput vs f32 | top-5 = exact f32 |")
        print("|---|---|---|---|---|---|")
        f32 = {}
        for e, st in compact:
            if e["storage"] == "f32":
                f32[(e.get("d"), e["threads"])] = st["median"]
        for e, st in sorted(compact, key=lambda x: (x[0].get("d", 0), x[0]["threads"], x[0]["storage"])):
            ref = f32.get((e.get("d"), e["threads"]))
            ratio = f"{ref / st['median']:.2f}×" if ref else "?"
            print(
                f"| {e.get('d', '?')} | {e['storage']} | {e['threads']} | {st['median'] * 1e3:.2f} "
                f"| {ratio} | {e['top5_equal_exact'] * 100:.1f}% |"
            )
        print()
    if steps:
        print("| d | storage | threads | scoring step p50 µs | p95 µs | stream time µs | ratio |")
        print("|---|---|---|---|---|---|---|")
        for e, st in sorted(steps, key=lambda x: (x[0]["d"], x[0].get("storage", "f32"), x[0]["threads"])):
            print(
                f"| {e['d']} | {e.get('storage', 'f32')} | {e['threads']} | {us(st['median'])} "
                f"| {us(_p95(st))} | {e['stream_us']:.1f} | "
                f"{st['median'] * 1e6 / e['stream_us']:.2f}× |"
            )

    if encodes:
        print(
            "| model | threads | input | tokens | routecore p50 / p95 ms "
            "| onnxruntime-python p50 / p95 ms | ratio p50 / p95 | min cosine |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for (m, t, c), r in sorted(encodes.items()):
            if len(r) < 2:
                continue
            (a, ea), (b, _) = r["routecore"], r["onnxruntime-python"]
            a95, b95 = _p95(a), _p95(b)
            print(
                f"| {m} | {t} | {c} | {ea['tokens']} | {a['median'] * 1e3:.2f} / {a95 * 1e3:.2f} "
                f"| {b['median'] * 1e3:.2f} / {b95 * 1e3:.2f} | "
                f"{a['median'] / b['median']:.3f} / {a95 / b95:.3f} | {ea['min_cosine_vs_python']:.6f} |"
            )
        print()
    if cutoffs:
        print("| d | N | elements | sequential p50 µs | parallel p50 µs | faster |")
        print("|---|---|---|---|---|---|")
        for (d, n), r in sorted(cutoffs.items()):
            if len(r) == 2:
                print(
                    f"| {d} | {n} | {n * d:,} | {us(r['sequential'])} | {us(r['parallel'])} "
                    f"| {'parallel' if r['parallel'] < r['sequential'] else 'sequential'} |"
                )
        print()
    for st in cache_hits:
        print(f"Cache hit: p50 {st['median'] * 1e6:.1f} µs, p95 {_p95(st) * 1e6:.1f} µs\n")
    if routers:
        print(
            "| call | setup | encoder | total p50 / p95 ms | encode p50 / p95 ms "
            "| rest p50 / p95 ms | rest / encode (p50) |"
        )
        print("|---|---|---|---|---|---|---|")
        for e in routers:
            print(
                f"| {e['kind']} | {e['setup']} | {e['encoder']} "
                f"| {e['total_p50_ms']:.2f} / {e['total_p95_ms']:.2f} | "
                f"{e['encode_p50_ms']:.2f} / {e['encode_p95_ms']:.2f} "
                f"| {e['other_p50_ms']:.3f} / {e['other_p95_ms']:.3f} | "
                f"{e['other_p50_ms'] / e['encode_p50_ms'] * 100:.1f}% |"
            )


def _p95(st: dict) -> float:
    """p95 from the stored raw timings when present, else the third quartile."""
    data = st.get("data")
    if data:
        import numpy as np

        return float(np.percentile(data, 95))
    return st.get("q3", st["median"])


if __name__ == "__main__":
    main(sys.argv[1])
