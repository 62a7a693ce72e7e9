"""Zero-label calibration against the intent sets: how the calibrated tiers and
out-of-scope cut hold on the test splits, with routes from the train split only.

    python benches/zero_label.py [--model PATH] [--sets clinc150,banking77,massive-en,...] \\
        [--no-clinc-background]

Each set's router is built as a config builds it (one route per label, every train
utterance), with the zero-label calibration fitted on ``background`` in force, no head and
no lexical pass: the cosine tiers and the out-of-scope cut alone. The figures are the
router's own decisions on cached query vectors (``evaluation.decisions.decide_vectors``,
the route table's decision step, as ``Router.route`` runs it): ``high_*`` over ``route``
decisions of the high tier, ``routed_*`` over every ``route`` decision, ``oos`` with
``clarify`` and ``none`` read as out of scope. ``top1_argmax`` is the argmax of the raw
cosines on the in-scope rows: a raw top-1, not a decision. Embeddings are cached under
$ROUTECORE_HOME/embeddings (set ROUTECORE_HOME to a scratch folder).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Callable, NamedTuple

import numpy as np

from eval_targets import top1_argmax
from routecore import Encoder, Policy, Router, TableVectors
from routecore.calibrate.calibration import Calibration, background_texts, route_scores, zero_label
from routecore.decide.figures import decision_figures
from routecore.evaluation import calibrate as fitting
from routecore.evaluation import datasets as D
from routecore.evaluation import metrics as M
from routecore.evaluation.decisions import decide_vectors
from routecore.evaluation.runner import embed, routes_from_split

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


def cosine_router(
    train: D.Dataset, enc: Encoder, calibrate: Callable[[np.ndarray, np.ndarray, int], Calibration]
) -> tuple[Router, np.ndarray, np.ndarray]:
    """A router over ``train``'s labels (every utterance, as a config builds it) with
    ``calibrate(V, owners, n_routes)`` in force, no head and no lexical pass; and V, owners."""
    routes = routes_from_split(train)
    V = embed(enc, [t for r in routes for t in r.exemplars()], what=f"{train.name} train")
    owners = np.array([i for i, r in enumerate(routes) for _ in r.exemplars()])
    router = Router(
        routes,
        encoder=enc,
        policy=Policy(head="off", lexical=False),
        calibration=calibrate(V, owners, len(routes)),
        vectors=TableVectors(routes=V),
    )
    return router, V, owners


def figures(router: Router, X: np.ndarray, texts: list[str], gold: list[str]) -> dict[str, Any]:
    """The router's decisions on ``X`` (``decide_vectors``): routed and high-tier share and
    precision, confident-wrong, clarify and none rates, and the raw argmax beside them."""
    dec = decide_vectors(router, X, texts)
    f = decision_figures(dec, gold)
    high = [r == g for (a, r, t), g in zip(dec, gold) if a == "route" and t == "high"]
    out = {
        "top1_argmax": top1_argmax(router, X, gold),
        "high_share": len(high) / max(len(gold), 1),
        "high_precision": float(np.mean(high)) if high else None,
        "routed_share": f.routed_share,
        "routed_precision": f.routed_accuracy,
        "confident_wrong": f.confident_wrong_rate,
        "clarify_rate": f.clarify_rate,
        "none_rate": f.none_rate,
    }
    if "oos" in gold:
        pred = [r if a == "route" else None for a, r, _ in dec]
        out["oos"] = M.oos_prf(gold, pred, "oos")
        out["inscope_acc"] = M.in_scope_accuracy(gold, pred, "oos")
    return out


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


def run(name: str, enc: Encoder, bg: np.ndarray) -> dict[str, Any]:
    train, test = SETS[name]()
    t0 = time.perf_counter()
    r, V, owners = cosine_router(train, enc, lambda V, owners, n: zero_label(V, owners, n, bg))
    build_s = time.perf_counter() - t0
    cal = r.calibration
    assert cal is not None
    texts, gold = [s.text for s in test.samples], [s.label for s in test.samples]
    Q = embed(enc, texts, what=f"{name} test")
    out: dict[str, Any] = {
        "set": name,
        "n": len(gold),
        "build_s": round(build_s, 2),
        "temperature": round(cal.temperature, 4),
        "high": round(cal.high, 3),
        "margin": round(cal.margin, 3),
        "medium": round(cal.medium, 3),
        "min_score": round(cal.min_score, 4),
        **figures(r, Q, texts, gold),
    }
    if name in VAL:  # the high tier `fit` sets from the validation split, under the same out-of-scope cut
        val = VAL[name]()
        labels = [x.name for x in r.route_specs]
        Sv = route_scores(
            embed(enc, [s.text for s in val.samples], what=f"{name} val"), V, owners, len(labels)
        )
        gv = [s.label for s in val.samples]
        t = fitting.fit_temperature(Sv, gv, labels)
        h, m = fitting.fit_tiers(Sv, gv, labels, t)
        r.policy = r.policy.with_overrides(temperature=t, high=h, margin=m)
        fitted = figures(r, Q, texts, gold)
        out.update(fit_high_share=fitted["high_share"], fit_high_precision=fitted["high_precision"])
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
