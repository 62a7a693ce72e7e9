"""The routing step beside semantic-router's, at 150 routes x 100 exemplars, in one run (issue 35 §7).

    ROUTECORE_HOME=/tmp/rchome python benches/routing_step_peer.py [--queries 500] [--rounds 5]

CLINC150 train, 100 utterances a route (seed 0), the bundled e5; CLINC150 test queries whose
embeddings both sides read from one cache, so neither encodes. routecore: ``Router.route(text,
vector=v)``, the whole decision (scan, lexical pass, exemplar head, tiers, reason), as a config
builds it. semantic-router 1.1.1: ``IndexedRouter(encoder, routes, top_k=5, aggregation="mean")``
called on the text, routecore's encoder wrapped to answer from the same vectors. The two alternate
by rounds; prints the per-query p50 / p95 ms of each over all rounds, and their ratio.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from semantic_router import Route
from semantic_router.routers import IndexedRouter

from few_shot_peer import peer_encoder
from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation import runner as R


def timed(call, items) -> list[float]:
    out = []
    for it in items:
        t = time.perf_counter()
        call(it)
        out.append((time.perf_counter() - t) * 1e3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    enc = Encoder.load()
    train = D.clinc150("train")
    routes = R.routes_from_split(train, shots=100, seed=0)
    router = R.build_router(train, enc, shots=100, seed=0, head="exemplars")
    test = [s.text for s in D.clinc150("test").samples[: a.queries]]
    X = R.embed(enc, test, what="embedding queries")
    utts = [u for r in routes for u in r.utterances]
    wrapped = peer_encoder(enc, utts + test, np.concatenate([R.embed(enc, utts), X]))
    peer = IndexedRouter(
        wrapped, [Route(name=r.name, utterances=list(r.utterances)) for r in routes], top_k=5
    )
    rc_items, sr_items = list(zip(test, X)), test
    for t, v in rc_items[:20]:  # warm both
        router.route(t, vector=v)
        peer(t)
    rc: list[float] = []
    sr: list[float] = []
    for _ in range(a.rounds):
        rc += timed(lambda it: router.route(it[0], vector=it[1]), rc_items)
        sr += timed(peer, sr_items)
    p = {k: (np.percentile(v, 50), np.percentile(v, 95)) for k, v in (("routecore", rc), ("sr", sr))}
    ratio = (p["sr"][0] / p["routecore"][0], p["sr"][1] / p["routecore"][1])
    print(
        f"{platform.machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, 150 x 100, "
        f"{len(test)} queries x {a.rounds} rounds: routecore route() {p['routecore'][0]:.3f} / "
        f"{p['routecore'][1]:.3f} ms p50 / p95, semantic-router {p['sr'][0]:.3f} / {p['sr'][1]:.3f} ms; "
        f"semantic-router / routecore {ratio[0]:.2f}x / {ratio[1]:.2f}x"
    )


if __name__ == "__main__":
    main()
