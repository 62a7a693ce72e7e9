"""Accuracy targets of issue 5 for one encoder, on the real datasets in ../shared.

    python benches/eval_targets.py [MODEL_DIR_OR_NAME] > out.json

Embeddings are computed once per text (disk cache). The prediction is NOT
`Router.route`'s decision: it is the argmax of the raw cosines (native per-route
max aggregation, no lexical bias) when it clears that route's fitted `min_score`,
or the linear head's `predict`; no tiers, clarify or bias rules (BENCHMARKS.md,
Methodology; `evaluation.decisions.decide_vectors` is the router's own step, as
`benches/exemplar_head.py` uses it). Calibration only ever sees validation data;
BANKING77 and MASSIVE configurations are not fitted (no threshold: every
query is in scope), so they use the full train split.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation import metrics as M
from routecore.evaluation import runner as R
from routecore.evaluation.tool_eval import tools_router


def decide(router, X):
    """The argmax-plus-``min_score`` prediction (or the head's), not the router's decision step."""
    names = [r.name for r in router.route_specs]
    if router.head is not None:
        return router.head.predict(X)[0]
    S = R.raw_scores(router, X)
    th = np.array([router.policy.value("min_score", n) for n in names])
    arg, best = S.argmax(1), S.max(1)
    return [names[a] if b >= th[a] else None for a, b in zip(arg, best)]


def run_intents(enc, train, val, test, oos, configs):
    Xte = R.embed(enc, [s.text for s in test.samples], progress=True, what=f"embed {test.name}")
    gold = [s.label for s in test.samples]
    out = {}
    for name, head, objective, floor in configs:
        t = time.time()
        r = R.build_router(train, enc, head=head, progress=True)
        if objective:
            R.fit_router(r, val, objective=objective, coverage=floor or 0.9)
        else:
            r.policy = r.policy.with_overrides(min_score=0.0)
        pred = decide(r, Xte)
        res = {
            "in_scope_accuracy": M.in_scope_accuracy(gold, pred, oos),
            "accuracy": float(np.mean([(p or oos) == g for p, g in zip(pred, gold)])),
            "seconds": round(time.time() - t, 1),
        }
        if any(g == oos for g in gold):
            res["oos"] = M.oos_prf(gold, pred, oos)
        res["fitted"] = getattr(r, "fitted", {}) or {}
        out[name] = res
        print(name, json.dumps({k: v for k, v in res.items() if k != "fitted"}), file=sys.stderr, flush=True)
    return out


def main(model=None):
    enc = Encoder.load(model)
    res = {"model": enc.model_id, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    cl = [
        ("floor: max cosine, global threshold (accuracy)", False, "accuracy", None),
        ("per-route thresholds (macro-F1 with oos)", False, "macro_f1", None),
        ("linear head + oos class (max oos recall at in-scope >= 0.92 on val)", True, "oos_recall", 0.92),
    ]
    res["clinc150"] = run_intents(enc, D.clinc150("train"), D.clinc150("val"), D.clinc150("test"), "oos", cl)
    plain = [("max cosine (no threshold)", False, None, None), ("linear head", True, None, None)]
    # No configuration here is fitted, so BANKING77 (which has no validation split) uses all of train.
    res["banking77"] = run_intents(
        enc, D.banking77("train"), D.banking77("train"), D.banking77("test"), "oos", plain
    )
    for loc in ("en-US", "fr-FR", "zh-CN"):
        res[f"massive_{loc}"] = run_intents(
            enc, D.massive(loc, "train"), D.massive(loc, "dev"), D.massive(loc, "test"), "oos", plain
        )
    q, cat = D.metatool("single_tool")
    router = tools_router(cat, enc, progress=True)
    Xq = R.embed(enc, [s.query for s in q.samples], progress=True, what="embed metatool")
    hits = router.tool_catalog.tools.index.search(Xq, 5)
    ranked = [list(row) for row in hits.labels]
    res["metatool_single"] = M.tool_metrics([s.tools for s in q.samples], ranked, (1, 3, 5))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
