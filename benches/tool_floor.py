"""Tool floor trade-off on MetaTool (issue 12): how many out-of-scope queries get
no candidate tool, and how many MetaTool queries lose their gold tool to the floor.

    python benches/tool_floor.py [--model PATH] [--check 50] [--split all|dev]

The router is built as `routecore eval --tools tools.jsonl` builds it
(`tool_eval.tools_router`: one ToolSpec(name, description) per MetaTool tool, the
zero-label calibration picks `policy.tool_threshold`). Each query's tool scores
are computed vectorised (`calibration.route_scores`, max over each tool's
exemplars, as the tool table scores them); `--check N` compares the best score
with `router.tools()` on N queries of each set. Queries: MetaTool
single_tool.jsonl (gold = its one tool) and the CLINC150 test rows labelled
"oos". Embeddings are cached under $ROUTECORE_HOME/embeddings. ``--split dev``: the
seeded half of MetaTool's queries that ``tool_floor_features.py`` fits on, and CLINC150
val's "oos" rows instead of test's.

Printed: one JSON line with the chosen floor and the figures at it, then the
curve over background-quantile floors and over a grid of absolute floors. Two
readings of "gold lost to the floor": `gold_lost_each` (policy.tool_floor
"each": the gold tool scores under the floor) and `gold_lost_best` (the default
"best": the belt is empty, i.e. the best tool scores under it; the same share
as `metatool_no_tool`).

`--knn` adds a query-level rule that is not shipped (research for issue 12 §4):
g(q) = mean of the query's 3 best tool cosines − mean of its 20 best cosines to
the background's English rows written for this project (`--knn-rows`: or every English
row, or all rows); the belt is empty when
g(q) < the 0.90 quantile of g over those rows (each left out of its own mean).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import routecore
from routecore import Encoder
from routecore.calibrate.calibration import background_texts, route_scores
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed
from routecore.evaluation.tool_eval import tools_router


def at(floor: float, oos_best: np.ndarray, gold_score: np.ndarray, mt_best: np.ndarray) -> dict:
    return {
        "floor": round(float(floor), 4),
        "oos_no_tool": round(float((oos_best < floor).mean()), 4),
        "gold_lost_each": round(float((gold_score < floor).mean()), 4),
        "gold_lost_best": round(float((mt_best < floor).mean()), 4),
    }


def top_mean(S: np.ndarray, k: int) -> np.ndarray:
    """Mean of each row's k largest entries."""
    return -np.mean(np.partition(-S, k - 1, axis=1)[:, :k], axis=1)


def knn_gate(T: np.ndarray, B: np.ndarray, Qm: np.ndarray, Qo: np.ndarray) -> None:
    """The kNN3-20 query-level rule (see the module docstring): its zero-label cut and curve."""
    SBB = B @ B.T
    np.fill_diagonal(SBB, -np.inf)
    kb = min(20, len(B) - 1)
    g_bg = top_mean(B @ T.T, 3) - top_mean(SBB, kb)
    g_mt, g_oos = (top_mean(Q @ T.T, 3) - top_mean(Q @ B.T, kb) for Q in (Qm, Qo))
    cut = float(np.quantile(g_bg, 0.90))
    row = lambda c: {
        "oos_no_tool": round(float((g_oos < c).mean()), 4),
        "gold_lost_best": round(float((g_mt < c).mean()), 4),
    }
    print(
        json.dumps({"knn3_20": "zero-label cut", "background_rows": len(B), "cut": round(cut, 4), **row(cut)})
    )
    for p in (0.5, 0.7, 0.8, 0.9):
        print(json.dumps({"knn3_20": f"oos_no_tool {p}", **row(float(np.quantile(g_oos, p)))}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None)
    ap.add_argument("--check", type=int, default=50, help="queries per set checked against router.tools()")
    ap.add_argument("--knn", action="store_true", help="also the kNN3-20 query-level rule (not shipped)")
    ap.add_argument(
        "--knn-rows",
        default="en-routecore",
        choices=("en-routecore", "en", "all"),
        help="the background rows kNN3-20 reads: English ones written for this project (default), every "
        "English one (CLINC150-derived included), or all",
    )
    ap.add_argument(
        "--split", default="all", choices=("all", "dev"), help="dev: MetaTool's fitting half, CLINC150 val"
    )
    a = ap.parse_args()
    enc = Encoder.load(a.model, cache_size=0)
    queries, catalog = D.metatool("single_tool")
    if a.split == "dev":  # the half tool_floor_features.py fits on (the same seeded permutation)
        half = np.random.default_rng(0).permutation(len(queries.samples))[: len(queries.samples) // 2]
        queries = type(queries)(queries.name, [queries.samples[i] for i in np.sort(half)])
    router = tools_router(catalog, enc)
    names = [t["name"] for t in catalog]
    pos = {n: i for i, n in enumerate(names)}
    T = embed(
        enc, [t["description"] for t in catalog], what="embedding tools"
    )  # the same call (and cache) as tools_router
    owners = np.arange(len(names))
    floor = router.policy.tool_threshold

    mt_texts = [s.query for s in queries.samples]
    gold = np.array([pos[s.tools[0]] for s in queries.samples])
    test = D.clinc150("val" if a.split == "dev" else "test")
    Qc = embed(
        enc, [s.text for s in test.samples], what="clinc150 " + ("val" if a.split == "dev" else "test")
    )  # all rows: shares the cache with zero_label.py
    oos = np.array([s.label == "oos" for s in test.samples])
    Qm = embed(enc, mt_texts, what="metatool queries")
    Sm = route_scores(Qm, T, owners, len(names))
    So = route_scores(Qc[oos], T, owners, len(names))
    mt_best, oos_best = Sm.max(axis=1), So.max(axis=1)
    gold_score = Sm[np.arange(len(gold)), gold]
    rank = (Sm > gold_score[:, None]).sum(axis=1)  # 0 = gold is the best tool

    # Background best-tool scores: the zero-label floor is their 0.90 quantile.
    texts, sources = background_texts()
    B = embed(enc, list(texts), what="background")
    bg_best = route_scores(B, T, owners, len(names)).max(axis=1)
    no_clinc = np.array([not s.startswith("clinc150") for s in sources])

    check = []
    if a.check:
        rng = np.random.default_rng(0)
        for qs, best in ((mt_texts, mt_best), ([s.text for s, o in zip(test.samples, oos) if o], oos_best)):
            for i in rng.choice(len(qs), min(a.check, len(qs)), replace=False):
                belt = router.tools(qs[i], top_k=1, threshold=0.0)
                check.append(abs(max(belt.scores.values()) - float(best[i])))
    print(
        json.dumps(
            {
                "model": enc.model_id,
                "tools": len(names),
                "metatool_queries": len(gold),
                "clinc_oos_queries": int(oos.sum()),
                "background": len(B),
                "calibrated_floor": floor,
                "floor_recomputed_q90": round(float(np.quantile(bg_best, 0.90)), 4),
                "floor_q90_without_clinc_background": round(float(np.quantile(bg_best[no_clinc], 0.90)), 4),
                "recall@1": round(float((rank < 1).mean()), 4),
                "recall@5": round(float((rank < 5).mean()), 4),
                "check_max_abs_diff": round(max(check), 6) if check else None,
                "check_n": len(check),
                "oos_best_median": round(float(np.median(oos_best)), 4),
                "gold_median": round(float(np.median(gold_score)), 4),
            }
        )
    )
    print(json.dumps({"at_calibrated_floor": at(floor, oos_best, gold_score, mt_best)}))
    for q in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99):
        print(
            json.dumps(
                {
                    "background_quantile": q,
                    **at(float(np.quantile(bg_best, q)), oos_best, gold_score, mt_best),
                }
            )
        )
    # Where the goal would sit: the floors at which 80 % of OOS get no tool / 5 % of gold tools are lost.
    print(
        json.dumps(
            {
                "floor_for_oos_no_tool_0.80": round(float(np.quantile(oos_best, 0.80)), 4),
                "floor_for_gold_lost_0.05": round(float(np.quantile(gold_score, 0.05)), 4),
            }
        )
    )
    print(
        json.dumps(
            {
                "gold_lost_best_at_oos_no_tool_0.80": round(
                    float((mt_best < np.quantile(oos_best, 0.80)).mean()), 4
                )
            }
        )
    )
    if a.knn:
        langs = [
            json.loads(line)["lang"]
            for line in open(Path(routecore.__file__).parent / "data" / "background.jsonl")
        ]
        mine = np.array(
            [
                a.knn_rows == "all" or (lang == "en" and (a.knn_rows == "en" or src == "routecore"))
                for lang, src in zip(langs, sources)
            ]
        )
        knn_gate(T, B[mine], Qm, Qc[oos])
    lo, hi = np.quantile(np.concatenate([oos_best, gold_score]), [0.01, 0.99])
    for f in np.round(np.linspace(lo, hi, 15), 3):
        print(json.dumps({"grid": True, **at(float(f), oos_best, gold_score, mt_best)}))


if __name__ == "__main__":
    main()
