"""The zero-label router's own decisions on every intent set, in one pass (issue 12).

    ROUTECORE_HOME=/tmp/rchome python benches/zero_label_decisions.py [--model PATH] \\
        [--sets a,b] [--split test|dev]

Routes from each train split, `runner.build_router` (the policy a config gives,
calibrated zero-label); each query's decision is the router's decision step on its
cached embedding (`evaluation.decisions`, the same step as `routecore eval`, which
gives the same figures but encodes every query again). Per set: the calibration's
numbers, the routed share and accuracy, the high tier's share and precision,
confident-wrong, clarify and none rates, CLINC150's out-of-scope F1 and in-scope
accuracy, and ``trim P``: the share still routed when the routed decisions are
trimmed from the least confident until precision >= P (the coverage the same
ranking gives at precision P; never more than the router routes).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation import metrics as M
from routecore.evaluation.runner import build_router, embed

SETS = {
    "clinc150": ("clinc150", None, None),
    "banking77": ("banking77", None, None),
    "massive-en": ("massive", "en-US", "en-US"),
    "massive-fr": ("massive", "fr-FR", "fr-FR"),
    "massive-zh": ("massive", "zh-CN", "zh-CN"),
    "xling-fr": ("massive", "en-US", "fr-FR"),
    "xling-zh": ("massive", "en-US", "zh-CN"),
}
DEV = {"clinc150": "val", "massive": "dev"}


def splits(name: str, split: str) -> tuple[D.Dataset, D.Dataset]:
    kind, train_loc, test_loc = SETS[name]
    test_split = split if split == "test" else DEV[kind]
    if kind == "massive":
        return D.massive(train_loc, "train"), D.massive(test_loc, test_split)
    load = getattr(D, kind)
    return load("train"), load(test_split)


def decide(router, X: np.ndarray, texts: list[str]) -> list[tuple[str, str | None, str, float]]:
    """(action, route, tier, confidence) of the router's decision for each query vector: the route
    table's own ``decide``, the call ``evaluation.decisions.decide_vectors`` makes (no previous
    route, no context), kept here for the confidence that ``trim P`` ranks by."""
    rt = router.route_table
    out = []
    for x, text in zip(X, texts):
        d = rt.decide(text, x, None, (), None, time.perf_counter())
        out.append((d.action, d.route, d.tier, float(d.confidence)))
    return out


def trimmed(dec, gold, P: float) -> float:
    """Share of all queries still routed when routed decisions are cut from the least confident
    until precision >= P."""
    routed = np.array([a == "route" for a, *_ in dec])
    right = np.array([a == "route" and r == g for (a, r, _, _), g in zip(dec, gold)])
    order = np.argsort(-np.where(routed, [c for *_, c in dec], -1.0), kind="stable")[: int(routed.sum())]
    prec = np.cumsum(right[order]) / np.arange(1, len(order) + 1)
    ok = np.flatnonzero(prec >= P)
    return float((ok[-1] + 1) / len(gold)) if len(ok) else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model folder (default: the bundled default)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--split", default="test", choices=("test", "dev"))
    a = ap.parse_args()
    enc = Encoder.load(a.model) if a.model else Encoder.load()
    print(f"model {enc.model_id}, split {a.split}")
    for name in a.sets.split(","):
        train, test = splits(name, a.split)
        router = build_router(train, enc)
        c = router.calibration
        texts, gold = [s.text for s in test.samples], [s.label for s in test.samples]
        dec = decide(router, embed(enc, texts), texts)
        n = len(gold)
        routed = [(r == g, t) for (act, r, t, _), g in zip(dec, gold) if act == "route"]
        high = [ok for ok, t in routed if t == "high"]
        line = (
            f"{name:11s} T {c.temperature:.4f} w {c.lexical_weight:.4f} high {c.high:.2f}/{c.margin:.2f} "
            f"medium {c.medium:.3f} min {c.min_score:.3f} | routed {100 * len(routed) / n:.1f} % @ "
            f"{100 * np.mean([ok for ok, _ in routed]) if routed else 0:.1f} %, "
            f"high {100 * len(high) / n:.1f} % @ "
            f"{100 * np.mean(high) if high else 0:.1f} %, "
            f"confident wrong {100 * sum(not ok for ok in high) / n:.1f} %, "
            f"clarify {100 * sum(act == 'clarify' for act, *_ in dec) / n:.1f} %, "
            f"none {100 * sum(act == 'none' for act, *_ in dec) / n:.1f} %"
        )
        if "oos" in gold:
            pred = [r if act == "route" else (None if act == "none" else "CLARIFY") for act, r, _, _ in dec]
            line += (
                f", OOS F1 {M.oos_prf(gold, pred, 'oos')['f1']:.3f}, "
                f"in-scope {100 * M.in_scope_accuracy(gold, pred, 'oos'):.1f} %"
            )
        line += " | trim 90/93/95: " + "/".join(
            f"{100 * trimmed(dec, gold, P):.1f}" for P in (0.90, 0.93, 0.95)
        )
        print(line, flush=True)


if __name__ == "__main__":
    main()
