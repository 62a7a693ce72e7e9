"""Our distilled static tables against model2vec's published figures, on MTEB's protocol (issue 38 §4).

    PYTHONPATH=python:/tmp/sklearn-site ROUTECORE_HOME=/tmp/rchome python benches/static_mteb.py \
        [--models minilm-static,e5-static,minilm,e5[,e5-static-full]] [--tasks banking77,massive-en] \
        [--seed 42] [--json OUT]

scikit-learn is not a dependency of routecore: this bench needs it only for MTEB's classifier, and
imports it from a throw-away folder put on PYTHONPATH for the bench alone
(``python -m pip install --target /tmp/sklearn-site scikit-learn``; then drop the folder's numpy if
it duplicates the venv's). Without it the bench stops with that message.

Data: BANKING77 and MASSIVE en-US from /work/shared/datasets, read in place (the train split and the
test split; the same rows as MTEB's ``mteb/banking77`` and ``mteb/amazon_massive_intent`` ``en``:
10,003 / 3,080 and 11,514 / 2,974). Embeddings are cached under ``$ROUTECORE_HOME/embeddings``
(``routecore.evaluation.runner.embed``), not in the repository.

Models: ``minilm-static`` and ``e5-static``, our tables (``$ROUTECORE_HOME/models/*-static``, from
``routecore models distill``); ``minilm`` (/work/shared/models/all-minilm-l6-v2, the int8 graph
``Encoder.load`` serves) and ``e5`` (the bundled multilingual-e5-small, int8), the transformers they
were distilled from; ``e5-static-full`` (optional) e5's table over its whole vocabulary. Every text is
embedded as a query, ``Encoder.encode``'s default (e5: the ``query: `` prefix; MiniLM and the tables: no
prefix).

Protocol: MTEB 1.x ``AbsTaskClassification`` with ``logRegClassificationEvaluator`` (the tasks set
neither ``n_experiments`` nor ``samples_per_label``): 10 experiments; in each, the train split is
undersampled to 8 texts a label (one index permutation, shuffled again by ``np.random.shuffle`` before
each experiment, numpy's global seed 42 set before the first one and again after each sampling, as the
evaluator's constructor does); ``LogisticRegression(random_state=42, max_iter=100)`` fitted on those
embeddings; accuracy on the whole test split; the mean over the 10 experiments, in points. Our row
order is the upstream files' order, not necessarily the Hub copies', so the 8-a-label draws are not
MTEB's draws: the figures are comparable to the published ones within the spread of the draws (the
standard deviation over the 10 experiments is printed beside them).

These are test figures by construction (MTEB reports test accuracy); nothing here is chosen or tuned
on them: no option of the tables, the classifier or the protocol was set after looking at the
results.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from routecore import Encoder
from routecore.evaluation.runner import embed
from routecore.hub.models import home

DATA = Path("/work/shared/datasets")
TASKS = {
    "banking77": ("Banking77Classification", DATA / "banking77"),
    "massive-en": ("MassiveIntentClassification (en)", DATA / "massive" / "en-US"),
}
MODELS = {
    "minilm-static": "all-minilm-l6-v2-static",
    "e5-static": "multilingual-e5-small-static",
    "minilm": "/work/shared/models/all-minilm-l6-v2",
    "e5": None,  # the bundled multilingual-e5-small
    # e5's table over its whole vocabulary (249,997 rows; docs/static.md "What pruning costs"), if built
    "e5-static-full": "e5-static-full",
}

#: Published MTEB test accuracies (points), by task: the files of MTEB's results repository
#: (github.com/embeddings-benchmark/results, ``results/<org>__<model>/<revision>/<task>.json``); the
#: commit of each file is in docs/static.md ("Against model2vec's published figures").
#: name: (teacher, dims, mteb version of the run, accuracy)
PUBLISHED: dict[str, dict[str, tuple[str, int, str, float]]] = {
    "banking77": {
        "all-MiniLM-L6-v2": ("-", 384, "1.12.75", 80.04),
        "multilingual-e5-small": ("-", 384, "1.12.75", 70.44),
        "potion-base-32M": ("bge-base-en-v1.5", 512, "2.11.2", 74.78),
        "potion-multilingual-128M": ("bge-m3", 256, "2.1.17", 68.53),
    },
    "massive-en": {
        "all-MiniLM-L6-v2": ("-", 384, "1.12.75", 66.94),
        "multilingual-e5-small": ("-", 384, "1.12.75", 63.87),
        "potion-base-32M": ("bge-base-en-v1.5", 512, "2.11.2", 65.14),
        "potion-base-8M": ("bge-base-en-v1.5", 256, "1.18.0", 63.79),
        "M2V_base_output": ("bge-base-en-v1.5", 256, "1.x", 62.67),
    },
}

SEED = 42
N_EXPERIMENTS = 10
SAMPLES_PER_LABEL = 8
MAX_ITER = 100


def read(path: Path) -> tuple[list[str], list[str]]:
    texts, labels = [], []
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            texts.append(row["text"])
            labels.append(row["label"])
    return texts, labels


def undersample(y: np.ndarray, k: int, idxs: np.ndarray) -> np.ndarray:
    """MTEB's ``_undersample_data``: shuffle ``idxs`` in place with numpy's global generator, then keep
    the first ``k`` indices of each label in that order."""
    np.random.shuffle(idxs)
    count: dict[Any, int] = {}
    keep = []
    for i in idxs:
        if count.get(y[i], 0) < k:
            keep.append(i)
            count[y[i]] = count.get(y[i], 0) + 1
    return np.asarray(keep)


def mteb_accuracy(
    xtr: np.ndarray, ytr: np.ndarray, xte: np.ndarray, yte: np.ndarray, seed: int = SEED
) -> list[float]:
    """The accuracy (points) of each of MTEB's 10 experiments (``seed``: MTEB's is 42)."""
    from sklearn.linear_model import LogisticRegression

    np.random.seed(seed)
    idxs = np.arange(len(ytr))
    accs = []
    for _ in range(N_EXPERIMENTS):
        keep = undersample(ytr, SAMPLES_PER_LABEL, idxs)
        np.random.seed(seed)  # the evaluator's constructor re-seeds numpy after each draw
        clf = LogisticRegression(random_state=seed, max_iter=MAX_ITER)
        clf.fit(xtr[keep], ytr[keep])
        accs.append(100.0 * float(np.mean(clf.predict(xte) == yte)))
    return accs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="minilm-static,e5-static,minilm,e5")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--seed", type=int, default=SEED, help="MTEB's is 42; others show the draws' spread")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    try:
        import sklearn
    except ImportError:
        sys.exit(
            "benches/static_mteb.py needs scikit-learn, which routecore does not depend on: install it "
            "outside the venv (python -m pip install --target /tmp/sklearn-site scikit-learn) and run "
            "with PYTHONPATH=python:/tmp/sklearn-site"
        )
    print(f"# scikit-learn {sklearn.__version__}, ROUTECORE_HOME={home()}", flush=True)
    rows = []
    for m in a.models.split(","):
        enc = Encoder.load(MODELS[m])
        for t in a.tasks.split(","):
            name, folder = TASKS[t]
            (trx, tr_y), (tex, te_y) = read(folder / "train.jsonl"), read(folder / "test.jsonl")
            t0 = time.perf_counter()
            xtr, xte = embed(enc, trx).astype(np.float64), embed(enc, tex).astype(np.float64)
            t_embed = time.perf_counter() - t0
            t0 = time.perf_counter()
            accs = mteb_accuracy(xtr, np.asarray(tr_y), xte, np.asarray(te_y), a.seed)
            row = {
                "model": m,
                "model_id": enc.model_id,
                "dim": int(xtr.shape[1]),
                "task": name,
                "seed": a.seed,
                "accuracy": round(float(np.mean(accs)), 2),
                "std": round(float(np.std(accs)), 2),
                "per_experiment": [round(x, 2) for x in accs],
                "embed_s": round(t_embed, 1),
                "fit_s": round(time.perf_counter() - t0, 1),
            }
            rows.append(row)
            print(
                f"{m:14s} {name:34s} {row['accuracy']:6.2f} ± {row['std']:.2f}  "
                f"(dim {row['dim']}, embed {row['embed_s']} s, fit {row['fit_s']} s)",
                flush=True,
            )
    print("\n# published (MTEB results repository, test accuracy, points)")
    for t in a.tasks.split(","):
        for model, (teacher, dims, version, acc) in PUBLISHED[t].items():
            print(
                f"{model:26s} {TASKS[t][0]:34s} {acc:6.2f}  (teacher {teacher}, dim {dims}, mteb {version})"
            )
    if a.json:
        a.json.write_text(json.dumps({"rows": rows, "published": PUBLISHED}, indent=1))


if __name__ == "__main__":
    main()
