"""The zero-label exemplar head (``Policy(head="exemplars")``, issue 12) against the
cosine router, on the test splits, routes from the train split, no validation data.

    python benches/exemplar_head.py [--model PATH] [--sets clinc150,massive-en,...] [--heads off,exemplars]

Sets: clinc150, banking77, massive-en / -fr / -zh, xling-fr / xling-zh (routes from
MASSIVE en-US train, queries from fr-FR / zh-CN test). Per set and head, one JSON
line: the decision figures of ``routecore eval`` (routed share, accuracy among
routed, confident wrong, clarify, none), the high tier's share and precision,
*trim P* (the share still routed when the routed decisions are cut from the least
confident until precision >= P), CLINC150's in-scope accuracy and out-of-scope F1
(also with every CLINC150-derived background sentence left out of the head's
background class), and the build time. Decisions come from the router's own
decision step on cached embeddings (``evaluation.decisions.decide_vectors``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from unittest import mock

import numpy as np

from routecore import Encoder
from routecore.calibrate.stats import HeadStats
from routecore.decide.figures import decision_figures
from routecore.evaluation import datasets as D
from routecore.evaluation.decisions import decide_vectors
from routecore.evaluation.runner import build_router, embed

#: Per set: (train, evaluation split) for ``--split test`` and ``--split dev`` (BANKING77 has no dev split).
SETS = {
    "clinc150": lambda s: (D.clinc150("train"), D.clinc150("val" if s == "dev" else "test")),
    "banking77": lambda s: (D.banking77("train"), D.banking77("test")),
    "massive-en": lambda s: (D.massive("en-US", "train"), D.massive("en-US", s)),
    "massive-fr": lambda s: (D.massive("fr-FR", "train"), D.massive("fr-FR", s)),
    "massive-zh": lambda s: (D.massive("zh-CN", "train"), D.massive("zh-CN", s)),
    "xling-fr": lambda s: (D.massive("en-US", "train"), D.massive("fr-FR", s)),
    "xling-zh": lambda s: (D.massive("en-US", "train"), D.massive("zh-CN", s)),
}


def trim(conf: np.ndarray, routed: np.ndarray, right: np.ndarray, p: float) -> float:
    c = np.where(routed, conf, -np.inf)
    o = np.argsort(-c, kind="stable")
    prec = np.cumsum(right[o]) / np.arange(1, len(o) + 1)
    ok = np.flatnonzero((prec >= p) & routed[o])
    return float((ok[-1] + 1) / len(o)) if len(ok) else 0.0


def run(enc: Encoder, name: str, head: str, no_clinc_background: bool = False, split: str = "test") -> dict:
    train, test = SETS[name](split)
    t0 = time.perf_counter()
    if no_clinc_background:
        from routecore.core import background

        rows = [
            json.loads(x)
            for x in background.BACKGROUND_FILE.read_text(encoding="utf-8").splitlines()
            if x.strip()
        ]
        keep = np.array([not r["source"].startswith("clinc150") for r in rows])
        full, langs = background.background_vectors(enc), background.background_languages()
        # The head's background class only (the cosine calibration keeps the whole set).
        with (
            mock.patch("routecore.core.background.background_vectors", lambda e: full[keep]),
            mock.patch(
                "routecore.core.background.background_languages",
                lambda: tuple(x for x, k in zip(langs, keep) if k),
            ),
        ):
            router = build_router(train, enc, head="exemplars" if head == "exemplars" else False)
    else:
        router = build_router(train, enc, head="exemplars" if head == "exemplars" else False)
    build_s = time.perf_counter() - t0
    texts, gold = [s.text for s in test.samples], [s.label for s in test.samples]
    X = embed(enc, texts)
    dec = decide_vectors(router, X, texts)
    conf = np.array([_confidence(router, x, t) for x, t in zip(X, texts)])
    routed = np.array([a == "route" for a, _, _ in dec])
    right = np.array([a == "route" and r == g for (a, r, _), g in zip(dec, gold)], dtype=np.float64)
    high = np.array([a == "route" and t == "high" for a, _, t in dec])
    f = decision_figures(dec, gold)
    out = {
        "set": name,
        "split": split,
        "model": enc.model_id,
        "head": head + (" (no CLINC background)" if no_clinc_background else ""),
        "build_s": round(build_s, 1),
        **{k: round(v, 4) for k, v in f.to_dict().items() if isinstance(v, float)},
        "high_share": round(float(high.mean()), 4),
        "high_precision": round(float(right[high].mean()), 4) if high.any() else None,
        "trim90": round(trim(conf, routed, right, 0.90), 4),
        "trim95": round(trim(conf, routed, right, 0.95), 4),
    }
    isc = np.array([g != "oos" for g in gold])
    if (~isc).any():
        pred = np.array(
            [r if a == "route" else ("oos" if a == "none" else "CLARIFY") for a, r, _ in dec], dtype=object
        )
        g = np.array(gold, dtype=object)
        tp, fp, fn = (
            ((pred == "oos") & ~isc).sum(),
            ((pred == "oos") & isc).sum(),
            ((pred != "oos") & ~isc).sum(),
        )
        out.update(
            in_scope_accuracy=round(float((pred[isc] == g[isc]).mean()), 4),
            oos_f1=round(float(2 * tp / (2 * tp + fp + fn)), 4),
        )
    if router.head is not None and router.calibration is not None:
        st = asdict(router.calibration.stats.head or HeadStats())
        out["head_fit"] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in st.items()}
    return out


def _confidence(router, x: np.ndarray, text: str) -> float:
    rt = router.route_table
    p, _ = rt.policy_for(x)
    r = router.route_table.table.score(x, p, [], 0, bias=rt.bias_and_entities(text, p).bias)
    if rt.head is not None:
        rt._apply_head(r, x, p)
    return float(np.max(r.probs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--heads", default="off,exemplars")
    ap.add_argument(
        "--split",
        choices=["test", "dev"],
        default="test",
        help="dev: CLINC150 val, MASSIVE dev (to choose settings on)",
    )
    ap.add_argument(
        "--in-scope-kept", type=float, help="override exemplar_head.IN_SCOPE_KEPT (a study of the scope cut)"
    )
    a = ap.parse_args()
    if a.in_scope_kept is not None:
        from routecore.calibrate import exemplar_head

        exemplar_head.IN_SCOPE_KEPT = a.in_scope_kept
    enc = Encoder.load(a.model) if a.model else Encoder.load()
    for name in a.sets.split(","):
        for head in a.heads.split(","):
            print(json.dumps(run(enc, name, head, split=a.split)), flush=True)
            if name == "clinc150" and head == "exemplars":
                print(json.dumps(run(enc, name, head, no_clinc_background=True, split=a.split)), flush=True)


if __name__ == "__main__":
    main()
