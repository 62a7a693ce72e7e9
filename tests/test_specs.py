"""Config files: YAML/JSON loading and every bad-input case."""

from __future__ import annotations

import json

import pytest
from stubs import StubEncoder, unit

from routecore.errors import ConfigError
from routecore.router import Router
from routecore.specs import parse_routes, parse_tools, read_config_file


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_yaml_and_json_load(tmp_path):
    y = write(tmp_path, "r.yaml", "routes:\n  - name: A\n    utterances: [x]\n  - name: B\n    description: about b\n")
    j = write(tmp_path, "r.json", json.dumps({"routes": [{"name": "A", "utterances": ["x"]}], "tools": [{"name": "t", "description": "d"}], "policy": {"high": 0.9}}))
    enc = StubEncoder({"x": unit(0), "about b": unit(1), "d": unit(2)})
    assert [r.name for r in Router.from_config(y, encoder=enc).route_specs] == ["A", "B"]
    r = Router.from_config(j, encoder=enc)
    assert r.policy.high == 0.9 and r.tool_specs[0].name == "t"


def test_route_thresholds_from_yaml_reach_the_policy(tmp_path):
    y = write(tmp_path, "r.yaml", "routes:\n  - name: A\n    utterances: [x]\n    thresholds: {high: 0.6, medium: 0.3}\n"
              "  - name: B\n    description: about b\npolicy:\n  per_route: {A: {medium: 0.4}}\n")
    r = Router.from_config(y, encoder=StubEncoder({"x": unit(0), "about b": unit(1)}))
    p = r.policy  # calibrated where neither the route nor the policy says
    assert p.thresholds("A", continuing=False) == (0.6, p.margin, 0.4, p.min_score)
    assert p.thresholds("B", continuing=False) == (p.high, p.margin, p.medium, p.min_score)


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "empty"),
        ("routes: []\n", "empty|no routes"),
        ("routes:\n  - name: A\n    utterances: [x]\n  - name: A\n    utterances: [y]\n", r"routes\[1\]: duplicate route name \'A\' \(first at routes\[0\]\)"),
        ("tools:\n  - name: t\n    description: a\n  - name: t\n    description: b\n", r"tools\[1\]: duplicate tool name \'t\' \(first at tools\[0\]\)"),
        ("routes:\n  - name: A\n", r"routes\[0\] \(\'A\'\) has neither utterances nor a description"),
        ("routes:\n  - name: A\n    utterances: [x]\n    thresholds: {high: 1.4}\n", r"routes\[0\]\.thresholds\.high: expected `float` <= 1\.0 \(found 1\.4\)"),
        ("routes:\n  - name: A\n    utterances: [x]\n    thresholds: {hgih: 0.4}\n", r"routes\[0\]\.thresholds: object contains unknown field `hgih`"),
        ("routes:\n  - name: A\n    utterances: [x]\n    thresholds: 0.4\n", r"routes\[0\]\.thresholds: expected `object`, got `float`"),
        ("routes:\n  - name: A\n    utterances: [x]\npolicy: {per_route: {A: {high: 7}}}\n", r"policy\.per_route\['A'\]\.high: expected `float` <= 1\.0 \(found 7\)"),
        ("routes:\n  - name: A\n    utterances: [x\n", "malformed YAML"),
        ("routes:\n  - name: A\n    utterances: [x]\npolicy: {margin: 3}\n", r"policy\.margin: expected `float` <= 1\.0"),
        ("routes:\n  - name: A\n    utterances: [x]\n    fallback_on_error: Z\n", r"routes\[0\]\.fallback_on_error: 'Z' is not a route"),
        ("routes:\n  - utterances: [x]\n", r"routes\[0\]: object missing required field `name`"),
        ("rutes: []\n", r"c\.yaml: object contains unknown field `rutes`"),
        ("tools:\n  - name: t\n    description: d\n    cost_estimate: cheap\n", r"tools\[0\]\.cost_estimate: expected `float \| null`, got `str` \(found 'cheap'\)"),
        ("tools:\n  - name: t\n    description: d\n    avg_latency: -1\n", r"tools\[0\]\.avg_latency: expected `float` >= 0\.0 \(found -1\)"),
    ],
)
def test_bad_configs_name_the_problem(tmp_path, text, match):
    p = write(tmp_path, "c.yaml", text)
    with pytest.raises(ConfigError, match=match):
        Router.from_config(p, encoder=StubEncoder({}))


def test_missing_file_and_bad_json(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        read_config_file(tmp_path / "none.yaml")
    with pytest.raises(ConfigError, match="line 1"):
        read_config_file(write(tmp_path, "c.json", "{nope"))


def test_router_needs_something():
    with pytest.raises(ConfigError):
        Router([], [], encoder=StubEncoder({}))
    assert parse_routes({}) == [] and parse_tools({}) == []
