"""Config files: YAML/JSON loading and every bad-input case."""

from __future__ import annotations

import json

import pytest

from routecore.config.specs import parse_routes, parse_tools, read_config_file
from routecore.errors import ConfigError
from routecore.routers.router import Router
from stubs import StubEncoder, unit


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_yaml_and_json_load(tmp_path):
    y = write(
        tmp_path,
        "r.yaml",
        "routes:\n  - name: A\n    utterances: [x]\n  - name: B\n    description: about b\n",
    )
    j = write(
        tmp_path,
        "r.json",
        json.dumps(
            {
                "routes": [{"name": "A", "utterances": ["x"]}],
                "tools": [{"name": "t", "description": "d"}],
                "policy": {"high": 0.9},
            }
        ),
    )
    enc = StubEncoder({"x": unit(0), "about b": unit(1), "d": unit(2)})
    assert [r.name for r in Router.from_config(y, encoder=enc).route_specs] == ["A", "B"]
    r = Router.from_config(j, encoder=enc)
    assert r.policy.high == 0.9 and r.tool_specs[0].name == "t"


def test_route_thresholds_from_yaml_reach_the_policy(tmp_path):
    y = write(
        tmp_path,
        "r.yaml",
        "routes:\n  - name: A\n    utterances: [x]\n    thresholds: {high: 0.6, medium: 0.3}\n"
        "  - name: B\n    description: about b\npolicy:\n  per_route: {A: {medium: 0.4}}\n",
    )
    r = Router.from_config(y, encoder=StubEncoder({"x": unit(0), "about b": unit(1)}))
    p = r.policy  # calibrated where neither the route nor the policy says
    assert p.thresholds("A", continuing=False) == (0.6, p.margin, 0.4, p.min_score)
    assert p.thresholds("B", continuing=False) == (p.high, p.margin, p.medium, p.min_score)


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "empty"),
        ("routes: []\n", "empty|no routes"),
        (
            "routes:\n  - name: A\n    utterances: [x]\n  - name: A\n    utterances: [y]\n",
            r"routes\[1\]: duplicate route name \'A\' \(first at routes\[0\]\)",
        ),
        (
            "tools:\n  - name: t\n    description: a\n  - name: t\n    description: b\n",
            r"tools\[1\]: duplicate tool name \'t\' \(first at tools\[0\]\)",
        ),
        ("routes:\n  - name: A\n", r"routes\[0\] \(\'A\'\) has neither utterances nor a description"),
        (
            "routes:\n  - name: A\n    utterances: [x]\n    thresholds: {high: 1.4}\n",
            r"routes\[0\]\.thresholds\.high: expected `float` <= 1\.0 \(found 1\.4\)",
        ),
        (
            "routes:\n  - name: A\n    utterances: [x]\n    thresholds: {hgih: 0.4}\n",
            r"routes\[0\]\.thresholds: object contains unknown field `hgih`",
        ),
        (
            "routes:\n  - name: A\n    utterances: [x]\n    thresholds: 0.4\n",
            r"routes\[0\]\.thresholds: expected `object`, got `float`",
        ),
        (
            "routes:\n  - name: A\n    utterances: [x]\npolicy: {per_route: {A: {high: 7}}}\n",
            r"policy\.per_route\['A'\]\.high: expected `float` <= 1\.0 \(found 7\)",
        ),
        ("routes:\n  - name: A\n    utterances: [x\n", "malformed YAML"),
        (
            "routes:\n  - name: A\n    utterances: [x]\npolicy: {margin: 3}\n",
            r"policy\.margin: expected `float` <= 1\.0",
        ),
        (
            "routes:\n  - name: A\n    utterances: [x]\n    fallback_on_error: Z\n",
            r"routes\[0\]\.fallback_on_error: 'Z' is not a route",
        ),
        ("routes:\n  - utterances: [x]\n", r"routes\[0\]: object missing required field `name`"),
        ("rutes: []\n", r"c\.yaml: object contains unknown field `rutes`"),
        (
            "tools:\n  - name: t\n    description: d\n    cost_estimate: cheap\n",
            r"tools\[0\]\.cost_estimate: expected `float \| null`, got `str` \(found 'cheap'\)",
        ),
        (
            "tools:\n  - name: t\n    description: d\n    avg_latency: -1\n",
            r"tools\[0\]\.avg_latency: expected `float` >= 0\.0 \(found -1\)",
        ),
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


def routes_yaml(*names: str) -> str:
    """A routes config with one route per name (YAML escapes keep invisible characters visible)."""
    rows = (f"  - name: {json.dumps(n)}\n    utterances: [text {i}]\n" for i, n in enumerate(names))
    return "routes:\n" + "".join(rows)


@pytest.mark.parametrize(
    "names,match",
    [
        (
            ["caf\u00e9", "cafe\u0301"],
            r"routes\[1\]: route name 'cafe\\u0301' looks like 'caf\\xe9' \(routes\[0\]\)",
        ),
        (["BILLING", "\uff22\uff29\uff2c\uff2c\uff29\uff2e\uff27"], r"routes\[1\]: .* looks like 'BILLING'"),
        (["BILLING", "billing"], r"routes\[1\]: .* looks like 'BILLING'"),
        (
            ["BILLING", "BILL\u200bING"],
            r"routes\[1\]: .*invisible or control characters \(U\+200B ZERO WIDTH SPACE\)",
        ),
        (["BILLING", "\u202eGNILLIB"], r"routes\[1\]: .*U\+202E RIGHT-TO-LEFT OVERRIDE"),
        (["BILLING", "BILL\nING"], r"routes\[1\]: .*U\+000A"),
        (["BILLING", "   "], r"routes\[1\]: route name '   ' is blank"),
        (["BILLING", "BILLING "], r"routes\[1\]: route name 'BILLING ' starts or ends with a space"),
        (["BILLING", "CLARIFY"], r"routes\[1\]: 'CLARIFY' is reserved"),
        (["Clarify"], r"routes\[0\]: 'Clarify' is reserved"),
    ],
)
def test_look_alike_route_names_are_refused_at_load(tmp_path, names, match):
    """Issue 36 §7: names that print alike, hide characters, or read as the clarify decision."""
    p = write(tmp_path, "c.yaml", routes_yaml(*names))
    with pytest.raises(ConfigError, match=r"c\.yaml: " + match):
        Router.from_config(p, encoder=StubEncoder({}))


def test_look_alike_names_are_refused_in_code_and_for_tools(tmp_path):
    from routecore import RouteSpec

    with pytest.raises(ConfigError, match="U\\+200D ZERO WIDTH JOINER"):
        RouteSpec("A\u200dB", ("x",))
    with pytest.raises(ConfigError, match="'CLARIFY' is reserved"):
        RouteSpec("CLARIFY", ("x",))
    text = "tools:\n  - name: get_logs\n    description: a\n  - name: GET_LOGS\n    description: b\n"
    p = write(tmp_path, "t.yaml", text)
    with pytest.raises(ConfigError, match=r"t\.yaml: tools\[1\]: tool name 'GET_LOGS' looks like 'get_logs'"):
        Router.from_config(p, encoder=StubEncoder({}))
    ok = parse_routes({"routes": [{"name": "Café Ω-2", "utterances": ["x"]}]})
    assert [r.name for r in ok] == ["Café Ω-2"]
    from routecore import ToolSpec

    enc = StubEncoder({})
    with pytest.raises(ConfigError, match=r"^Router: routes\[1\]: route name 'general' looks like 'GENERAL'"):
        Router([RouteSpec("GENERAL", ("x",)), RouteSpec("general", ("y",))], encoder=enc)  # in code too
    with pytest.raises(ConfigError, match=r"^Router: routes\[1\]: duplicate route name 'A'"):
        Router([RouteSpec("A", ("x",)), RouteSpec("A", ("y",))], encoder=enc)
    with pytest.raises(ConfigError, match=r"^Router: tools\[1\]: tool name 'GET_LOGS' looks like 'get_logs'"):
        Router(tools=[ToolSpec("get_logs", "a"), ToolSpec("GET_LOGS", "b")], encoder=enc)


@pytest.mark.parametrize(
    "name,text,match",
    [
        (
            "c.yaml",
            "routes:\n  - name: A\n    utterances: [x]\n    utterances: [y]\n",
            r"c\.yaml: line 4: duplicate key 'utterances' \(first at line 3\)",
        ),
        (
            "c.yaml",
            "routes: []\npolicy: {high: 0.9}\nroutes:\n  - name: A\n    utterances: [x]\n",
            r"c\.yaml: line 3: duplicate key 'routes' \(first at line 1\)",
        ),
        (
            "c.json",
            '{"routes": [{"name": "A", "utterances": ["x"], "name": "B"}]}',
            r"c\.json: duplicate key 'name' in a JSON object",
        ),
    ],
)
def test_duplicate_keys_are_refused_naming_file_and_key(tmp_path, name, text, match):
    """Issue 36 §7: YAML and JSON loaders keep the last of two equal keys without a word."""
    p = write(tmp_path, name, text)
    with pytest.raises(ConfigError, match=match):
        read_config_file(p)
    # a YAML merge key may still be overridden by the mapping's own keys
    merged = "base: &b {name: A, description: d}\nroutes:\n  - <<: *b\n    name: B\n"
    got = read_config_file(write(tmp_path, "m.yaml", merged))
    assert got["routes"] == [{"name": "B", "description": "d"}]


def test_devices_fifos_folders_and_huge_files_are_refused_as_configs(tmp_path):
    """Issue 36 §8: from_config('/dev/zero') read until memory ran out, a FIFO blocked forever: a
    device, a FIFO or a folder is refused before any read."""
    import os
    import threading

    from routecore.config.specs import read_text

    fifo = tmp_path / "routes.yaml"
    os.mkfifo(fifo)
    for p in ("/dev/null", fifo, tmp_path):  # /dev/zero likewise, but an old reader would fill memory
        out: dict = {}
        t = threading.Thread(
            target=lambda: out.setdefault("e", pytest.raises(ConfigError, read_config_file, p)), daemon=True
        )
        t.start()
        t.join(60)
        assert not t.is_alive(), f"reading {p} blocked"
        assert f"{p} is not a regular file" in str(out["e"].value)
    big = write(tmp_path, "big.yaml", "routes: []\n" + "#" * 100)
    with pytest.raises(ConfigError, match=r"big\.yaml is over 0 MiB, the limit"):
        read_text(big, limit=64)
    assert read_text(big, limit=111).startswith("routes")
