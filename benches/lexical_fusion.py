"""Design measurement for issue 14 (hybrid lexical + dense): does BM25 fused with the
dense score lift MetaTool tool recall, which tokenizer, and which fusion?

    python benches/lexical_fusion.py [--model PATH]

A pure-Python BM25 (k1 1.2, b 0.75) over one document per MetaTool tool (its name,
split on camelCase and `_`, plus its description). Tokenizers: `words` (NFKD accent
folding, lower case, \\w+ runs, CJK runs as characters + bigrams); `words-bgstop`
(the same, minus the words found in >= 2 % of the bundled background queries: a
stop list learnt from data, in every language the set has); `pieces` (the encoder's
own tokenizer.json pieces, when the model folder has one). Fusions, per query:
`sum` = cosine + w * bm25 / max bm25; `zsum` = z(cosine) + w * z(bm25) (z over the
catalog); `rrf` = 1/(k + rank) summed. Dense = max cosine, as the tool table scores.
Embeddings are cached under $ROUTECORE_HOME/embeddings.
"""

from __future__ import annotations

import argparse
import collections
import math
import re
import unicodedata

import numpy as np

from routecore import Encoder
from routecore.calibrate.calibration import background_texts, route_scores
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed

CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def fold(t: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", t) if not unicodedata.combining(c)).lower()


def words(t: str) -> list[str]:
    out: list[str] = []
    for w in re.findall(r"\w+", fold(re.sub(r"([a-z])([A-Z])", r"\1 \2", t))):
        if CJK.search(w):
            out += list(w) + [a + b for a, b in zip(w, w[1:])]
        else:
            out += [p for p in w.split("_") if p]
    return out


def bm25(docs: list[list[str]], queries: list[list[str]], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    n, avg = len(docs), sum(map(len, docs)) / len(docs)
    df = collections.Counter(w for d in docs for w in set(d))
    post: dict[str, list[tuple[int, float]]] = collections.defaultdict(list)
    for j, d in enumerate(docs):
        for w, f in collections.Counter(d).items():
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
            post[w].append((j, idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(d) / avg))))
    L = np.zeros((len(queries), n), np.float32)
    for i, q in enumerate(queries):
        for w in set(q):
            for j, v in post.get(w, ()):
                L[i, j] += v
    return L


def recall(M: np.ndarray, gold: np.ndarray, k: int) -> float:
    return float((np.argsort(-M, 1)[:, :k] == gold[:, None]).any(1).mean())


def z(M: np.ndarray) -> np.ndarray:
    return (M - M.mean(1, keepdims=True)) / np.maximum(M.std(1, keepdims=True), 1e-9)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    a = ap.parse_args()
    enc = Encoder.load(a.model, cache_size=0)
    queries, catalog = D.metatool("single_tool")
    names = [t["name"] for t in catalog]
    gold = np.array([names.index(s.tools[0]) for s in queries.samples])
    T = embed(enc, [t["description"] for t in catalog], what="embedding tools")
    S = route_scores(
        embed(enc, [s.query for s in queries.samples], what="metatool queries"),
        T,
        np.arange(len(names)),
        len(names),
    )
    bg = background_texts()[0]
    bg_df = collections.Counter(w for t in bg for w in set(words(t)))
    stop = {w for w, c in bg_df.items() if c >= 0.02 * len(bg)}
    toks = {"words": words, "words-bgstop": lambda t: [w for w in words(t) if w not in stop]}
    tj = getattr(enc, "path", None) and enc.path / "tokenizer.json"
    if tj and tj.is_file():
        from tokenizers import Tokenizer

        tk = Tokenizer.from_file(str(tj))
        toks["pieces"] = lambda t: [
            p for p in tk.encode(fold(t), add_special_tokens=False).tokens if p.strip("\u2581")
        ]
    print(
        f"{enc.model_id}: {len(stop)} background stop words; "
        f"dense r@1 {recall(S, gold, 1):.3f} r@5 {recall(S, gold, 5):.3f}"
    )
    rank_d = np.argsort(np.argsort(-S, 1), 1)
    for lab, f in toks.items():
        L = bm25(
            [f(re.sub(r"_", " ", t["name"]) + " " + t["description"]) for t in catalog],
            [f(s.query) for s in queries.samples],
        )
        rows = [("bm25 alone", L)]
        rows += [
            (f"sum w={w}", S + w * L / np.maximum(L.max(1, keepdims=True), 1e-9)) for w in (0.02, 0.05, 0.1)
        ]
        rows += [(f"zsum w={w}", z(S) + w * z(L)) for w in (0.2, 0.3, 0.4)]
        rank_l = np.argsort(np.argsort(-L, 1), 1)
        rows += [(f"rrf k={k}", 1 / (k + rank_d) + 1 / (k + rank_l)) for k in (10, 60)]
        for name, M in rows:
            print(f"| {lab} | {name} | {recall(M, gold, 1):.3f} | {recall(M, gold, 5):.3f} |")


if __name__ == "__main__":
    main()
