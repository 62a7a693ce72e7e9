"""A live route change on a router with the default exemplar head: the whole recalibration
(five trainings) against ``recalibrate=False`` (the serving head alone, cuts kept).

    python benches/live_update_head.py [--shots 30] [--rounds 3]

CLINC150 train, 150 routes x ``--shots`` exemplars (cached embeddings; the new route's
four exemplars are embedded by the update), e5. Per round: add a route, then remove it,
each timed (`Router.add_routes` / `remove_routes`), both modes interleaved.
"""

from __future__ import annotations

import argparse
import statistics
import time

from routecore import Encoder, RouteSpec
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import build_router

NEW = RouteSpec(
    "weather_live",
    ("will it rain tomorrow", "weather forecast for Paris", "is it cold outside", "temperature this weekend"),
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shots", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    enc = Encoder.load()
    r = build_router(D.clinc150("train"), enc, shots=a.shots, head="exemplars")
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(a.rounds):
        for recal in (True, False):
            t0 = time.perf_counter()
            r.add_routes([NEW], recalibrate=recal)
            r.remove_routes([NEW.name], recalibrate=recal)
            times[recal].append((time.perf_counter() - t0) / 2)
    for recal, v in times.items():
        print(
            f"recalibrate={recal}: median {statistics.median(v):.2f} s per change "
            f"({len(r.route_specs)} routes x {a.shots})"
        )


if __name__ == "__main__":
    main()
