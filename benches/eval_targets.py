"""Accuracy targets of issue 5 for one encoder, on the real datasets in ../shared.

    python benches/eval_targets.py [MODEL_DIR_OR_NAME] > out.json

Embeddings are computed once per text (disk cache). The prediction is the router's
own decision step on each cached query vector (`evaluation.decisions.decide_vectors`,
the route table's `decide`: lexical bias, the head, tiers, out of scope, clarify, as
`Router.route` and `fit` run it; no previous route or context): a `route` decision
predicts its route, `clarify` and `none` predict out of scope. Beside the accuracy
figures each configuration reports the decision figures (`decision_figures`: routed
share, precision among routed, confident-wrong, clarify and none rates) and `top1`, the
argmax of the raw cosines (or of the head's in-scope probabilities) on the in-scope
rows: a raw argmax, not a decision. Calibration only ever sees validation data;
BANKING77 and MASSIVE configurations are not fitted (`min_score` 0, the zero-label
tiers), so they use the full train split.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from routecore import Encoder
from routecore.decide.figures import decision_figures
from routecore.evaluation import datasets as D
from routecore.evaluation import metrics as M
from routecore.evaluation import runner as R
from routecore.evaluation.decisions import decide_vectors
from routecore.evaluation.tool_eval import tools_router


def decide(router, X, texts):
    """The router's decision per query (``decide_vectors``, the route table's own step), as
    predictions (the route of a ``route`` decision, else None) and the decisions themselves."""
    dec = decide_vectors(router, X, texts)
    return [r if a == "route" else None for a, r, _ in dec], dec


def top1_argmax(router, X, gold):
    """Raw top-1 on the in-scope rows: the argmax of the raw cosines (``runner.raw_scores``, no
    lexical bias), or of the head's probabilities over the routes; no cut, tier or rule."""
    names = [r.name for r in router.route_specs]
    ins = [i for i, g in enumerate(gold) if g in names]
    if not ins:
        return None
    if router.head is not None:
        h = router.head
        P = h.proba(X[ins])[:, [h.classes.index(n) for n in names]]
    else:
        P = R.raw_scores(router, X[ins])
    return float(np.mean([names[a] == gold[i] for a, i in zip(P.argmax(1), ins)]))


def run_intents(enc, train, val, test, oos, configs):
    texts = [s.text for s in test.samples]
    Xte = R.embed(enc, texts, progress=True, what=f"embed {test.name}")
    gold = [s.label for s in test.samples]
    out = {}
    for name, head, objective, floor in configs:
        t = time.time()
        r = R.build_router(train, enc, head=head, progress=True)
        if objective:
            R.fit_router(r, val, objective=objective, coverage=floor or 0.9)
        else:
            r.policy = r.policy.with_overrides(min_score=0.0)
        pred, dec = decide(r, Xte, texts)
        f = decision_figures(dec, gold)
        res = {
            "in_scope_accuracy": M.in_scope_accuracy(gold, pred, oos),
            "accuracy": float(np.mean([(p or oos) == g for p, g in zip(pred, gold)])),
            "decisions": f.to_dict(),
            "top1": top1_argmax(r, Xte, gold),
            "seconds": round(time.time() - t, 1),
        }
        if any(g == oos for g in gold):
            res["oos"] = M.oos_prf(gold, pred, oos)
        res["fitted"] = r.fitted.to_dict() if r.fitted is not None else {}
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
    plain = [
        ("cosine router, min_score 0 (not fitted)", False, None, None),
        ("linear head (not fitted)", True, None, None),
    ]
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
