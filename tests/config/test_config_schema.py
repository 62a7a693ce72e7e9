"""The typed config schema (issue 13 §2): one definition for loading, Policy checks
and the published JSON Schema; errors name the file, the path and the expectation."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routecore.config import config_schema
from routecore.config.specs import RouteSpec, ToolSpec, load_yaml, parse_config
from routecore.decide.policy import Policy
from routecore.decide.policy_sections import SECTION_OF, SECTIONS
from routecore.errors import ConfigError, RoutecoreError
from routecore.routers.router import Router
from stubs import StubEncoder, manual, unit

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "schema" / "routecore-config.schema.json"
EXAMPLES = sorted((ROOT / "python" / "routecore" / "examples").glob("*.yaml")) + sorted(
    (ROOT / "examples").glob("*.yaml")
)


def test_the_published_schema_is_current():
    # Regenerate with: routecore schema > schema/routecore-config.schema.json
    assert json.loads(PUBLISHED.read_text()) == config_schema.json_schema()


def test_cli_prints_the_schema():
    out = subprocess.run(
        [sys.executable, "-m", "routecore", "schema", "--json"], capture_output=True, text=True, check=True
    ).stdout
    assert out.count("\n") == 1 and json.loads(out) == config_schema.json_schema()


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_examples_validate_against_the_published_schema(path):
    doc = load_yaml(path.read_text(), path)
    jsonschema.Draft202012Validator(json.loads(PUBLISHED.read_text())).validate(doc)
    parse_config(doc, str(path))


@pytest.mark.parametrize(
    "doc",
    [
        {"routes": [{"name": "A", "utterances": ["a"]}], "policy": {"high": "0.9"}},
        {"routes": [{"name": "A", "utterances": [1]}]},
        {"routes": [{"name": "A", "utterances": ["a"], "extra": 1}]},
        {"tools": [{"name": "T", "description": "t", "core": "false"}]},
        {"routes": [{"name": "A", "utterances": ["a"]}], "policy": {"low_action": "shrug"}},
        {"routes": [{"name": "A", "utterances": ["a"]}], "policy": {"discovery_prefixes": "get_"}},
        {"routes": [{"name": "A", "utterances": ["a"]}], "policy": {"top_exemplars": -1}},
    ],
)
def test_editors_and_the_loader_reject_the_same_documents(doc):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, json.loads(PUBLISHED.read_text()))
    with pytest.raises(ConfigError):
        parse_config(doc)


def test_schema_and_policy_have_the_same_sections_fields_and_defaults():
    assert list(config_schema.SECTIONS) == list(SECTIONS)
    assert [f.name for f in dataclasses.fields(Policy)] == [*SECTIONS, "error_message"]
    assert config_schema.Policy().error_message == Policy().error_message
    for name, kind in SECTIONS.items():
        struct = config_schema.SECTIONS[name]
        schema = {k: getattr(struct(), k) for k in struct.__struct_fields__}
        code = {f.name: getattr(kind(), f.name) for f in dataclasses.fields(kind)}
        assert schema.keys() == code.keys(), name
        for k, v in code.items():
            assert schema[k] == v or (k == "per_route" and schema[k] == {} == dict(v)), k
            assert getattr(Policy(), k) == v  # the flat read
    # the legacy flat keys: every section key once, typed as in its section
    legacy = [k for k in config_schema.Policy.__struct_fields__ if k not in config_schema.SECTIONS]
    assert legacy == ["error_message", *SECTION_OF]


def test_errors_name_the_file_the_path_and_what_was_found(tmp_path):
    p = tmp_path / "routes.yaml"
    p.write_text("routes:\n  - name: A\n    utterances: [a, b]\n  - name: B\n    utterances: [x, 7]\n")
    with pytest.raises(ConfigError) as e:
        Router.from_config(p, encoder=StubEncoder({}))
    assert str(e.value) == f"{p}: routes[1].utterances[1]: expected `str`, got `int` (found 7)"


def test_unknown_enum_values_fail_at_load_and_list_the_choices():
    with pytest.raises(
        ConfigError,
        match=r"policy: low_action: invalid enum value 'shrug' \(expected one of 'llm', 'clarify', 'none'\)$",
    ):
        Policy.from_dict({"low_action": "shrug"})


def test_specs_built_in_code_are_checked_too():
    with pytest.raises(ConfigError, match=r"route 'A': utterances: expected `array`, got `str`"):
        RouteSpec("A", "hello")  # would otherwise be five one-letter exemplars
    with pytest.raises(ConfigError, match=r"tool 'T': core: expected `bool`"):
        ToolSpec("T", "t", core="no")
    with pytest.raises(ConfigError, match=r"policy: high: expected `float \| null`, got `str`"):
        Policy(high="0.9")
    assert RouteSpec("A", ["a", "b"]).utterances == ("a", "b")
    assert manual(discovery_prefixes=["get_"]).discovery_prefixes == ("get_",)


def test_a_mangled_bundle_policy_names_bundle_json(tmp_path):
    enc = StubEncoder({"a": unit(0), "b": unit(1)})
    Router([RouteSpec("A", ("a",)), RouteSpec("B", ("b",))], encoder=enc, policy=manual()).save(
        tmp_path / "b"
    )
    meta = json.loads((tmp_path / "b" / "bundle.json").read_text())
    meta["policy"]["tools"]["tool_top_k"] = "5"
    (tmp_path / "b" / "bundle.json").write_text(json.dumps(meta))
    with pytest.raises(
        ConfigError, match=r"bundle\.json: policy: tools\.tool_top_k: expected `int`, got `str`"
    ):
        Router.load(tmp_path / "b", encoder=enc)


# Any JSON-like document: the loader either accepts it or raises ConfigError, nothing else.
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True), st.text(max_size=8)
)
_json = st.recursive(
    _scalars,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "name",
        "utterances",
        "description",
        "thresholds",
        "fallback_on_error",
        "metadata",
        "domain",
        "core",
        "success_examples",
        "high",
        "bias_rules",
        "per_route",
        "tool_top_k",
        "hybrid",
        "lexical",
        "classifier",
        "head",
        "tools",
        "a",
        "b",
        "winner",
    ]
)
_near = st.recursive(
    _scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(_keys, c, max_size=5), max_leaves=25
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(["routes", "tools", "policy", "x"]),
        st.one_of(_json, _near, st.lists(_near, max_size=3)),
        max_size=3,
    )
)
def test_any_document_loads_or_raises_config_error(doc):
    try:
        parse_config(doc)
        Policy.from_dict(doc.get("policy") if isinstance(doc.get("policy"), dict) else None)
    except ConfigError:
        pass


@settings(max_examples=200, deadline=None)
@given(
    st.text(max_size=200),
    st.one_of(st.none(), st.text(max_size=5)),
    st.lists(st.text(max_size=5), max_size=3),
)
def test_route_and_tools_never_raise_for_any_text(query, previous, domains):
    r = _router()
    try:
        d = r.route(query, previous=previous, context_domains=domains)
        assert d.action in ("route", "clarify", "llm", "none", "error")
    except RoutecoreError:
        assert previous is not None  # an unknown previous route is a typed error, nothing else is
    r.tools(query, context_domains=domains)


_R: list[Router] = []


def _router() -> Router:
    if not _R:
        enc = StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2)})
        _R.append(
            Router(
                [RouteSpec("A", ("a",)), RouteSpec("B", ("b",))],
                [ToolSpec("T", "t")],
                encoder=enc,
                policy=manual(),
            )
        )
    return _R[0]
