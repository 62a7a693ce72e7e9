"""Token budget of the LLM tool router (issue 19): the router prompt (one-line summaries)
against the candidates' full schemas.

    python benches/llm_tool_budget.py

Catalogs: the example `examples/tools.yaml` (10 tools with input schemas) and 500 tools
made of MetaTool's 199 descriptions, numbered (MetaTool has no parameter schemas, so
their full schema is the name, description and an empty parameter object: the saving
there is a lower bound). Modes `llm` (every tool) and `hybrid` (the best 20). Tokens
counted twice: routecore's estimate (4 characters a token) and the bundled e5 tokenizer.
"""

from __future__ import annotations

import json
from pathlib import Path

from routecore import Encoder, Router
from routecore.config.specs import ToolSpec
from routecore.evaluation import datasets as D
from routecore.examples import __file__ as examples
from routecore.routers.llm_tools import LLMToolRouter
from routecore.tools.catalog import estimate_tokens


def main() -> None:
    enc = Encoder.load()
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(enc.path) / "tokenizer.json"))
    tok.no_truncation()
    count = lambda text: len(tok.encode(text, add_special_tokens=False).ids)  # noqa: E731
    queries, cat = D.metatool("single_tool")
    big = [ToolSpec(f"{t['name']}_{k}", t["description"]) for k in range(3) for t in cat][:500]
    catalogs = {
        "example (10 tools)": Router.from_config(Path(examples).parent / "tools.yaml", encoder=enc),
        "MetaTool x3 (500 tools)": Router([], big, encoder=enc),
    }
    q = {
        "example (10 tools)": "the nginx service on web-3 keeps crashing, restart it",
        "MetaTool x3 (500 tools)": queries.samples[0].query,
    }
    for name, router in catalogs.items():
        for mode, top in (("llm", None), ("hybrid", 20)):
            r = LLMToolRouter(router, "http://127.0.0.1:9/v1", "m", mode=mode, hybrid_top=top or 20)
            specs = router.tool_specs
            if mode == "hybrid":
                keep = set(router.tools(q[name], top_k=min(20, len(specs)), threshold=0.0).names)
                specs = [t for t in specs if t.name in keep]
            msgs = r.messages(q[name], specs, router.tools(q[name]))
            prompt = msgs[0]["content"] + msgs[1]["content"]
            summaries = "\n".join(t.summary() for t in specs)
            schemas = json.dumps([t.schema() for t in specs])
            out: dict[str, object] = {"catalog": name, "mode": mode, "candidates": len(specs)}
            for unit, f in (("est", estimate_tokens), ("e5", count)):
                p, s_, sc = f(prompt), f(summaries), f(schemas)
                out[unit] = {
                    "summaries": s_,
                    "whole_prompt": p,
                    "full_schemas": sc,
                    "saving_summaries": round(1 - s_ / sc, 3),
                    "saving_whole_prompt": round(1 - p / sc, 3),
                }
            print(json.dumps(out))
            r.close()


if __name__ == "__main__":
    main()
