"""Config loading through the msgspec schema (issue 13 §2): validating and
converting a parsed document of 150 routes x 100 exemplars, and of 10k tools,
against the same documents through plain Python dict walking (the floor: the
cost of touching every value once). Embedding is not included."""

from __future__ import annotations

import pytest

from routecore.config.specs import parse_config
from routecore.decide.policy import Policy

ROUTES = {
    "routes": [
        {
            "name": f"R{i}",
            "description": f"route {i}",
            "utterances": [f"utterance {j} of route {i}" for j in range(100)],
            "thresholds": {"high": 0.9},
        }
        for i in range(150)
    ],
    "policy": {
        "high": 0.9,
        "bias_rules": [{"a": "R1", "b": "R2", "winner": "R1"}],
        "per_route": {"R3": {"medium": 0.5}},
    },
}
TOOLS = {
    "tools": [
        {
            "name": f"tool_{i}",
            "description": f"does thing {i}",
            "domain": f"d{i % 50}",
            "success_examples": ["a", "b"],
            "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}},
        }
        for i in range(10_000)
    ]
}


def _walk(v):
    if isinstance(v, dict):
        return sum(_walk(x) for x in v.values())
    if isinstance(v, list):
        return sum(_walk(x) for x in v)
    return 1


@pytest.mark.parametrize("doc", ["150x100 routes", "10k tools"])
@pytest.mark.parametrize("how", ["schema", "walk"])
def test_parse_config(benchmark, doc, how):
    data = ROUTES if doc.startswith("150") else TOOLS
    benchmark.group = f"config {doc}"
    if how == "schema":
        fn = lambda: (parse_config(data, "bench"), Policy.from_dict(data.get("policy")))  # noqa: E731
    else:
        fn = lambda: _walk(data)  # noqa: E731
    benchmark.pedantic(fn, rounds=10, warmup_rounds=1)
