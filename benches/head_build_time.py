"""Build time of a router with and without the default exemplar head, at the sizes
configs have (CLINC150 train, cached embeddings, so the encoder is not timed).

    python benches/head_build_time.py [--model PATH] [--rounds 3]

Sizes: routes x exemplars per route, from 4 x 7 to 150 x 100. Per size: the median build time
with ``head: off`` (the cosine calibration only) and with the head (one training with the
model's decision prior, routecore.calibrate.prior; five without), the head's share, and issue 34's goal
for the overhead over encoding the utterances (the exemplars' embeddings come from the cache,
so the build time is that overhead).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation.datasets import Dataset
from routecore.evaluation.runner import build_router, embed

SIZES = ((4, 7), (5, 10), (10, 20), (30, 20), (50, 30), (150, 10), (150, 30), (150, 100))
#: Issue 34's goals for the build's overhead over encoding the config's own utterances, in seconds.
GOALS = {(4, 7): 0.3, (150, 10): 2.0, (150, 100): 10.0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    enc = Encoder.load(a.model) if a.model else Encoder.load()
    train = D.clinc150("train")
    embed(enc, [s.text for s in train.samples])  # warm the cache once
    labels = sorted({s.label for s in train.samples if s.label != "oos"})
    for routes, shots in SIZES:
        keep = set(labels[:routes])
        sub = Dataset(train.name, [s for s in train.samples if s.label in keep])
        times: dict[str, list[float]] = {"off": [], "exemplars": []}
        for _ in range(a.rounds):
            for head in times:  # interleaved
                t0 = time.perf_counter()
                r = build_router(sub, enc, shots=shots, head="exemplars" if head == "exemplars" else False)
                times[head].append(time.perf_counter() - t0)
                if head == "exemplars":
                    head_stats = r.calibration.stats.head
                    skipped = head_stats.skipped if head_stats is not None else None
        off, on = statistics.median(times["off"]), statistics.median(times["exemplars"])
        print(
            json.dumps(
                {
                    "routes": routes,
                    "exemplars": routes * shots,
                    "build_off_s": round(off, 3),
                    "build_head_s": round(on, 3),
                    "head_s": round(on - off, 3),
                    "head_skipped": skipped,
                    "goal_s": GOALS.get((routes, shots)),
                    "calibrated": r.calibrated,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
