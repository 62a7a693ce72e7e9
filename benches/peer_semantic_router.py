"""Peer comparison: semantic-router 1.1.1 vs routecore, same encoder, same
exemplars (100 per label, seeded), same datasets, in one run.

    pip install 'routecore[peer]'    # semantic-router==1.1.1 (dev only)
    python benches/peer_semantic_router.py [MODEL] [--routecore-only] > peer.json

semantic-router: `IndexedRouter(encoder, routes, top_k=5, aggregation=...)`,
its own `fit()` (Platt calibration) on the validation split, its documented
confidence threshold 0.5. routecore: the same exemplars, `routecore fit` on the
same validation split (per-route thresholds, macro-F1 with out-of-scope), then its
own decision step on each cached query vector (`evaluation.decisions.decide_vectors`,
the route table's `decide`, as `Router.route` and `fit` run it): a `route` decision
predicts its route, `clarify` and `none` predict out of scope. routecore's rows add
the decision figures (`decision_figures`: routed share, precision among routed,
confident-wrong, clarify and none rates) and `top1`, the raw argmax of the native
step's cosines (or of the head's in-scope probabilities) on the in-scope rows: an
argmax, not a decision.
The encoder is routecore's `Encoder` wrapped as semantic-router's `DenseEncoder`;
both sides read embeddings from one cache so the routing step is timed alone.
Everything runs offline: semantic-router's LocalIndex needs no service.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, List

import numpy as np
from pydantic import PrivateAttr
from semantic_router import Route
from semantic_router.encoders import DenseEncoder
from semantic_router.routers import IndexedRouter

from eval_targets import top1_argmax
from routecore import Encoder
from routecore.decide.figures import decision_figures
from routecore.evaluation import datasets as D
from routecore.evaluation import metrics as M
from routecore.evaluation import runner as R
from routecore.evaluation.decisions import decide_vectors


class CachedRoutecoreEncoder(DenseEncoder):
    """routecore's encoder as a semantic-router DenseEncoder, with a text->vector table."""

    name: str = "routecore"
    type: str = "routecore"
    _enc: Any = PrivateAttr()
    _table: dict = PrivateAttr(default_factory=dict)
    _seconds: float = PrivateAttr(default=0.0)

    def __init__(self, enc: Encoder, **kw):
        super().__init__(**kw)
        self._enc = enc

    def preload(self, texts, vecs):
        self._table.update(zip(texts, vecs))

    def __call__(self, docs: List[Any]) -> List[List[float]]:
        t = time.perf_counter()
        miss = [d for d in docs if d not in self._table]
        if miss:
            self.preload(miss, self._enc.encode(miss))
        out = [self._table[d].tolist() for d in docs]
        self._seconds += time.perf_counter() - t
        return out


def sr_predict(router, texts, enc):
    enc._seconds = 0.0
    t = time.perf_counter()
    preds = [router(q).name for q in texts]
    total = time.perf_counter() - t
    return preds, (total - enc._seconds) / len(texts) * 1e3


RC_CONFIGS = [
    ("routecore (max, fitted per-route thresholds)", False, "macro_f1"),
    ("routecore (linear head, max oos recall at in-scope >= 0.92 on val)", True, "oos_recall"),
]


def _same_exemplars(train, routes, oos):
    """The training samples that are exemplars of `routes`, plus the out-of-scope rows."""
    from routecore.evaluation.datasets import Dataset

    keep = {(r.name, u) for r in routes for u in r.utterances}
    return Dataset(train.name, [x for x in train.samples if (x.label, x.text) in keep or x.label == oos])


def rc_predict(router, X, texts):
    """routecore's decision step per query (``decide_vectors``): predictions (the route of a
    ``route`` decision, else None), ms per query, and the decisions."""
    t = time.perf_counter()
    dec = decide_vectors(router, X, texts)
    ms = (time.perf_counter() - t) / len(X) * 1e3
    return [r if a == "route" else None for a, r, _ in dec], ms, dec


def run(enc, wrapped, name, train, val, test, oos="oos", shots=100):
    routes = R.routes_from_split(train, shots=shots, seed=0, oos_label=oos)
    utts = [u for r in routes for u in r.utterances]
    wrapped.preload(utts, R.embed(enc, utts))
    for ds in (val, test):
        wrapped.preload(
            [s.text for s in ds.samples],
            R.embed(enc, [s.text for s in ds.samples], progress=True, what=f"embed {ds.name}"),
        )
    gold = [s.label for s in test.samples]
    yv = [None if s.label == oos else s.label for s in val.samples]
    out = {}
    for agg in () if ROUTECORE_ONLY else ("mean", "max"):
        sr = IndexedRouter(
            wrapped,
            [Route(name=r.name, utterances=list(r.utterances)) for r in routes],
            top_k=5,
            aggregation=agg,
            confidence_threshold=0.5,
        )
        t = time.perf_counter()
        sr.fit([s.text for s in val.samples], yv)
        fit_s = time.perf_counter() - t
        pred, ms = sr_predict(sr, [s.text for s in test.samples], wrapped)
        out[f"semantic-router (top-5 {agg}, fit + 0.5)"] = summary(gold, pred, oos, ms, fit_s)
        print(name, agg, out[f"semantic-router (top-5 {agg}, fit + 0.5)"], file=sys.stderr, flush=True)
    has_oos = any(s.label == oos for s in val.samples)
    for label, head, objective in RC_CONFIGS:
        # the head trains on the same 100 exemplars per label (+ the train split's oos rows)
        sub = train if not head else _same_exemplars(train, routes, oos)
        rc = R.build_router(sub, enc, shots=shots, seed=0, oos_label=oos, head=head)
        t = time.perf_counter()
        if has_oos:
            R.fit_router(rc, val, objective=objective, coverage=0.92, oos_label=oos)
        else:
            rc.policy = rc.policy.with_overrides(min_score=0.0)
        fit_s = time.perf_counter() - t
        texts = [s.text for s in test.samples]
        Xte = R.embed(enc, texts)
        pred, ms, dec = rc_predict(rc, Xte, texts)
        # without out-of-scope rows in val nothing is fitted: say so in the row's name
        if not has_oos:
            label = (
                f"routecore ({'linear head' if head else 'max'}, not fitted: min_score 0, zero-label tiers)"
            )
        out[label] = summary(gold, pred, oos, ms, fit_s)
        f = decision_figures(dec, gold)
        out[label]["decisions"] = f.to_dict()
        out[label]["top1"] = top1_argmax(rc, Xte, gold)
        print(name, label, out[label], file=sys.stderr, flush=True)
    return out


def summary(gold, pred, oos, ms, fit_s):
    r = {
        "in_scope_accuracy": M.in_scope_accuracy(gold, pred, oos),
        "routing_ms_per_query": ms,
        "fit_seconds": fit_s,
    }
    if any(g == oos for g in gold):
        r["oos"] = M.oos_prf(gold, pred, oos)
    return r


def holdout(ds, frac=0.1, seed=0):
    from routecore.evaluation.datasets import Dataset

    m = np.random.default_rng(seed).random(len(ds.samples)) < frac
    return Dataset(ds.name + "[90%]", [x for x, v in zip(ds.samples, m) if not v]), Dataset(
        ds.name + "[10%]", [x for x, v in zip(ds.samples, m) if v]
    )


ROUTECORE_ONLY = "--routecore-only" in sys.argv


def main(model=None):
    enc = Encoder.load(model, cache_size=0)
    wrapped = CachedRoutecoreEncoder(enc)
    res = {
        "model": enc.model_id,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "semantic_router": "1.1.1",
    }
    res["clinc150"] = run(
        enc, wrapped, "clinc150", D.clinc150("train"), D.clinc150("val"), D.clinc150("test")
    )
    tr, va = holdout(D.banking77("train"))  # BANKING77 has no validation split: hold out 10% of train
    res["banking77"] = run(enc, wrapped, "banking77", tr, va, D.banking77("test"))
    for loc in ("en-US", "fr-FR", "zh-CN"):
        res[f"massive_{loc}"] = run(
            enc, wrapped, loc, D.massive(loc, "train"), D.massive(loc, "dev"), D.massive(loc, "test")
        )
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0] if args else None)
