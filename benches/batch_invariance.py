"""Batch-independent embeddings (issue 12 §5): cosine single vs batched, and the cost.

    python benches/batch_invariance.py [--n 1000] [--rounds 2] [--workers]

For each int8 model in ../shared/models:

1. Cosine between each reference text (reference.jsonl) encoded alone and the same
   text in batches: all 60 in one call, then shuffled batches of 8 and 32 (the
   worst per text is kept; min and mean over the texts, kinds query and passage).
2. Exemplar throughput: the first ``--n`` texts of clinc150 train.jsonl embedded
   as passages in calls of 64 (``runner.embed``'s default), cache off.
3. Single-query latency: 200 clinc150 texts, one call each (median, p90).

Two modes run alternately in the same process, ``--rounds`` times each:
``padded`` is a copy of the model folder (symlinks) whose config.json says
``"batch_invariant": false`` (the old path: one padded ORT run per call), ``auto``
is the shipped folder (per-text runs, spread over 1-thread sessions, once dynamic
quantization is detected). On a build without the option both modes are the old
path. ``--workers`` also times one 2-thread encoder against two 1-thread encoders
in two Python threads (the measurement behind the pool of 1-thread sessions).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_encoder import batch_cosines  # noqa: E402  (the test's own measure)

SHARED = Path(os.environ.get("ROUTECORE_SHARED", ROOT.parent / "shared"))
MODELS = {
    "minilm-int8": SHARED / "models" / "all-minilm-l6-v2",
    "e5-small-int8": SHARED / "models" / "multilingual-e5-small",
}


def padded_copy(folder: Path, tmp: Path) -> Path:
    """The model folder with ``"batch_invariant": false`` (files symlinked)."""
    d = tmp / folder.name
    d.mkdir()
    for f in folder.iterdir():
        if f.name != "config.json":
            (d / f.name).symlink_to(f)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["batch_invariant"] = False
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def throughput(enc, texts: list[str], batch: int = 64) -> float:
    t = time.perf_counter()
    for i in range(0, len(texts), batch):
        enc.encode(texts[i : i + batch], kind="passage")
    return len(texts) / (time.perf_counter() - t)


def two_workers(encs, texts: list[str], batch: int = 64) -> float:
    half = len(texts) // 2
    parts = [texts[:half], texts[half:]]
    ts = [threading.Thread(target=throughput, args=(e, p, batch)) for e, p in zip(encs, parts)]
    t = time.perf_counter()
    [x.start() for x in ts]
    [x.join() for x in ts]
    return len(texts) / (time.perf_counter() - t)


def latency(enc, queries: list[str]) -> tuple[float, float]:
    for q in queries[:10]:
        enc.encode(q)
    ms = []
    for q in queries:
        t = time.perf_counter()
        enc.encode(q)
        ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    return statistics.median(ms), ms[int(0.9 * len(ms))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", action="store_true")
    ap.add_argument("--models", default=",".join(MODELS))
    a = ap.parse_args()
    from routecore import Encoder

    rows = [
        json.loads(x) for x in (SHARED / "datasets" / "clinc150" / "train.jsonl").read_text().splitlines()
    ]
    texts = [r["text"] for r in rows[: a.n]]
    queries = [r["text"] for r in rows[a.n : a.n + 200]]
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
        f"python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split(","):
            folder = MODELS[name]
            encs = {
                "padded": Encoder.load(padded_copy(folder, Path(tmp)), variant="int8", cache_size=0),
                "auto": Encoder.load(folder, variant="int8", cache_size=0),
            }
            refs = [json.loads(x)["text"] for x in (folder / "reference.jsonl").read_text().splitlines()]
            for mode, enc in encs.items():
                for kind in ("query", "passage"):
                    single = np.stack([enc.encode(t, kind=kind)[0] for t in refs])
                    cs = batch_cosines(lambda b: enc.encode(b, kind=kind), refs, single)
                    print(
                        f"{name} {mode:6} {kind:7} cosine single vs batched: min {cs.min():.6f} "
                        f"({refs[int(cs.argmin())]!r:.30}) mean {cs.mean():.6f}"
                    )
            tps: dict[str, list[float]] = {m: [] for m in encs}
            lat: dict[str, list[tuple[float, float]]] = {m: [] for m in encs}
            for r in range(a.rounds):
                for mode in list(encs) if r % 2 == 0 else list(encs)[::-1]:
                    tps[mode].append(throughput(encs[mode], texts))
                    lat[mode].append(latency(encs[mode], queries))
            for mode in encs:
                p50 = statistics.median(x[0] for x in lat[mode])
                p90 = statistics.median(x[1] for x in lat[mode])
                print(
                    f"{name} {mode:6} exemplars {a.n} texts: "
                    f"{' '.join(f'{x:.1f}' for x in tps[mode])} texts/s "
                    f"(best {max(tps[mode]):.1f}); single query p50 {p50:.2f} ms p90 {p90:.2f} ms"
                )
            print(
                f"{name} auto/padded throughput ratio (best of each): "
                f"{max(tps['auto']) / max(tps['padded']):.3f}"
            )
            if a.workers:
                one = Encoder.load(folder, variant="int8", cache_size=0, threads=2)
                pair = [Encoder.load(folder, variant="int8", cache_size=0, threads=1) for _ in range(2)]
                for r in range(a.rounds):
                    x1 = throughput(one, texts)
                    x2 = two_workers(pair, texts)
                    print(
                        f"{name} auto round {r}: 1 encoder x 2 threads {x1:.1f} texts/s, "
                        f"2 encoders x 1 thread in 2 Python threads {x2:.1f} texts/s"
                    )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
