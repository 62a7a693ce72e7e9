"""The policy's sections (issue 35 §5): the nested form and the legacy flat one load the same policy,
bundles saved flat still load, and a key given both ways is refused."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routecore.config import config_schema
from routecore.config.specs import RouteSpec, parse_config
from routecore.decide.policy import BiasRule, Policy, RoutePolicy, ToolPolicy
from routecore.decide.policy_sections import SECTION_OF, SECTIONS
from routecore.errors import ConfigError
from routecore.routers.router import Router
from stubs import StubEncoder, manual, unit


def _valid(t: Any) -> st.SearchStrategy[Any]:
    """Values msgspec accepts for the type ``t`` (msgspec.inspect), kept small."""
    if isinstance(t, mi.UnionType):
        return st.one_of([_valid(x) for x in t.types])
    if isinstance(t, mi.NoneType):
        return st.none()
    if isinstance(t, mi.BoolType):
        return st.booleans()
    if isinstance(t, mi.LiteralType):
        return st.sampled_from(t.values)
    if isinstance(t, mi.IntType):
        return st.integers(t.ge if t.ge is not None else 0, min(t.le if t.le is not None else 1000, 1000))
    if isinstance(t, mi.FloatType):
        low = t.ge if t.ge is not None else (t.gt if t.gt is not None else 0.0)
        high = t.le if t.le is not None else 10.0
        return st.floats(low, high, exclude_min=t.gt is not None, allow_nan=False)
    if isinstance(t, mi.StrType):
        return st.text(min_size=t.min_length or 0, max_size=6)
    if isinstance(t, mi.VarTupleType):
        return st.lists(_valid(t.item_type), max_size=3)
    if isinstance(t, mi.DictType):
        return st.dictionaries(st.text(min_size=1, max_size=4), _valid(t.value_type), max_size=2)
    if isinstance(t, mi.StructType):
        return st.fixed_dictionaries(
            {f.encode_name: _valid(f.type) for f in t.fields if f.required},
            optional={f.encode_name: _valid(f.type) for f in t.fields if not f.required},
        )
    raise AssertionError(f"no strategy for {t}")


_FIELDS = {
    f.name: f.type
    for kind in config_schema.SECTIONS.values()
    for f in mi.type_info(kind).fields  # type: ignore[attr-defined]
}
#: Any valid flat (legacy) policy: a random subset of the keys, each with a valid value.
flat_policies = st.fixed_dictionaries(
    {}, optional={**{k: _valid(t) for k, t in _FIELDS.items()}, "error_message": st.text(max_size=8)}
)


def nested(flat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in flat.items() if k not in SECTION_OF}
    for k, v in flat.items():
        if k in SECTION_OF:
            out.setdefault(SECTION_OF[k], {})[k] = v
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flat_policies)
def test_flat_and_nested_forms_load_the_same_policy_and_to_dict_round_trips(flat):
    p = Policy.from_dict(flat)
    assert Policy.from_dict(nested(flat)) == p
    assert Policy.from_dict(json.loads(json.dumps(p.to_dict()))) == p  # a bundle's round trip
    assert Policy.from_dict(p.to_flat_dict()) == p
    assert Policy.from_dict(nested(p.to_flat_dict())) == p
    assert set(p.to_dict()) == {*SECTIONS, "error_message"}
    # Python: flat keywords and sections build the same policy, and every key reads flat.
    kw = {**p.to_flat_dict(), "bias_rules": p.bias_rules}
    assert Policy(**kw) == p
    assert Policy(**{s: getattr(p, s) for s in SECTIONS}, error_message=p.error_message) == p
    for key, section in SECTION_OF.items():
        assert getattr(p, key) == getattr(getattr(p, section), key)
    parse_config({"routes": [{"name": "A", "utterances": ["a"]}], "policy": nested(flat)})


def test_python_construction_flat_nested_and_overrides():
    p = Policy(high=0.9, head="off", tool_top_k=3)
    assert (p.routes.high, p.classifier.head, p.tools.tool_top_k) == (0.9, "off", 3)
    assert p == Policy(
        routes=RoutePolicy(high=0.9), classifier={"head": "off"}, tools=ToolPolicy(tool_top_k=3)
    )
    # A flat keyword updates the section given with it (dataclasses.replace relies on it).
    assert Policy(routes=RoutePolicy(high=0.5, margin=0.1), high=0.7).routes == RoutePolicy(
        high=0.7, margin=0.1
    )
    q = p.with_overrides(min_score=0.2, lexical=False)
    assert (q.min_score, q.hybrid.lexical, q.high, q.head) == (0.2, False, 0.9, "off")
    assert p.with_overrides(routes=RoutePolicy()).high is None
    with pytest.raises(TypeError, match="hgh"):
        Policy(hgh=0.9)
    for bad in ({"hgh": 0.9}, {"routes": {"bogus": 1}}):  # a RoutecoreError too (UnknownOptionError)
        with pytest.raises(ConfigError, match="hgh|bogus"):
            Policy(**bad)
    with pytest.raises(ConfigError, match=r"policy: high: expected `float \| null`, got `str`"):
        Policy(routes={"high": "0.9"})
    with pytest.raises(ConfigError, match="policy: routes: expected a RoutePolicy"):
        Policy(routes=ToolPolicy())


def test_a_key_given_flat_and_in_its_section_is_refused():
    with pytest.raises(ConfigError, match=r"^policy: high: given twice.*routes\.high"):
        Policy.from_dict({"high": 0.9, "routes": {"high": 0.8}})
    doc = {
        "routes": [{"name": "A", "utterances": ["a"]}],
        "policy": {"head": "off", "classifier": {"head": "off"}},
    }
    with pytest.raises(ConfigError, match=r"^routes\.yaml: policy: head: given twice"):
        parse_config(doc, "routes.yaml")
    layer = {
        "routes": [{"name": "A", "utterances": ["a"]}],
        "policy": {"lexical": True, "hybrid": {"lexical": False}},
    }
    with pytest.raises(ConfigError, match=r"layers\.urgency\.policy: lexical: given twice"):
        parse_config({"layers": {"urgency": layer}}, "context.yaml")
    with pytest.raises(
        ConfigError, match=r"^policy: routes\.tool_top_k: tool_top_k belongs in the 'tools' section"
    ):
        Policy.from_dict({"routes": {"tool_top_k": 3}})
    # Different keys flat and nested mix freely (a config half migrated).
    assert Policy.from_dict({"high": 0.9, "routes": {"margin": 0.1}}) == Policy(high=0.9, margin=0.1)


def test_nested_errors_name_the_section_and_the_key():
    with pytest.raises(ConfigError, match=r"^policy: routes\.high: expected `float \| null`, got `str`"):
        Policy.from_dict({"routes": {"high": "0.9"}})
    with pytest.raises(
        ConfigError, match=r"^policy: tools\.tool_floor: invalid enum value 'all' \(expected one of"
    ):
        Policy.from_dict({"tools": {"tool_floor": "all"}})


#: Every key of a policy before the sections (what bundle.json held, flat).
OLD_KEYS = (
    "high margin previous_high previous_margin medium min_score temperature high_support high_precision "
    "route_precision previous_precision aggregation top_n previous_strategy previous_boost bias_rules "
    "three_way_within low_action clarify_mass collision_gap affinity_boost affinity_penalty top_exemplars "
    "exact_top exact_band tool_top_k tool_threshold tool_selection tool_floor fallback_tool "
    "discovery_prefixes anti_pattern_threshold anti_pattern_penalty lesson_similarity lesson_boost "
    "entity_boost more_tools_batch "
    "more_tools_limit report_scores per_route lexical lexical_weight tool_lexical_weight lexical_stemmer "
    "tool_lexical_stemmer head prior learn_from_llm learn_cap learn_duplicate learn_refit_every error_message"
).split()


def test_a_bundle_saved_with_a_flat_policy_still_loads(tmp_path):
    enc = StubEncoder({"a": unit(0), "b": unit(1)})
    policy = manual(bias_rules=(BiasRule("A", "B", "A", 0.01),), per_route={"A": {"high": 0.6}}, tool_top_k=3)
    Router([RouteSpec("A", ("a",)), RouteSpec("B", ("b",))], encoder=enc, policy=policy).save(tmp_path / "b")
    meta = json.loads((tmp_path / "b" / "bundle.json").read_text())
    assert set(meta["policy"]) == {*SECTIONS, "error_message"}  # written nested now
    flat = Policy.from_dict(meta["policy"]).to_flat_dict()
    assert set(flat) == set(OLD_KEYS) | {
        "adapt_cut",
        "spelling",
        "tool_spelling",
    }  # they came after the sections
    meta["policy"] = {k: flat[k] for k in OLD_KEYS}  # as a bundle saved before the sections
    (tmp_path / "b" / "bundle.json").write_text(json.dumps(meta))
    back = Router.load(tmp_path / "b", encoder=enc)
    assert back.spec_policy == policy
    assert back.route("a").route == "A"


def test_the_schema_accepts_both_forms_and_marks_the_flat_one_legacy():
    schema = config_schema.json_schema()
    props = schema["$defs"]["Policy"]["properties"]
    assert list(props)[: len(SECTIONS) + 1] == [*SECTIONS, "error_message"]
    assert props["high"]["deprecated"] is True and "routes.high" in props["high"]["description"]
    base = {"routes": [{"name": "A", "utterances": ["a"]}]}
    jsonschema.validate({**base, "policy": {"routes": {"high": 0.9}, "classifier": {"head": "off"}}}, schema)
    jsonschema.validate({**base, "policy": {"high": 0.9, "head": "off"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**base, "policy": {"routes": {"high": "0.9"}}}, schema)
    assert msgspec.convert({"routes": {"high": 0.9}}, config_schema.Policy).routes.high == 0.9
