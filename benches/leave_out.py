"""Choose how much zero-label calibration leaves out with each held-out row of the high tier, on DEV
splits (never test): high-tier and routed share @ precision when the row's n nearest
same-route exemplars are left out with it (n = 0 is plain leave-one-out).

    ROUTECORE_HOME=/tmp/rchome python benches/leave_out.py [MODEL|-] [clinc150,massive-en,...]

Each figure is the router's own decision on the cached dev vectors (``decide_vectors``, the
route table's decision step), for a router built as ``benches/zero_label.py`` builds it (every
train utterance, that calibration in force, no head, no lexical pass); ``argmax`` is the raw
top-1 of the cosines on the in-scope rows, not a decision.
"""

import sys

import routecore.calibrate.calibration as C
from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed
from zero_label import cosine_router, figures

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
dev = {}
for name, (_, dv) in sets.items():
    texts = [s.text for s in dv.samples]
    dev[name] = (embed(enc, texts, what=f"{name} dev"), texts, [s.label for s in dv.samples])
for n in [0, 1, 2, 3]:  # 0: the tiers use the same rows as the other fits
    row = []
    for name, (tr, _) in sets.items():
        Q, texts, gold = dev[name]
        router = cosine_router(tr, enc, lambda V, o, R, n=n: C.zero_label(V, o, R, bg, leave_out_nearest=n))[
            0
        ]
        f = figures(router, Q, texts, gold)
        row.append(
            f"{name}: high {f['high_share']:.3f}@{f['high_precision'] or 0:.3f} "
            f"routed {f['routed_share']:.3f}@{f['routed_precision'] or 0:.3f} "
            f"argmax {f['top1_argmax']:.3f}"
        )
    print(n, " | ".join(row), flush=True)
