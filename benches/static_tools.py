"""Tool belts from the static tier's shortlist, re-scored by the transformer (issue 38 §3), on MetaTool.

    ROUTECORE_HOME=/tmp/rchome python benches/static_tools.py [--model PATH] [--static NAME|PATH]
        [--shortlists 5,10,20,30,50] [--split dev|test] [--timed 300] [--json OUT]

The routers are built as ``routecore eval --tools`` builds them (``tool_eval.tools_router``: one
ToolSpec(name, description) per MetaTool tool, zero-label calibration, so each encoder has its own
tool floor), one per encoder: the transformer (default the bundled e5) and its static table
(default ``<model>-static`` from the model cache). Queries: single_tool.jsonl split as BENCHMARKS
§6.1 splits it (a seeded half, ``default_rng(0)``): ``dev`` the first half (where the default
shortlist size is chosen), ``test`` the other half (reported once). Out of scope ("no tool fits",
§6.2): the 1,000 CLINC150 test ``oos`` rows.

Belts, top_k = 5, from cached embeddings (``vector=``): the transformer alone (``Router.tools``), the
static table alone, and the cascade for each shortlist size N (the table's best N tools,
``tools.shortlist.best_tools``, then the transformer's ``Router.tools(candidates=...)``, which is what
``Cascade.tools`` does; ``--check`` compares the two on the timed queries). Per belt:
recall@1/3/5 and MRR over the belt's reported scores (as ``routecore eval``), the share of MetaTool
queries given no tool, the share of OOS rows given no tool; for the cascade also the shortlist's
recall@N (the gold tool among the table's best N).

Latency (``--timed N`` queries of the split, one thread: ``RAYON_NUM_THREADS=1``, the transformer
loaded with ``threads=1``, query caches off): ``Router.tools`` of each router and ``Cascade.tools``
of each N, encoders included, p50/p95 ms, the calls interleaved query by query.
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

from routecore import Encoder  # noqa: E402
from routecore.decide.conversation import routing_text  # noqa: E402
from routecore.decision import ToolBelt  # noqa: E402
from routecore.evaluation import datasets as D  # noqa: E402
from routecore.evaluation import metrics as M  # noqa: E402
from routecore.evaluation.runner import embed  # noqa: E402
from routecore.evaluation.tool_eval import tools_router  # noqa: E402
from routecore.hub import models  # noqa: E402
from routecore.hub.distill import static_name  # noqa: E402
from routecore.routers.cascade import Cascade  # noqa: E402
from routecore.routers.router import Router  # noqa: E402
from routecore.tools.shortlist import best_tools  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from static_tier import coverage  # noqa: E402

K = 5  # the belt's top_k, and the deepest recall reported (BENCHMARKS §6: recall@1 / @5)


def split(n: int, which: str) -> np.ndarray:
    """BENCHMARKS §6.1's seeded half: ``dev`` the first half of the permutation, ``test`` the rest."""
    half = np.random.default_rng(0).permutation(n)
    return half[: n // 2] if which == "dev" else half[n // 2 :]


def belts_metrics(belts: list[ToolBelt], gold: list[list[str]], oos: list[ToolBelt]) -> dict[str, Any]:
    """Recall@1/3/5, MRR, no-tool shares (MetaTool queries, OOS rows), in %."""
    m = M.tool_shape_metrics(
        gold,
        [list(b.scores)[:K] for b in belts],
        [[c.name for c in b.tools if c.reason.code in ("top_k", "threshold")] for b in belts],
        [b.no_tool for b in belts],
        [next(iter(b.scores.values()), float("-inf")) for b in belts],
        (1, 3, 5),
    )
    out = {k: round(100 * float(m[k]), 2) for k in ("recall@1", "recall@3", "recall@5") if k in m}
    out["mrr"] = round(float(m["mrr"]), 4) if "mrr" in m else None
    out["no_tool_metatool"] = round(100 * float(np.mean([b.no_tool for b in belts])), 2)
    out["no_tool_oos"] = round(100 * float(np.mean([b.no_tool for b in oos])), 2)
    return out


def rescored(
    fast: Router, strong: Router, q: str, n: int, xs: Any, xt: Any
) -> tuple[ToolBelt, tuple[str, ...]]:
    """What ``Cascade.tools`` computes, on given embeddings: the belt and the shortlist."""
    s = best_tools(fast.tool_catalog, q, n, vector=xs)
    return strong.tools(q, top_k=K, candidates=list(s.candidates), vector=xt), s.names


def figures(
    fast: Router, strong: Router, texts: list[str], gold: list[list[str]], oos: list[str], sizes: list[int]
) -> dict[str, Any]:
    """Every configuration's belt metrics on ``texts`` (and the OOS rows)."""
    routed, routed_oos = [routing_text(q)[0] for q in texts], [routing_text(q)[0] for q in oos]  # as tools()
    xs, xt = embed(fast.encoder, routed, what="static"), embed(strong.encoder, routed, what="transformer")
    os_, ot = (
        embed(fast.encoder, routed_oos, what="static"),
        embed(strong.encoder, routed_oos, what="transformer"),
    )

    def run(r: Router, X: Any, qs: list[str]) -> list[ToolBelt]:
        return [r.tools(q, top_k=K, vector=X[i]) for i, q in enumerate(qs)]

    out: dict[str, Any] = {
        "transformer": belts_metrics(run(strong, xt, texts), gold, run(strong, ot, oos)),
        "static": belts_metrics(run(fast, xs, texts), gold, run(fast, os_, oos)),
    }
    for n in sizes:
        got = [rescored(fast, strong, q, n, xs[i], xt[i]) for i, q in enumerate(texts)]
        o = [rescored(fast, strong, q, n, os_[i], ot[i])[0] for i, q in enumerate(oos)]
        row = belts_metrics([b for b, _ in got], gold, o)
        row["shortlist_recall"] = round(100 * float(np.mean([g[0] in s for (_, s), g in zip(got, gold)])), 2)
        out[f"cascade_{n}"] = row
    return out


def timed(fast: Router, strong: Router, texts: list[str], sizes: list[int], check: bool) -> dict[str, Any]:
    """p50/p95 ms of each configuration's ``tools()``, encoders included, one thread."""
    calls: dict[str, Callable[[str], ToolBelt]] = {
        "transformer": lambda q: strong.tools(q, top_k=K),
        "static": lambda q: fast.tools(q, top_k=K),
    }
    for n in sizes:
        calls[f"cascade_{n}"] = Cascade(fast, strong, shortlist=n).tools
    for q in texts[:20]:  # warm-up
        for f in calls.values():
            f(q)
    ms: dict[str, list[float]] = {k: [] for k in calls}
    same = 0
    for q in texts:
        for k, f in calls.items():
            t0 = time.perf_counter()
            b = f(q)
            ms[k].append((time.perf_counter() - t0) * 1e3)
            if check and k == f"cascade_{sizes[0]}":
                x = [routing_text(q)[0]]
                ref, _ = rescored(
                    fast, strong, q, sizes[0], fast.encoder.encode(x)[0], strong.encoder.encode(x)[0]
                )
                same += list(b.scores) == list(ref.scores) and b.names == ref.names
    out: dict[str, Any] = {
        k: {"p50": round(float(np.percentile(v, 50)), 3), "p95": round(float(np.percentile(v, 95)), 3)}
        for k, v in ms.items()
    }
    if check:
        out["check_same_belt"] = f"{same}/{len(texts)}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="the transformer (default: the bundled e5)")
    ap.add_argument("--static", default=None, help="the table (default: <model>-static in the cache)")
    ap.add_argument("--shortlists", default="5,10,20,30,50")
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--timed", type=int, default=300)
    ap.add_argument(
        "--check", action="store_true", help="Cascade.tools against the vector path, timed queries"
    )
    ap.add_argument("--json", default=None, help="also write the result to this file")
    a = ap.parse_args()
    sizes = [int(n) for n in a.shortlists.split(",")]
    static = a.static or static_name(models.resolve(a.model))
    te, se = Encoder.load(a.model, threads=1, cache_size=0), Encoder.load(static)
    queries, catalog = D.metatool("single_tool")
    strong, fast = tools_router(catalog, te), tools_router(catalog, se)
    rows = split(len(queries.samples), a.split)
    texts = [queries.samples[i].query for i in rows]
    gold = [list(queries.samples[i].tools) for i in rows]
    oos = [s.text for s in D.clinc150("test").samples if s.label == "oos"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
    head = {
        "transformer": te.model_id,
        "static": se.model_id,
        "split": a.split,
        "queries": len(texts),
        "oos": len(oos),
        "tools": len(catalog),
        "floors": {"transformer": strong.policy.tool_threshold, "static": fast.policy.tool_threshold},
        "commit": commit.strip(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    print(json.dumps(head), flush=True)
    head["piece_coverage"] = coverage(se, texts)  # share of the queries' pieces with a row in the table
    result: dict[str, Any] = {**head, "belts": figures(fast, strong, texts, gold, oos, sizes)}
    for k, v in result["belts"].items():
        print(json.dumps({"config": k, **v}), flush=True)
    if a.timed:
        sample = [
            texts[i] for i in np.random.default_rng(1).choice(len(texts), min(a.timed, len(texts)), False)
        ]
        result["latency_ms"] = timed(fast, strong, sample, sizes, a.check)
        print(json.dumps({"latency_ms": result["latency_ms"], "timed": len(sample)}), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    sys.exit(main())
