"""Tool floor trade-off on MetaTool (issue 12): how many out-of-scope queries get
no candidate tool, and how many MetaTool queries lose their gold tool to the floor.

    python benches/tool_floor.py [--model PATH] [--check 50]

The router is built as `routecore eval --tools tools.jsonl` builds it
(`tool_eval.tools_router`: one ToolSpec(name, description) per MetaTool tool, the
zero-label calibration picks `policy.tool_threshold`). Each query's tool scores
are computed vectorised (`calibration.route_scores`, max over each tool's
exemplars, as the tool table scores them); `--check N` compares the best score
with `router.tools()` on N queries of each set. Queries: MetaTool
single_tool.jsonl (gold = its one tool) and the CLINC150 test rows labelled
"oos". Embeddings are cached under $ROUTECORE_HOME/embeddings.

Printed: one JSON line with the chosen floor and the figures at it, then the
curve over background-quantile floors and over a grid of absolute floors.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from routecore import Encoder
from routecore.calibration import background_texts, route_scores
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed
from routecore.evaluation.tool_eval import tools_router


def at(floor: float, oos_best: np.ndarray, gold_score: np.ndarray, mt_best: np.ndarray) -> dict:
    return {"floor": round(float(floor), 4),
            "oos_no_tool": round(float((oos_best < floor).mean()), 4),
            "metatool_gold_lost": round(float((gold_score < floor).mean()), 4),
            "metatool_no_tool": round(float((mt_best < floor).mean()), 4)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None)
    ap.add_argument("--check", type=int, default=50, help="queries per set checked against router.tools()")
    a = ap.parse_args()
    enc = Encoder.load(a.model, cache_size=0)
    queries, catalog = D.metatool("single_tool")
    router = tools_router(catalog, enc)
    names = [t["name"] for t in catalog]
    pos = {n: i for i, n in enumerate(names)}
    T = embed(enc, [t["description"] for t in catalog], what="embedding tools")  # the same call (and cache) as tools_router
    owners = np.arange(len(names))
    floor = router.policy.tool_threshold

    mt_texts = [s.query for s in queries.samples]
    gold = np.array([pos[s.tools[0]] for s in queries.samples])
    test = D.clinc150("test")
    Qc = embed(enc, [s.text for s in test.samples], what="clinc150 test")  # all rows: shares the cache with zero_label.py
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
    print(json.dumps({
        "model": enc.model_id, "tools": len(names), "metatool_queries": len(gold), "clinc_oos_queries": int(oos.sum()),
        "background": len(B), "calibrated_floor": floor,
        "floor_recomputed_q90": round(float(np.quantile(bg_best, 0.90)), 4),
        "floor_q90_without_clinc_background": round(float(np.quantile(bg_best[no_clinc], 0.90)), 4),
        "recall@1": round(float((rank < 1).mean()), 4), "recall@5": round(float((rank < 5).mean()), 4),
        "check_max_abs_diff": round(max(check), 6) if check else None, "check_n": len(check),
        "oos_best_median": round(float(np.median(oos_best)), 4), "gold_median": round(float(np.median(gold_score)), 4),
    }))
    print(json.dumps({"at_calibrated_floor": at(floor, oos_best, gold_score, mt_best)}))
    for q in (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99):
        print(json.dumps({"background_quantile": q, **at(float(np.quantile(bg_best, q)), oos_best, gold_score, mt_best)}))
    # Where the goal would sit: the floors at which 80 % of OOS get no tool / 5 % of gold tools are lost.
    print(json.dumps({"floor_for_oos_no_tool_0.80": round(float(np.quantile(oos_best, 0.80)), 4),
                      "floor_for_gold_lost_0.05": round(float(np.quantile(gold_score, 0.05)), 4)}))
    lo, hi = np.quantile(np.concatenate([oos_best, gold_score]), [0.01, 0.99])
    for f in np.round(np.linspace(lo, hi, 15), 3):
        print(json.dumps({"grid": True, **at(float(f), oos_best, gold_score, mt_best)}))


if __name__ == "__main__":
    main()
