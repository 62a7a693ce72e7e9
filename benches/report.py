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
    print(f"Machine: {m.get('cpu', {}).get('brand_raw', '?')}, {m.get('cpu', {}).get('count', '?')} cores; "
          f"date {data['datetime'][:19]}; python {m.get('python_version')}\n")
    searches = defaultdict(dict)
    compact, bw, steps = [], {}, []
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
    if bw:
        print("Read bandwidth: " + ", ".join(f"{t} thread(s) {v:.1f} GB/s" for t, v in sorted(bw.items())) + "\n")
    if searches:
        print("| d | N | batch | threads | routecore p50 µs | numpy p50 µs | FAISS p50 µs | vs numpy | vs FAISS | GB/s (routecore) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for (d, n, b, t), r in sorted(searches.items()):
            if not {"routecore", "numpy", "faiss"} <= r.keys():
                continue
            rc, npy, fx = r["routecore"]["median"], r["numpy"]["median"], r["faiss"]["median"]
            gbs = n * d * 4 / rc / 1e9
            print(f"| {d} | {n:,} | {b} | {t} | {us(rc)} | {us(npy)} | {us(fx)} | {npy / rc:.2f}× | {fx / rc:.2f}× | {gbs:.1f} |")
        print()
    if compact:
        base = {(e["threads"], st_d): None for e, _ in compact for st_d in [0]}
        print("| d | storage | threads | p50 ms (1 query, N=1e6) | throughput vs f32 | top-5 = exact f32 |")
        print("|---|---|---|---|---|---|")
        f32 = {}
        for e, st in compact:
            if e["storage"] == "f32":
                f32[(e.get("d"), e["threads"])] = st["median"]
        for e, st in sorted(compact, key=lambda x: (x[0].get("d", 0), x[0]["threads"], x[0]["storage"])):
            ref = f32.get((e.get("d"), e["threads"]))
            ratio = f"{ref / st['median']:.2f}×" if ref else "?"
            print(f"| {e.get('d', '?')} | {e['storage']} | {e['threads']} | {st['median'] * 1e3:.2f} | {ratio} | {e['top5_equal_exact'] * 100:.1f}% |")
        print()
        del base
    if steps:
        print("| d | threads | scoring step p50 µs | p95 µs | stream time µs | ratio |")
        print("|---|---|---|---|---|---|")
        for e, st in sorted(steps, key=lambda x: (x[0]["d"], x[0]["threads"])):
            print(f"| {e['d']} | {e['threads']} | {us(st['median'])} | {us(st.get('q3', st['median']))} | {e['stream_us']:.1f} | {st['median'] * 1e6 / e['stream_us']:.2f}× |")


if __name__ == "__main__":
    main(sys.argv[1])
