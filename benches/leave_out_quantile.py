"""Choose the leave-out quantile of zero-label calibration on DEV splits (never test):
high-tier and routed share @ precision per quantile of same-route pairs left out.

    ROUTECORE_HOME=/tmp/rchome python benches/leave_out_quantile.py [MODEL|-] [clinc150,massive-en,...]
"""
import sys

import numpy as np

import routecore.calibration as C
from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed
enc = Encoder.load(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != '-' else None, cache_size=0)
bg = embed(enc, list(C.background_texts()[0]))
sets = {"clinc150": (D.clinc150("train"), D.clinc150("val")), "massive-en": (D.massive("en-US","train"), D.massive("en-US","dev")),
        "massive-fr": (D.massive("fr-FR","train"), D.massive("fr-FR","dev")), "massive-zh": (D.massive("zh-CN","train"), D.massive("zh-CN","dev"))}
if len(sys.argv) > 2: sets = {k: v for k, v in sets.items() if k in sys.argv[2].split(",")}
data = {}
for name, (tr, dv) in sets.items():
    trs = [s for s in tr.samples if s.label != "oos"]
    labels = sorted({s.label for s in trs}); pos = {n: i for i, n in enumerate(labels)}
    V = embed(enc, [s.text for s in trs]); owners = np.array([pos[s.label] for s in trs])
    Q = embed(enc, [s.text for s in dv.samples]); gold = np.array([pos.get(s.label, -1) for s in dv.samples])
    data[name] = (V, owners, len(labels), Q, gold, C.route_scores(Q, V, owners, len(labels)))
for q in [0.95, 0.9, 0.8, 0.7, 0.5]:  # share of same-route pairs kept (1 - q left out)
    C.NEAR_DUPLICATE_QUANTILE = q
    row = []
    for name, (V, owners, R, Q, gold, S) in data.items():
        cal = C.zero_label(V, owners, R, bg)
        P = C.softmax(S, cal.temperature); p1, mg, arg = C.top2(P); best = S.max(axis=1)
        oos = best < cal.min_score; right = arg == gold
        high = (p1 >= cal.high) & (mg >= cal.margin) & ~oos; routed = (p1 >= cal.medium) & ~oos
        ins = gold >= 0
        row.append(f"{name}: high {high.mean():.3f}@{right[high].mean():.3f} routed {routed.mean():.3f}@{right[routed].mean():.3f} inacc {(right & ~oos)[ins].mean():.3f}")
    print(q, " | ".join(row), flush=True)
