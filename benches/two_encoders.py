"""A second encoder as a confidence signal (issue 34: a better signal than one head's probability).

    ROUTECORE_HOME=/tmp/rchome python benches/two_encoders.py [--second PATH|NAME] [--sets a,b]
        [--shots 5,10] [--seeds 3] [--limit 1000] [--split dev|test]

Two routers per few-shot config (``benches/few_shot.py``'s sampling, zero-label): the default encoder's
and the ``--second``'s (default: MiniLM from ``../shared/models``; a static table by name). Every dev
query goes through both (``route_batch`` on cached vectors). Reported per set and k, means over seeds:
each router's top-1, how often their best routes agree, the first's top-1 when they agree and when they
do not, and the AUROC of "top-1 is right" against the first router's confidence alone and against that
confidence plus the second router's probability of the same route; then the two heads' product (the
normalised geometric mean of their probabilities): its top-1, its AUROC and the oracle ``right`` at 95 %
precision, against the first router's oracle. Nothing here changes a decision: it measures whether a
second model's view is worth its encoder time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import few_shot as F  # noqa: E402
from routecore import Encoder  # noqa: E402
from routecore.evaluation import metrics as M  # noqa: E402
from routecore.evaluation.runner import embed  # noqa: E402

MINILM = Path(os.environ.get("ROUTECORE_SHARED", Path(__file__).resolve().parents[2] / "shared")) / "models"


def _auroc(conf: np.ndarray, ok: np.ndarray, ins: np.ndarray) -> float:
    return float(M.auroc(conf[ins & ok].tolist(), conf[ins & ~ok].tolist()) or float("nan"))


def one(routers: list, vecs: list[np.ndarray], texts: list[str], gold: np.ndarray) -> dict[str, float]:
    ins = gold != "oos"
    d1, d2 = (r.route_batch(texts, vectors=x) for r, x in zip(routers, vecs))
    names = list(d1[0].probabilities)
    P1 = np.array([[d.probabilities[n] for n in names] for d in d1])
    P2 = np.array([[d.probabilities[n] for n in names] for d in d2])
    lab = np.array(names, dtype=object)
    b1, b2 = lab[P1.argmax(1)], lab[P2.argmax(1)]
    ok1, agree = b1 == gold, b1 == b2
    c1 = np.array([d.confidence for d in d1])
    c2 = P2[np.arange(len(gold)), P1.argmax(1)]
    G = np.sqrt(P1 * P2)
    G /= G.sum(1, keepdims=True)
    okg, cg = lab[G.argmax(1)] == gold, G.max(1)
    n = int(ins.sum())
    return {
        "top1": ok1[ins].mean(),
        "top1_2nd": (b2 == gold)[ins].mean(),
        "agree": agree[ins].mean(),
        "ok_agree": ok1[ins & agree].mean(),
        "ok_disagree": ok1[ins & ~agree].mean(),
        "auroc": _auroc(c1, ok1, ins),
        "auroc_sum": _auroc(c1 + c2, ok1, ins),
        "top1_prod": okg[ins].mean(),
        "auroc_prod": _auroc(cg, okg, ins),
        "oracle": F.oracle(c1, ok1 & ins, n, 0.95),
        "oracle_prod": F.oracle(cg, okg & ins, n, 0.95),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--second", default=str(MINILM / "all-minilm-l6-v2"))
    ap.add_argument("--sets", default="clinc150,banking77,massive-en")
    ap.add_argument("--shots", default="5,10")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--limit", type=int, default=1000)
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    a = ap.parse_args()
    encs = [Encoder.load(), Encoder.load(a.second)]
    print(
        f"# {encs[0].model_id} and {encs[1].model_id}, split {a.split}, seeds {a.seeds}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    cols = [
        "top1",
        "top1_2nd",
        "agree",
        "ok_agree",
        "ok_disagree",
        "auroc",
        "auroc_sum",
        "top1_prod",
        "auroc_prod",
        "oracle",
        "oracle_prod",
    ]
    print("| set | k | " + " | ".join(cols) + " |\n" + "|---" * (len(cols) + 2) + "|")
    for name in a.sets.split(","):
        train, test = F.splits(name, a.split)
        train, test = F.pool(train), F.sample(test, a.limit)
        texts = [s.text for s in test.samples]
        gold = np.array([s.label for s in test.samples], dtype=object)
        tt = list(dict.fromkeys(s.text for s in train.samples))
        vec = [dict(zip(tt, embed(e, tt, what=f"embedding {name} train"))) for e in encs]
        X = [embed(e, texts, what=f"embedding {name}") for e in encs]
        for k in (int(x) for x in a.shots.split(",")):
            rs = [
                one([F.build(e, train, v, k, seed) for e, v in zip(encs, vec)], X, texts, gold)
                for seed in range(a.seeds)
            ]
            m = {c: float(np.nanmean([r[c] for r in rs])) for c in cols}
            cells = [f"{m[c]:.3f}" if c.startswith("auroc") else f"{100 * m[c]:.1f}" for c in cols]
            print(f"| {name} | {k} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
