"""Compact storage on real sentence embeddings: share of queries whose top-5
from f16 / int8 storage (compact scan + exact f32 re-rank) equals exact f32.

    python benches/compact_recall_real.py [MODEL]

Database: CLINC150 + BANKING77 + MASSIVE en-US train utterances; queries: the
CLINC150 test split (embeddings from the disk cache of benches/eval_targets.py).
"""

from __future__ import annotations

import json
import sys

import numpy as np

from routecore import Encoder, VectorIndex
from routecore.evaluation import datasets as D
from routecore.evaluation import runner as R


def main(model=None):
    enc = Encoder.load(model)
    db_texts = [
        s.text
        for ds in (D.clinc150("train"), D.banking77("train"), D.massive("en-US", "train"))
        for s in ds.samples
    ]
    X = np.concatenate(
        [
            R.embed(enc, [s.text for s in ds.samples])
            for ds in (D.clinc150("train"), D.banking77("train"), D.massive("en-US", "train"))
        ]
    )
    Q = R.embed(enc, [s.text for s in D.clinc150("test").samples])
    out = {"model": enc.model_id, "db": len(db_texts), "queries": len(Q)}
    exact = VectorIndex(enc.dim, storage="f32")
    exact.add(np.arange(len(X)), X)
    ref = exact.search(Q, 5).ids
    for st in ("f16", "int8"):
        ix = VectorIndex(enc.dim, storage=st)
        ix.add(np.arange(len(X)), X)
        got = ix.search(Q, 5).ids
        out[st] = {
            "top5_equal": float((got == ref).all(axis=1).mean()),
            "top1_equal": float((got[:, 0] == ref[:, 0]).mean()),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
