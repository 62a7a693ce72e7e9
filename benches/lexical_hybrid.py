"""Hybrid lexical + dense scoring as shipped (issue 14): the fitted weight and what it
does to top-1 accuracy on the intent sets and to MetaTool tool recall.

    python benches/lexical_hybrid.py [--model PATH] \\
        [--sets clinc150,banking77,massive-en,massive-fr,massive-zh,metatool]

Intent sets: routes from train; the lexical weight is fitted zero-label (held-out
exemplars, `calibration.zero_label` with the routes' `LexicalTable`); figures on test,
raw top-1 of the cosines alone and of cosine + weight * lexical (`--stemmer english|french`:
the route tables stemmed, to measure what stemming would do to routes).
MetaTool: the catalog's tools have one exemplar each (their description), so zero-label
has no held-out row and keeps weight 0; the weight is then fitted on a seeded half of
single_tool.jsonl (`lexical.fit_weight`: "fitted") and, as `routecore fit --tools`
does, with the stemmer and BM25 b chosen on that half too (`lexical.fit_form`: "form");
the recall is measured on the other half. Embeddings are cached under $ROUTECORE_HOME.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from routecore import Encoder
from routecore.calibrate.calibration import background_vectors, route_scores, zero_label
from routecore.core.lexical import DEFAULT_B, LexicalTable, fit_form, fit_weight
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed
from zero_label import train_routes


def intents(name: str, enc: Encoder, bg: np.ndarray, stemmer: str = "none") -> dict:
    test, pos, texts, owners, V = train_routes(name, enc)
    labels = list(pos)
    t0 = time.perf_counter()
    table = LexicalTable(texts, owners, len(labels), stemmer=stemmer)
    build_s = time.perf_counter() - t0
    cal = zero_label(V, owners, len(labels), bg, lexical=(table, texts))
    q = [s for s in test.samples if s.label in pos]
    Q = embed(enc, [s.text for s in test.samples], what=f"{name} test")[
        [s.label in pos for s in test.samples]
    ]
    gold = np.array([pos[s.label] for s in q])
    S = route_scores(Q, V, owners, len(labels))
    L = table.scores_batch([s.text for s in q])
    dense = float((S.argmax(1) == gold).mean())
    fused = float(((S + cal.lexical_weight * L).argmax(1) == gold).mean())
    return {
        "set": name,
        "weight": round(cal.lexical_weight, 5),
        "scale": round(cal.scale, 5),
        "dense_top1": round(dense, 4),
        "hybrid_top1": round(fused, 4),
        "delta_points": round(100 * (fused - dense), 2),
        "build_s": round(build_s, 3),
        **{k: round(v, 4) for k, v in cal.stats.lexical.items()},
    }


def metatool(enc: Encoder) -> dict:
    queries, catalog = D.metatool("single_tool")
    names = [t["name"] for t in catalog]
    descs = [t["description"] for t in catalog]
    T = embed(enc, descs, what="embedding tools")

    def table_for(stemmer: str = "none", b: float = DEFAULT_B) -> LexicalTable:
        return LexicalTable(descs, range(len(names)), len(names), names, stemmer=stemmer, b=b)

    table = table_for()
    texts = [s.query for s in queries.samples]
    Q = embed(enc, texts, what="metatool queries")
    gold = np.array([names.index(s.tools[0]) for s in queries.samples])
    S = route_scores(Q, T, np.arange(len(names)), len(names))
    L = table.scores_batch(texts)
    half = np.random.default_rng(0).permutation(len(gold))
    val, test = half[: len(half) // 2], half[len(half) // 2 :]
    cal = zero_label(
        np.zeros((0, T.shape[1]), np.float32),
        [],
        0,
        background_vectors(enc),
        tool_vecs=T,
        tool_owners=np.arange(len(names)),
        n_tools=len(names),
        tool_lexical=(table, descs),
    )
    scale = cal.scale
    w, _ = fit_weight(
        S[val], L[val], gold[val], scale, gain_share=1.0
    )  # the weight alone, unstemmed (before fit_form)
    stemmer, b, w_form, _, tried = fit_form(
        table_for, [texts[i] for i in val], S[val], gold[val], scale
    )  # as fit --tools
    L_form = table_for(stemmer, b).scores_batch(texts)

    def rec(M: np.ndarray, k: int) -> float:
        return round(float((np.argsort(-M[test], 1)[:, :k] == gold[test, None]).any(1).mean()), 4)

    F, Z, G = S + w * L, S + cal.tool_lexical_weight * L, S + w_form * L_form
    return {
        "set": "metatool",
        "zero_label_weight": round(cal.tool_lexical_weight, 5),
        "fitted_weight": round(w, 5),
        "scale": round(scale, 5),
        "test_rows": int(len(test)),
        "dense_r1": rec(S, 1),
        "dense_r5": rec(S, 5),
        "zero_label_r1": rec(Z, 1),
        "zero_label_r5": rec(Z, 5),
        "fitted_r1": rec(F, 1),
        "fitted_r5": rec(F, 5),
        "form": f"{stemmer}/{b:g}",
        "form_weight": round(w_form, 5),
        "form_r1": rec(G, 1),
        "form_r5": rec(G, 5),
        "forms_val_top1": tried,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--sets", default="clinc150,banking77,massive-en,massive-fr,massive-zh,metatool")
    ap.add_argument(
        "--stemmer", default="none", help="the intent sets' route tables' stemmer (routes ship unstemmed)"
    )
    a = ap.parse_args()
    enc = Encoder.load(a.model, cache_size=0)
    bg = background_vectors(enc)
    print(json.dumps({"model": enc.model_id, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}))
    for name in a.sets.split(","):
        print(
            json.dumps(metatool(enc) if name == "metatool" else intents(name, enc, bg, a.stemmer)), flush=True
        )


if __name__ == "__main__":
    main()
