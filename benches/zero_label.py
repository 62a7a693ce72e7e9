"""Zero-label calibration against the intent sets: how the calibrated tiers and
out-of-scope cut hold on the test splits, with routes from the train split only.

    python benches/zero_label.py [--model PATH] [--sets clinc150,banking77,massive-en,...] \\
        [--no-clinc-background]

Vectorised over precomputed scores (the same aggregation and rules as the router's
tiers and out-of-scope cut; bias rules and ties are not simulated here, see
`routecore eval` for the full decision). Embeddings are cached under
$ROUTECORE_HOME/embeddings (set ROUTECORE_HOME to a scratch folder).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import NamedTuple

import numpy as np

from routecore import Encoder
from routecore.calibrate.calibration import background_texts, route_scores, softmax, top2, zero_label
from routecore.evaluation import calibrate as fitting
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed

#: Validation splits, for the tiers `routecore fit` would set (temperature and tiers fitted on them).
VAL = {
    "clinc150": lambda: D.clinc150("val"),
    "massive-en": lambda: D.massive("en-US", "dev"),
    "massive-fr": lambda: D.massive("fr-FR", "dev"),
    "massive-zh": lambda: D.massive("zh-CN", "dev"),
    "xling-fr": lambda: D.massive("fr-FR", "dev"),
    "xling-zh": lambda: D.massive("zh-CN", "dev"),
}

SETS = {
    "clinc150": lambda: (D.clinc150("train"), D.clinc150("test")),
    "banking77": lambda: (D.banking77("train"), D.banking77("test")),
    "massive-en": lambda: (D.massive("en-US", "train"), D.massive("en-US", "test")),
    "massive-fr": lambda: (D.massive("fr-FR", "train"), D.massive("fr-FR", "test")),
    "massive-zh": lambda: (D.massive("zh-CN", "train"), D.massive("zh-CN", "test")),
    "xling-fr": lambda: (D.massive("en-US", "train"), D.massive("fr-FR", "test")),
    "xling-zh": lambda: (D.massive("en-US", "train"), D.massive("zh-CN", "test")),
}


class TrainRoutes(NamedTuple):
    """A set's train split as routes: label positions, in-scope texts, their owners and embeddings."""

    test: D.Dataset
    pos: dict[str, int]
    texts: list[str]
    owners: np.ndarray
    V: np.ndarray


def train_routes(name: str, enc: Encoder) -> TrainRoutes:
    """Set ``name``'s routes from its train split (out-of-scope rows left out), embedded (cached)."""
    train, test = SETS[name]()
    pos = {n: i for i, n in enumerate(sorted({s.label for s in train.samples if s.label != "oos"}))}
    tr = [s for s in train.samples if s.label != "oos"]
    texts = [s.text for s in tr]
    return TrainRoutes(
        test, pos, texts, np.array([pos[s.label] for s in tr]), embed(enc, texts, what=f"{name} train")
    )


def run(name: str, enc: Encoder, bg: np.ndarray) -> dict:
    test, pos, _, owners, V = train_routes(name, enc)
    labels = list(pos)
    t0 = time.perf_counter()
    cal = zero_label(V, owners, len(labels), bg)
    fit_s = time.perf_counter() - t0
    Q = embed(enc, [s.text for s in test.samples], what=f"{name} test")
    gold = np.array([pos.get(s.label, -1) for s in test.samples])
    S = route_scores(Q, V, owners, len(labels))
    P = softmax(S, cal.temperature)
    p1, mg, arg = top2(P)
    best = S.max(axis=1)
    inscope = gold >= 0
    oos_pred = best < cal.min_score
    high = (p1 >= cal.high) & (mg >= cal.margin) & ~oos_pred
    routed = (p1 >= cal.medium) & ~oos_pred
    right = arg == gold
    out = {
        "set": name,
        "n": int(len(gold)),
        "fit_s": round(fit_s, 2),
        "temperature": round(cal.temperature, 4),
        "high": round(cal.high, 3),
        "margin": round(cal.margin, 3),
        "medium": round(cal.medium, 3),
        "min_score": round(cal.min_score, 4),
        "raw_top1": float(right[inscope].mean()),
        "high_share": float(high.mean()),
        "high_precision": float(right[high].mean()) if high.any() else None,
        "routed_share": float(routed.mean()),
        "routed_precision": float(right[routed].mean()) if routed.any() else None,
        "confident_wrong": float((high & ~right).mean()),
    }
    if name in VAL:  # the high tier `fit` sets from the validation split, under the same out-of-scope cut
        val = VAL[name]()
        gv = [s.label for s in val.samples]
        Sv = route_scores(
            embed(enc, [s.text for s in val.samples], what=f"{name} val"), V, owners, len(labels)
        )
        t = fitting.fit_temperature(Sv, gv, labels)
        h, m = fitting.fit_tiers(Sv, gv, labels, t)
        f1, fmg, farg = top2(softmax(S, t))
        fhigh = (f1 >= h) & (fmg >= m) & ~oos_pred
        out.update(
            fit_high_share=float(fhigh.mean()),
            fit_high_precision=float((farg == gold)[fhigh].mean()) if fhigh.any() else None,
        )
    if (~inscope).any():
        tp = int((oos_pred & ~inscope).sum())
        prec = tp / max(int(oos_pred.sum()), 1)
        rec = tp / int((~inscope).sum())
        out["oos_f1"] = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out["inscope_acc"] = float((right & ~oos_pred)[inscope].mean())
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument(
        "--no-clinc-background", action="store_true", help="drop every CLINC150-derived background sentence"
    )
    a = ap.parse_args()
    enc = Encoder.load(a.model, cache_size=0)
    texts, sources = background_texts()
    keep = [t for t, s in zip(texts, sources) if not (a.no_clinc_background and s.startswith("clinc150"))]
    bg = embed(enc, keep, what="background")
    print(json.dumps({"model": enc.model_id, "background": len(keep)}))
    for name in a.sets.split(","):
        print(json.dumps(run(name, enc, bg)), flush=True)


if __name__ == "__main__":
    main()
