"""The memory floor of the routing step: one int8 pass over the 150 x 100 CLINC150
exemplar matrix (`VectorIndex(storage="int8").search(q, 1)`: the kernel plus a tiny
re-rank), timed hot and right after an encode of the query, which evicts it from cache;
and the time merely to read those bytes from DRAM at the machine's measured
one-thread read bandwidth (`_native.read_bandwidth`), as a share of the encode.

    python benches/route_floor.py            # MiniLM and e5; prints a Markdown table
"""

from __future__ import annotations

import datetime
import platform
import time

import numpy as np

from bench_router import QUERIES
from conftest import SHARED
from routecore import Encoder, VectorIndex, _native
from routecore.evaluation import datasets as D
from routecore.evaluation import runner as R


def main() -> None:
    print(
        f"{platform.processor() or platform.machine()}, "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC\n"
    )
    bw = _native.read_bandwidth(256, 1, 5)  # GB/s, one thread
    print(f"Read bandwidth, 1 thread: {bw:.1f} GB/s\n")
    print(
        "| encoder | encode p50 ms | int8 pass hot p50 µs | int8 pass after encode p50 / p95 µs "
        "| after encode / encode "
        "| DRAM read of the int8 table µs | DRAM read / encode |"
    )
    print("|---|---|---|---|---|---|---|")
    train = D.clinc150("train")
    _native.set_parallel_cutoff(1 << 62)  # one thread, as in the routing step
    for name, path in (("minilm-int8", SHARED / "models" / "all-minilm-l6-v2"), ("e5-small-int8", None)):
        enc = Encoder.load(path, cache_size=0)
        router = R.build_router(train, enc, shots=100)
        ix = VectorIndex(enc.dim, backend="flat", storage="int8")
        ix.add(np.arange(len(router.route_table.table.texts)), router.route_table.table.index.vectors()[1])
        enc_t, cold, hot = [], [], []
        for i in range(300):
            t0 = time.perf_counter()
            q = enc.encode_with_stats([QUERIES[i % 8]]).embeddings[0]
            t1 = time.perf_counter()
            ix.search(q, 1)
            t2 = time.perf_counter()
            ix.search(q, 1)
            t3 = time.perf_counter()
            enc_t.append(t1 - t0), cold.append(t2 - t1), hot.append(t3 - t2)
        e, c, h = (np.array(x[20:]) for x in (enc_t, cold, hot))
        # int8 codes plus 16 bytes of per-row facts (scale, code sum, error, norm).
        read = len(router.route_table.table.texts) * (enc.dim + 16) / (bw * 1e9)
        print(
            f"| {name} | {np.median(e) * 1e3:.2f} | {np.median(h) * 1e6:.0f} "
            f"| {np.median(c) * 1e6:.0f} / {np.percentile(c, 95) * 1e6:.0f} | "
            f"{np.median(c) / np.median(e):.1%} | {read * 1e6:.0f} | {read / np.median(e):.1%} |"
        )


if __name__ == "__main__":
    main()
