"""Bad configs fail at load with a ConfigError that names the key, not later inside route()
(issue 13 §2/§3: the cases a probe of the library reproduced)."""

from __future__ import annotations

import pytest

from routecore.config.specs import RouteSpec, ToolSpec, parse_routes, parse_tools
from routecore.decide.policy import BiasRule, Policy
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.router import Router
from stubs import StubEncoder, manual, unit

ENC = {"a": unit(0), "b": unit(1), "t": unit(2)}


@pytest.mark.parametrize(
    "bad",
    [
        {"high": "0.9"},
        {"min_score": "0.3"},
        {"temperature": "0.05"},
        {"tool_top_k": "5"},
        {"previous_boost": float("nan")},
        {"previous_boost": -5},
        {"top_exemplars": -1},
        {"tool_top_k": 0},
        {"tool_top_k": 2**64},
        {"high": True},
        {"discovery_prefixes": "get_"},
        {"bias_rules": [{"a": "A", "b": "B", "winner": "A", "within": "0.5"}]},
        {"bias_rules": "RAG"},
        {"per_route": [1, 2]},
    ],
)
def test_wrong_types_and_ranges_in_a_policy(bad):
    with pytest.raises(ConfigError, match=next(iter(bad)).split("_")[0]):
        Policy.from_dict(bad)


def test_bias_rules_must_name_routes():
    routes = [RouteSpec("A", ("a",)), RouteSpec("B", ("b",))]
    for rule in (BiasRule("A", "B", "NOPE"), BiasRule("A", "C", "A")):
        with pytest.raises(ConfigError, match="unknown routes"):
            Router(routes, encoder=StubEncoder(ENC), policy=manual(bias_rules=(rule,)))
    Router(routes, encoder=StubEncoder(ENC), policy=manual(bias_rules=(BiasRule("A", "B", "CLARIFY"),)))


@pytest.mark.parametrize(
    "tool,match",
    [
        (
            {"name": "t", "description": "d", "core": "false"},
            r"tools\[0\]\.core: expected `bool`, got `str` \(found \'false\'\)",
        ),
        (
            {"name": "t", "description": "d", "success_examples": ["x", 3]},
            r"tools\[0\]\.success_examples\[1\]: expected `str`, got `int` \(found 3\)",
        ),
    ],
)
def test_wrong_types_in_a_tool(tool, match):
    with pytest.raises(ConfigError, match=match):
        parse_tools({"tools": [tool]})


def test_utterances_must_be_strings():
    with pytest.raises(
        ConfigError, match=r"routes\[0\]\.utterances\[0\]: expected `str`, got `int` \(found 1\)"
    ):
        parse_routes({"routes": [{"name": "A", "utterances": [1, None]}]})


def test_huge_or_negative_top_k_is_a_typed_error():
    r = Router(tools=[ToolSpec("T", "t")], encoder=StubEncoder(ENC), policy=manual())
    for k in (-1, 0, 2**64, 1.5):
        with pytest.raises(InvalidArgumentError, match="top_k"):
            r.tools("t", top_k=k)


def test_yaml_alias_bomb_is_refused(tmp_path):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    p = tmp_path / "bomb.yaml"
    p.write_text("\n".join(lines) + "\nroutes: *a9\n")
    with pytest.raises(ConfigError, match="expands to more than"):  # 10^10 nodes once expanded
        Router.from_config(p, encoder=StubEncoder(ENC))


@pytest.mark.parametrize(
    "text,match",
    [
        ("routes:\n" + "  " * 0 + "x: " + "[" * 200 + "]" * 200 + "\n", "nests"),
        ("routes: [unclosed\n", "malformed YAML"),
    ],
)
def test_deep_or_malformed_yaml(tmp_path, text, match):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=match):
        Router.from_config(p, encoder=StubEncoder(ENC))


def test_invalid_utf8_and_deep_json(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_bytes(b"routes:\n  - name: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        Router.from_config(bad, encoder=StubEncoder(ENC))
    deep = tmp_path / "c.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ConfigError, match="nests too deep"):
        Router.from_config(deep, encoder=StubEncoder(ENC))


def test_anchors_and_aliases_of_a_normal_config_still_load(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text(
        "routes:\n  - {name: A, utterances: &ex [hello, hi]}\n"
        "  - {name: B, utterances: *ex, description: b}\n"
    )
    r = Router.from_config(p, encoder=StubEncoder({**ENC, "hello": unit(3), "hi": unit(4)}), policy=manual())
    assert [s.name for s in r.route_specs] == ["A", "B"]


@pytest.mark.parametrize(
    "text,match",
    [
        ("routes: 5\n", r"routes: expected `array`, got `int` \(found 5\)"),
        ("tools: {a: 1}\n", r"tools: expected `array`, got `object`"),
        ("routes: [{name: A, utterances: [a]}]\npolicy: [1, 2]\n", r"policy: expected `object`, got `array`"),
        (
            "routes: [{name: A, utterances: [a], metadata: [1, 2]}]\n",
            r"routes\[0\]\.metadata: expected `object`, got `array`",
        ),
        (
            "tools: [{name: T, description: t, input_schema: 3}]\n",
            r"tools\[0\]\.input_schema: expected `object`, got `int`",
        ),
    ],
)
def test_wrong_containers(tmp_path, text, match):
    p = tmp_path / "c.yaml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=match):
        Router.from_config(p, encoder=StubEncoder(ENC))


def test_negative_or_huge_integers_never_reach_the_native_layer():
    from routecore import VectorIndex

    for bad in (-1, 0, 2**40, 2.0):
        with pytest.raises(InvalidArgumentError, match="dim"):
            VectorIndex(bad)
    ix = VectorIndex(4)
    for k in (-1, 2**64):
        with pytest.raises(InvalidArgumentError, match="k must"):
            ix.search([1, 0, 0, 0], k)


BASE = (
    "routes:\n  - name: A\n    utterances: [a]\n  - name: B\n    utterances: [b]\n"
    "tools:\n  - name: t\n    description: t\n"
)


@pytest.mark.parametrize(
    "extra,match",
    [
        (
            "policy:\n  bias_rules: [{a: A, b: Z, winner: A, within: 0.1}]\n",
            r"policy\.bias_rules\[0\] .* unknown routes \['Z'\]",
        ),
        ("policy:\n  per_route: {Z: {high: 0.5}}\n", r"policy\.per_route names unknown routes \['Z'\]"),
        ("policy:\n  fallback_tool: nope\n", r"policy\.fallback_tool 'nope' is not a tool"),
        (
            "entities:\n  patterns: {order_id: '([a-z'}\n",
            r"entities\.patterns\.order_id: .*unclosed character class",
        ),
        ("entities:\n  patterns: {order_id: 'ORD\\d+'}\n", r"route 'A' names entity types \['ghost'\]"),
    ],
)
def test_cross_reference_errors_name_the_file(tmp_path, extra, match):
    """Issue 36 §8: errors found once the whole config is read still say which file they are in."""
    text = BASE
    if "ORD" in extra:
        text = BASE.replace("utterances: [a]\n", "utterances: [a]\n    prefers_entities: [ghost]\n")
    p = tmp_path / "routes.yaml"
    p.write_text(text + extra, encoding="utf-8")
    with pytest.raises(ConfigError, match=f"^{p}: .*{match}"):
        Router.from_config(p, encoder=StubEncoder(ENC))


def test_an_overlay_naming_unknown_tools_names_its_file(tmp_path):
    p, overlay = tmp_path / "tools.yaml", tmp_path / "overlay.yaml"
    p.write_text(BASE, encoding="utf-8")
    overlay.write_text("ghost_tool: {core: true}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"^{p}: overlay {overlay} names tools that are not in the catalog"):
        Router.from_config(p, encoder=StubEncoder(ENC), tool_overlay=overlay)
