"""Exemplar prefix (issue 12): exemplars / tool descriptions embedded as `kind="passage"`
or `kind="query"` (queries always "query"), e5's two prefixes.

    python benches/prefix_kind.py [--model PATH] [--sets metatool,massive-en,massive-fr]

metatool: recall@1/@5 of single_tool.jsonl's gold tool, tools = their descriptions.
massive-*: raw top-1 accuracy (max cosine over a route's train exemplars) on the test split.
Embeddings are cached under $ROUTECORE_HOME/embeddings (passages: <model>/kind-*.npy; queries
through `runner.embed`, whose kind is "query").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

import numpy as np

from routecore import Encoder
from routecore.calibrate.calibration import route_scores
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed
from routecore.hub.models import home


def embed_kind(enc: Encoder, texts: list[str], kind: str, batch: int = 64) -> np.ndarray:
    if kind == "query":  # runner.embed's kind: share its cache with the other benches
        return embed(enc, texts)
    key = hashlib.sha256((f"v2\x1e{kind}\x1e" + "\x1f".join(texts)).encode()).hexdigest()[:32]
    path = home() / "embeddings" / enc.model_id.replace(":", "_") / f"kind-{key}.npy"
    if path.is_file():
        return np.load(path)
    X = np.concatenate(
        [
            enc.encode_with_stats(texts[i : i + batch], kind=kind).embeddings
            for i in range(0, len(texts), batch)
        ]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, X)
    return X


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None)
    ap.add_argument("--sets", default="metatool,massive-en,massive-fr")
    a = ap.parse_args()
    enc = Encoder.load(a.model, cache_size=0)
    print(json.dumps({"model": enc.model_id}))
    for name in a.sets.split(","):
        t0 = time.perf_counter()
        if name == "metatool":
            queries, catalog = D.metatool("single_tool")
            pos = {t["name"]: i for i, t in enumerate(catalog)}
            gold = np.array([pos[s.tools[0]] for s in queries.samples])
            Q = embed_kind(enc, [s.query for s in queries.samples], "query")
            for kind in ("passage", "query"):
                T = embed_kind(enc, [t["description"] for t in catalog], kind)
                S = Q @ T.T
                rank = (S > S[np.arange(len(gold)), gold][:, None]).sum(axis=1)
                print(
                    json.dumps(
                        {
                            "set": name,
                            "exemplar_kind": kind,
                            "n": len(gold),
                            "recall@1": round(float((rank < 1).mean()), 4),
                            "recall@5": round(float((rank < 5).mean()), 4),
                        }
                    ),
                    flush=True,
                )
        else:
            loc = {"massive-en": "en-US", "massive-fr": "fr-FR", "massive-zh": "zh-CN"}[name]
            train, test = D.massive(loc, "train"), D.massive(loc, "test")
            labels = sorted({s.label for s in train.samples})
            pos = {l: i for i, l in enumerate(labels)}
            owners = np.array([pos[s.label] for s in train.samples])
            gold = np.array([pos.get(s.label, -1) for s in test.samples])
            Q = embed_kind(enc, [s.text for s in test.samples], "query")
            for kind in ("passage", "query"):
                V = embed_kind(enc, [s.text for s in train.samples], kind)
                S = route_scores(Q, V, owners, len(labels))
                print(
                    json.dumps(
                        {
                            "set": name,
                            "exemplar_kind": kind,
                            "n": len(gold),
                            "raw_top1": round(float((S.argmax(axis=1) == gold).mean()), 4),
                        }
                    ),
                    flush=True,
                )
        print(json.dumps({"set": name, "seconds": round(time.perf_counter() - t0, 1)}), flush=True)


if __name__ == "__main__":
    main()
