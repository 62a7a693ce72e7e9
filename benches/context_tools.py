"""Tool search from a context against the raw query, on MetaTool (issue 19).

    python benches/context_tools.py [--model PATH] [--n 2000] [--config CONTEXT.yaml]

The design builds the tool search from the context ("intent, domain, entities,
task"): `Router.tools(query, context=ContextRouter.detect(query))` embeds
`Context.search_text()` instead of the query. This compares recall@1 / @5 of the
gold tool between the two searches on a seeded sample of MetaTool `single_tool`
queries, over the 199 tools described by their one sentence (the router `routecore
eval --tools` builds), with the floor off (`threshold=0`: ranking only), and says how
often each search leaves the belt empty at the calibrated floor. The context router
has the default layers (intent, urgency, sensitivity), plus those of `--config`.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation.tool_eval import tools_router
from routecore.routers.context import ContextRouter


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--config", default=None, help="a context config whose layers are added to the defaults")
    a = ap.parse_args()
    enc = Encoder.load(a.model)
    queries, catalog = D.metatool("single_tool")
    router = tools_router(catalog, enc)
    cr = ContextRouter.from_config(a.config, encoder=enc)
    rng = np.random.default_rng(0)
    sample = [
        queries.samples[i]
        for i in rng.choice(len(queries.samples), min(a.n, len(queries.samples)), replace=False)
    ]
    hits = {"query": [0, 0], "context": [0, 0]}
    empty = {"query": 0, "context": 0}
    intents: dict[str, int] = {}
    t0 = time.time()
    for s in sample:
        ctx = cr.detect(s.query)
        intents[str(ctx.label("intent"))] = intents.get(str(ctx.label("intent")), 0) + 1
        gold = s.tools[0]
        for key, kw in (("query", {}), ("context", {"context": ctx})):
            ranked = router.tools(s.query, top_k=5, threshold=0.0, **kw).names
            hits[key][0] += bool(ranked) and ranked[0] == gold
            hits[key][1] += gold in ranked
            empty[key] += router.tools(s.query, **kw).no_tool
    n = len(sample)
    print(
        json.dumps(
            {
                "model": enc.model_id,
                "queries": n,
                "tools": len(catalog),
                "layers": list(cr.layers),
                "seconds": round(time.time() - t0, 1),
                "recall@1": {k: round(100 * v[0] / n, 2) for k, v in hits.items()},
                "recall@5": {k: round(100 * v[1] / n, 2) for k, v in hits.items()},
                "no_tool_at_the_calibrated_floor": {k: round(100 * v / n, 2) for k, v in empty.items()},
                "intent_labels": intents,
                "example": cr.detect(sample[0].query).search_text(),
            }
        )
    )


if __name__ == "__main__":
    main()
