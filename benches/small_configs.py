"""Small configs against near-domain out-of-scope queries: 2, 3 or 5 routes of k utterances.

    ROUTECORE_HOME=/tmp/rchome python benches/small_configs.py [--sets clinc150,banking77,massive-en]
        [--heads exemplars,off] [--reps 8] [--background all|own]

The few-shot bench (benches/few_shot.py) routes every label of a set; a user's first config has
a handful. Here each config is ``R`` labels drawn at random from a set's train pool (``--reps``
draws per cell), ``k`` utterances each, built as a config builds it. It routes the dev queries of
its labels and 200 dev queries of the set's other labels, which are out of its scope but of the
same domain (other banking questions beside two banking routes). Reported per set, R and k:
``right`` in-scope queries routed right, ``routed`` in-scope share routed, ``prec`` precision
among routed (an out-of-scope query routed is wrong), ``none`` / ``clarify`` in-scope queries declined /
clarified, ``hiwrong`` wrong routes at the high tier (% of all queries), ``oos_none`` out-of-scope
queries declined, and ``disagree`` routed decisions whose route is not the raw cosines' best route
(and, in brackets, the share of them that is wrong). ``--background own``: the head's "none of these"
class learns from the project's own background rows only (``background_rows.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import background_rows  # noqa: E402
import few_shot as F  # noqa: E402
from routecore import Encoder, TableVectors  # noqa: E402
from routecore.decide.policy import Policy  # noqa: E402
from routecore.evaluation import datasets as D  # noqa: E402
from routecore.evaluation.runner import embed, routes_from_split  # noqa: E402
from routecore.routers.router import Router  # noqa: E402

OUT_OF_SCOPE = 200


def cell(
    enc: Encoder,
    train: D.Dataset,
    vec: dict,
    dev: D.Dataset,
    X: np.ndarray,
    keep: set,
    k: int,
    rep: int,
    head: str,
) -> dict[str, float]:
    sub = D.Dataset(train.name, [s for s in train.samples if s.label in keep])
    routes = routes_from_split(sub, shots=k, seed=rep)
    V = np.stack([vec[t] for r in routes for t in r.exemplars()])
    gold = np.array([s.label if s.label in keep else "oos" for s in dev.samples], dtype=object)
    idx = np.concatenate([np.flatnonzero(gold != "oos"), np.flatnonzero(gold == "oos")[:OUT_OF_SCOPE]])
    r = Router(routes, encoder=enc, policy=Policy(head=head), vectors=TableVectors(routes=V))
    decs = r.route_batch([dev.samples[i].text for i in idx], vectors=X[idx])
    g = gold[idx]
    act = np.array([d.action for d in decs], dtype=object)
    route = np.array([d.route for d in decs], dtype=object)
    cos1 = np.array([max(d.raw_scores, key=d.raw_scores.__getitem__) for d in decs], dtype=object)
    high = np.array([d.tier == "high" for d in decs])
    ins, routed = g != "oos", act == "route"
    wrong = routed & (route != g)
    return {
        "right": float((routed & (route == g))[ins].mean()),
        "routed": float(routed[ins].mean()),
        "none": float((act == "none")[ins].mean()),
        "clarify": float((act == "clarify")[ins].mean()),
        "n_routed": int(routed.sum()),
        "wrong": int(wrong.sum()),
        "hiwrong": int((wrong & high).sum()),
        "n": len(idx),
        "oos_none": float((act == "none")[~ins].mean()),
        "dis": int((routed & (cos1 != route)).sum()),
        "dis_wrong": int((wrong & (cos1 != route)).sum()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="clinc150,banking77,massive-en")
    ap.add_argument("--heads", default="exemplars")
    ap.add_argument("--reps", type=int, default=8)
    ap.add_argument("--background", default="all", choices=background_rows.CHOICES)
    a = ap.parse_args()
    background_rows.use(a.background)
    enc = Encoder.load()
    for name in a.sets.split(","):
        train, dev = F.splits(name, "dev")
        train = F.pool(train)
        vec = dict(zip([s.text for s in train.samples], embed(enc, [s.text for s in train.samples])))
        dev = F.sample(dev, 1500)
        X = embed(enc, [s.text for s in dev.samples])
        labels = sorted({s.label for s in train.samples if s.label != "oos"})
        rng = np.random.default_rng(7)
        for R in (2, 3, 5):
            for k in (3, 5, 10):
                draws = [set(rng.choice(labels, R, replace=False).tolist()) for _ in range(a.reps)]
                for head in a.heads.split(","):
                    c = [cell(enc, train, vec, dev, X, keep, k, rep, head) for rep, keep in enumerate(draws)]
                    s = {
                        key: sum(x[key] for x in c)
                        for key in ("n_routed", "wrong", "hiwrong", "n", "dis", "dis_wrong")
                    }
                    print(
                        json.dumps(
                            {
                                "set": name,
                                "routes": R,
                                "k": k,
                                "head": head,
                                "right": round(100 * np.mean([x["right"] for x in c]), 1),
                                "routed": round(100 * np.mean([x["routed"] for x in c]), 1),
                                "none": round(100 * np.mean([x["none"] for x in c]), 1),
                                "clarify": round(100 * np.mean([x["clarify"] for x in c]), 1),
                                "prec": round(100 * (1 - s["wrong"] / max(s["n_routed"], 1)), 1),
                                "hiwrong": round(100 * s["hiwrong"] / s["n"], 1),
                                "oos_none": round(100 * np.mean([x["oos_none"] for x in c]), 1),
                                "disagree": s["dis"],
                                "disagree_wrong": round(100 * s["dis_wrong"] / max(s["dis"], 1), 1),
                            }
                        ),
                        flush=True,
                    )


if __name__ == "__main__":
    main()
