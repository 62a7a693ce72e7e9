"""How far can a query-level "no tool" rule go on MetaTool (issue 12 §4)? Research, not shipped.

    python benches/tool_floor_features.py [--model PATH]

Relevant rows: MetaTool single_tool queries (a seeded half fits, the other half reports);
out-of-scope rows: CLINC150 `oos` (val fits, test reports). Per query, ten features: the best
tool cosine, the best fused score (cosine + weight x BM25, the form `fit --tools` picks on the
fitting half), the query's lexical coverage and best lexical score, the gap between the two best
tools, the mean of the 3 best, the best minus the best background cosine, kNN3-20 (mean of the 3
best tool cosines minus the mean of the 20 best background cosines, the whole bundled
background), the best minus the mean of the 20 best tools, and the mean of the 20 best
background cosines. Printed: for each feature alone, the test share of MetaTool queries whose
belt is empty when 80 % of the oos rows get none, and the oos share with no tool when 5 % of
MetaTool queries lose theirs; then the same for a logistic regression over feature subsets
fitted on the fitting rows (balanced classes), with its cut at 5 % lost on those rows.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from routecore import Encoder
from routecore.calibrate.calibration import background_vectors, route_scores, zero_label
from routecore.core.lexical import LexicalTable, fit_form
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed


def curve(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    """(relevant rows lost when 80 % of ``neg`` fall under the cut, ``neg`` under the cut at 5 %
    lost), in %."""
    c80, c5 = np.quantile(neg, 0.80), np.quantile(pos, 0.05)
    return round(float((pos < c80).mean()) * 100, 1), round(float((neg < c5).mean()) * 100, 1)


def logistic(
    Xp: np.ndarray, Xn: np.ndarray, l2: float = 1e-3, steps: int = 50
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Balanced L2 logistic regression by Newton steps on standardised features: (beta, mean, sd)."""
    X = np.concatenate([Xp, Xn])
    mu, sd = X.mean(0), X.std(0) + 1e-9
    X = np.c_[(X - mu) / sd, np.ones(len(X))]
    y = np.r_[np.ones(len(Xp)), np.zeros(len(Xn))]
    wt = np.r_[np.full(len(Xp), 0.5 / len(Xp)), np.full(len(Xn), 0.5 / len(Xn))]
    reg = l2 * np.r_[np.ones(X.shape[1] - 1), 0.0]
    beta = np.zeros(X.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-X @ beta))
        H = (X * (wt * p * (1 - p))[:, None]).T @ X + np.diag(reg)
        beta -= np.linalg.solve(H, X.T @ (wt * (p - y)) + reg * beta)
    return beta, mu, sd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    enc = Encoder.load(ap.parse_args().model, cache_size=0)
    queries, catalog = D.metatool("single_tool")
    names, descs = [t["name"] for t in catalog], [t["description"] for t in catalog]
    own = np.arange(len(names))
    T = embed(enc, descs, what="embedding tools")
    mt = [s.query for s in queries.samples]
    gold = np.array([names.index(s.tools[0]) for s in queries.samples])
    Qm = embed(enc, mt, what="metatool queries")
    oos = {}
    for split in ("val", "test"):
        data = D.clinc150(split)
        keep = np.array([s.label == "oos" for s in data.samples])
        oos[split] = (
            [s.text for s, k in zip(data.samples, keep) if k],
            embed(enc, [s.text for s in data.samples], what=f"clinc150 {split}")[keep],
        )
    half = np.random.default_rng(0).permutation(len(gold))
    fit_rows, test_rows = half[: len(half) // 2], half[len(half) // 2 :]
    Sm = route_scores(Qm, T, own, len(names))
    B = background_vectors(enc)
    cal = zero_label(
        np.zeros((0, T.shape[1]), np.float32),
        [],
        0,
        B,
        tool_vecs=T,
        tool_owners=own,
        n_tools=len(names),
        tool_lexical=(LexicalTable(descs, own, len(names), names), descs),
    )

    def table_for(stemmer: str, b: float) -> LexicalTable:
        return LexicalTable(descs, own, len(names), names, stemmer=stemmer, b=b)

    stemmer, b, w, _, _ = fit_form(
        table_for, [mt[i] for i in fit_rows], Sm[fit_rows], gold[fit_rows], cal.scale
    )
    table = table_for(stemmer, b)

    def features(Q: np.ndarray, texts: list[str]) -> dict[str, np.ndarray]:
        S = route_scores(Q, T, own, len(names))
        L = table.scores_batch(texts)
        top = -np.sort(-S, axis=1)
        bg = -np.sort(-(Q @ B.T), axis=1)
        return {
            "best": top[:, 0],
            "fused_best": (S + w * L).max(1),
            "cover": np.asarray(table.index.coverage_batch(texts)),
            "lexical_best": L.max(1),
            "gap12": top[:, 0] - top[:, 1],
            "top3": top[:, :3].mean(1),
            "best_minus_bg1": top[:, 0] - bg[:, 0],
            "knn3_20": top[:, :3].mean(1) - bg[:, :20].mean(1),
            "best_minus_mean20": top[:, 0] - top[:, :20].mean(1),
            "bg20": bg[:, :20].mean(1),
        }

    fm, fv, ft = (
        features(Qm, mt),
        features(oos["val"][1], oos["val"][0]),
        features(oos["test"][1], oos["test"][0]),
    )
    print(
        json.dumps(
            {
                "model": enc.model_id,
                "form": f"{stemmer}/{b:g}",
                "weight": round(w, 5),
                "background": len(B),
                "relevant_fit/test": [len(fit_rows), len(test_rows)],
                "oos_val/test": [len(fv["best"]), len(ft["best"])],
            }
        )
    )
    print(json.dumps({"alone: lost@80% oos, oos@5% lost": {k: curve(fm[k][test_rows], ft[k]) for k in fm}}))
    keys = list(fm)
    for subset in (
        keys,
        ["best", "fused_best", "cover", "knn3_20"],
        ["best", "bg20"],
        ["fused_best", "cover"],
    ):
        X = lambda f, rows=None: np.stack([f[k] if rows is None else f[k][rows] for k in subset], 1).astype(
            np.float64
        )  # noqa: E731
        beta, mu, sd = logistic(X(fm, fit_rows), X(fv))
        score = lambda M: np.c_[(M - mu) / sd, np.ones(len(M))] @ beta  # noqa: E731
        sp, sn = score(X(fm, test_rows)), score(X(ft))
        cut = np.quantile(score(X(fm, fit_rows)), 0.05)
        print(
            json.dumps(
                {
                    "logistic": subset,
                    "test: lost@80% oos, oos@5% lost": curve(sp, sn),
                    "cut fitted at 5% lost: test lost / oos no tool": [
                        round(float((sp < cut).mean()) * 100, 1),
                        round(float((sn < cut).mean()) * 100, 1),
                    ],
                }
            )
        )


if __name__ == "__main__":
    main()
