"""MetaTool through `routecore eval`'s tool evaluation, every shape at once (issue 14):
single_tool rows (one gold tool), multi_tool rows (several) and the CLINC150 test rows
labelled "oos" as rows where no tool fits (empty gold).

    python benches/metatool_shapes.py [--model PATH] [--limit N]

The router is `tool_eval.tools_router` on MetaTool's 199 tools (description only),
zero-label calibrated; every row goes through `Router.tools()`. Prints the JSON
result of `tool_eval.evaluate_tools`. Embeddings of the tools are cached under
$ROUTECORE_HOME/embeddings (the queries are encoded by the router, as a user's are).
"""

from __future__ import annotations

import argparse
import json
import time

from routecore import Encoder
from routecore.evaluation import datasets as D
from routecore.evaluation.tool_eval import evaluate_tools, tools_router


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--limit", type=int, default=0, help="first N single_tool rows only (0: all)")
    a = ap.parse_args()
    enc = Encoder.load(a.model)
    single, catalog = D.metatool("single_tool")
    multi, _ = D.metatool("multi_tool")
    oos = [D.ToolSample(s.text, (), s.line) for s in D.clinc150("test").samples if s.label == "oos"]
    rows = (single.samples[: a.limit] if a.limit else single.samples) + multi.samples + oos
    router = tools_router(catalog, enc, progress=True)
    t0 = time.time()
    res = evaluate_tools(router, D.Dataset("metatool+clinc-oos", rows), progress=True).to_dict()
    res.update(
        model=enc.model_id,
        floor=router.policy.tool_threshold,
        seconds=round(time.time() - t0, 1),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
