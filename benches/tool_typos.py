"""Tool belts on mistyped queries: MetaTool's dev half as written and with typos, the tools' speller on / off.

    ROUTECORE_HOME=/tmp/rchome python benches/tool_typos.py [--model PATH] [--n 1500] [--rate 0.10]

The router is built as ``routecore eval --tools`` builds it (``tool_eval.tools_router``: one
ToolSpec(name, description) per MetaTool tool, zero-label floor, no fit). Queries: ``--n`` of the seeded
half of ``single_tool.jsonl`` that ``tool_floor.py --split dev`` and ``tool_floor_features.py`` read (the
same permutation, its first ``--n``), each as written and with typos on ``--rate`` of its letters
(``evaluation.perturb.typos``, seeded by the row). Each belt comes from ``Router.tools_batch`` (top 5),
with ``policy.tools.tool_spelling`` on (the default) and off.

Printed per reading (clean / typos) and setting: recall@1 (the gold tool is the belt's first), recall@5
(in the belt), the share of empty belts (``no_tool``), and the share of queries the speller changed.
"""

from __future__ import annotations

import argparse

import numpy as np

from routecore import Encoder
from routecore.decide.conversation import routing_text
from routecore.evaluation import datasets as D
from routecore.evaluation.perturb import typos
from routecore.evaluation.tool_eval import tools_router


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--rate", type=float, default=0.10)
    a = ap.parse_args()
    enc = Encoder.load(a.model)
    queries, catalog = D.metatool("single_tool")
    half = np.random.default_rng(0).permutation(len(queries.samples))[: len(queries.samples) // 2]
    rows = [queries.samples[i] for i in half[: a.n]]
    gold = [s.tools[0] for s in rows]
    router = tools_router(catalog, enc)
    cat = router.tool_catalog
    on = router.policy
    print(f"# {enc.model_id}, MetaTool dev half, {len(rows)} queries, typos on {a.rate:.0%} of letters")
    print("| reading | tool_spelling | changed | r@1 | r@5 | no_tool |")
    print("|---|---|---|---|---|---|")
    for kind in ("clean", "typos"):
        texts = [s.query if kind == "clean" else typos(s.query, a.rate, seed=i) for i, s in enumerate(rows)]
        changed = np.mean([bool(cat.speller.repair(routing_text(t)[0])[1]) for t in texts])
        for spelling in (False, True):
            cat.policy = on.with_overrides(tool_spelling=spelling)
            belts = router.tools_batch(texts, top_k=5)
            r1 = np.mean([bool(b.tools) and b.tools[0].name == g for b, g in zip(belts, gold)])
            r5 = np.mean([g in b.names for b, g in zip(belts, gold)])
            none = np.mean([b.no_tool for b in belts])
            state = "on" if spelling else "off"
            print(f"| {kind} | {state} | {changed:.1%} | {r1:.1%} | {r5:.1%} | {none:.1%} |")
        cat.policy = on


if __name__ == "__main__":
    main()
