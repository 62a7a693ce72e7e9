"""Choose how much zero-label calibration leaves out with each held-out row of the high tier, on DEV
splits (never test): high-tier and routed share @ precision when the row's n nearest
same-route exemplars are left out with it (n = 0 is plain leave-one-out).

    ROUTECORE_HOME=/tmp/rchome python benches/leave_out.py [MODEL|-] [clinc150,massive-en,...]
"""

import sys

import numpy as np

import routecore.calibrate.calibration as C
from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed

enc = Encoder.load(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] != "-" else None, cache_size=0)
bg = embed(enc, list(C.background_texts()[0]))
sets = {
    "clinc150": (D.clinc150("train"), D.clinc150("val")),
    "massive-en": (D.massive("en-US", "train"), D.massive("en-US", "dev")),
    "massive-fr": (D.massive("fr-FR", "train"), D.massive("fr-FR", "dev")),
    "massive-zh": (D.massive("zh-CN", "train"), D.massive("zh-CN", "dev")),
}
if len(sys.argv) > 2:
    sets = {k: v for k, v in sets.items() if k in sys.argv[2].split(",")}
data = {}
for name, (tr, dv) in sets.items():
    trs = [s for s in tr.samples if s.label != "oos"]
    labels = sorted({s.label for s in trs})
    pos = {n: i for i, n in enumerate(labels)}
    V = embed(enc, [s.text for s in trs], what=f"{name} train")
    owners = np.array([pos[s.label] for s in trs])
    Q = embed(enc, [s.text for s in dv.samples], what=f"{name} dev")
    gold = np.array([pos.get(s.label, -1) for s in dv.samples])
    data[name] = (V, owners, len(labels), gold, C.route_scores(Q, V, owners, len(labels)))
for n in [0, 1, 2, 3]:  # 0: the tiers use the same rows as the other fits
    row = []
    for name, (V, owners, R, gold, S) in data.items():
        cal = C.zero_label(V, owners, R, bg, leave_out_nearest=n)
        p1, mg, arg = C.top2(C.softmax(S, cal.temperature))
        oos = S.max(axis=1) < cal.min_score
        right = arg == gold
        high = (p1 >= cal.high) & (mg >= cal.margin) & ~oos
        routed = (p1 >= cal.medium) & ~oos
        row.append(
            f"{name}: high {high.mean():.3f}@{right[high].mean():.3f} "
            f"routed {routed.mean():.3f}@{right[routed].mean():.3f} "
            f"inacc {(right & ~oos)[gold >= 0].mean():.3f}"
        )
    print(n, " | ".join(row), flush=True)
