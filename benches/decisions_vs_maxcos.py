"""The router's routed decisions against a plain max-cosine threshold router (issue 12).

    routecore eval --train TRAIN --data TEST --json --no-progress --out DIR_ZL
    routecore eval --bundle BUNDLE --data TEST --json --no-progress --out DIR_FIT
    python benches/decisions_vs_maxcos.py --train TRAIN --data TEST --pred DIR_ZL,DIR_FIT \\
        [--model PATH] [--at 0.90,0.95]

Reads each run's predictions.jsonl (one row per test query: action, pred, label,
confidence). The baseline routes a query to its top-1 route when its top-1 raw
score (max cosine over the route's exemplars, the exemplars of
`runner.build_router`) is >= t; its coverage at precision P is the largest
share of queries it routes with precision >= P over all t. For each run and
each P (the run's own routed accuracy, then --at):

- router: the run's routed share if its routed accuracy is >= P, else the largest
  share of queries left when its routed decisions are trimmed from the least
  confident up until precision >= P (the router cannot route more than it did);
- maxcos: the baseline's coverage at precision >= P.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from routecore import Encoder
from routecore.calibrate.calibration import route_scores
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed, routes_from_split


def coverage_at(score: np.ndarray, correct: np.ndarray, p: float, n: int) -> tuple[float, float | None]:
    """Largest share of ``n`` queries selected by ``score >= t`` with precision >= p (and that precision)."""
    order = np.argsort(-score, kind="stable")
    s, c = score[order], correct[order].astype(np.float64)
    prec = np.cumsum(c) / np.arange(1, len(c) + 1)
    # Only cut between distinct scores: a threshold keeps all ties.
    last_of_tie = np.r_[s[1:] != s[:-1], True]
    ok = np.flatnonzero((prec >= p - 1e-12) & last_of_tie)
    if not len(ok):
        return 0.0, None
    k = ok[-1]
    return float((k + 1) / n), float(prec[k])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--pred", required=True, help="comma-separated `routecore eval --out` folders")
    ap.add_argument("--model", default=None)
    ap.add_argument("--at", default="0.90,0.95")
    a = ap.parse_args()
    enc = Encoder.load(a.model, cache_size=0)
    train, test = D.load_routes(a.train), D.load_routes(a.data)
    routes = routes_from_split(train)
    names = [r.name for r in routes]
    pos = {n: i for i, n in enumerate(names)}
    texts, owners = [], []
    for i, r in enumerate(routes):
        ex = r.exemplars()
        texts += ex
        owners += [i] * len(ex)
    V = embed(enc, texts, what="exemplars")  # the same call (and cache) as runner.build_router
    Q = embed(enc, [s.text for s in test.samples], what="queries")
    S = route_scores(Q, V, np.array(owners), len(names))
    gold = np.array([pos.get(s.label, -1) for s in test.samples])
    top, right = S.max(axis=1), S.argmax(axis=1) == gold
    n = len(gold)
    print(
        json.dumps(
            {
                "model": enc.model_id,
                "train": a.train,
                "data": a.data,
                "n": n,
                "raw_top1": round(float(right.mean()), 4),
            }
        )
    )
    for d in a.pred.split(","):
        rows = [
            json.loads(l)
            for l in (Path(d) / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
            if l.strip()
        ]
        assert len(rows) == n and all(r["text"] == s.text for r, s in zip(rows, test.samples)), d
        routed = np.array([r["action"] == "route" for r in rows])
        ok = np.array([r["action"] == "route" and r["pred"] == r["label"] for r in rows])
        conf = np.array(
            [r["confidence"] if r["action"] == "route" else -np.inf for r in rows], dtype=np.float64
        )
        own = float(ok.sum() / max(routed.sum(), 1))
        res = {
            "run": d,
            "routed_share": round(float(routed.mean()), 4),
            "routed_accuracy": round(own, 4),
            "at": [],
        }
        for p in [own] + [float(x) for x in a.at.split(",")]:
            if own >= p:
                rc, rp = float(routed.mean()), own
            else:
                rc, rp = coverage_at(conf[routed], ok[routed], p, n)
            bc, bp = coverage_at(top, right, p, n)
            res["at"].append(
                {
                    "precision": round(p, 4),
                    "router_share": round(rc, 4),
                    "router_precision": None if rp is None else round(rp, 4),
                    "maxcos_share": round(bc, 4),
                    "maxcos_precision": None if bp is None else round(bp, 4),
                    "router_minus_maxcos": round(rc - bc, 4),
                }
            )
        print(json.dumps(res))


if __name__ == "__main__":
    main()
