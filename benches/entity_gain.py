"""What entities add to routing on queries that carry IDs (issue 19).

    python benches/entity_gain.py [--model PATH]

The IT-ops example as shipped (INCIDENT prefers ``incident_id``, ``INC\\d{8}``) against
the same routes without entities, on ``tests/data/entity_queries.jsonl``: 14 queries
naming an incident (French and English) and 4 naming only a service, none of them an
exemplar. Prints each query's decision both ways, then right / confidently right /
wrong per setting.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from routecore import Encoder, Router
from routecore.examples import __file__ as examples

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    a = ap.parse_args()
    enc = Encoder.load(a.model) if a.model else Encoder.load()
    on = Router.from_config(Path(examples).parent / "it_ops_routes.yaml", encoder=enc)
    off = Router(
        [replace(r, prefers_entities=(), requires_entities=()) for r in on.route_specs],
        encoder=enc,
        policy=on.spec_policy,
    )
    rows = [
        json.loads(line)
        for line in (ROOT / "tests" / "data" / "entity_queries.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    tally = {
        "off": {"right": 0, "high_right": 0, "wrong": 0},
        "on": {"right": 0, "high_right": 0, "wrong": 0},
    }
    for row in rows:
        out = {"text": row["text"], "label": row["label"]}
        for name, r in (("off", off), ("on", on)):
            d = r.route(row["text"])
            out[name] = f"{d.action} {d.route} {d.tier} {d.confidence:.2f}"
            right = d.action == "route" and d.route == row["label"]
            tally[name]["right"] += right
            tally[name]["high_right"] += right and d.tier == "high"
            tally[name]["wrong"] += d.action == "route" and d.route != row["label"]
        out["entities"] = [(e.kind, e.value) for e in on.route(row["text"]).entities]
        print(json.dumps(out, ensure_ascii=False))
    print(json.dumps({"model": enc.model_id, "queries": len(rows), **tally}))


if __name__ == "__main__":
    main()
