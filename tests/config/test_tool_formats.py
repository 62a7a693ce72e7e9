"""Tools in MCP, OpenAI and LangChain formats, overlays and MCP annotations
(routecore.config.tool_formats)."""

from __future__ import annotations

import json

import pytest

from routecore import Router, ToolSpec
from routecore.config.tool_formats import mcp_safety_tags, read_overlay, tool_format, tool_specs
from routecore.errors import ConfigError

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "days": {"type": "integer", "minimum": 1},
    },
    "required": ["city"],
    "additionalProperties": False,
}
MCP = {
    "name": "get_weather",
    "title": "Weather",
    "description": "Weather forecast for a city.",
    "inputSchema": SCHEMA,
    "annotations": {"readOnlyHint": True, "openWorldHint": True},
}
OPENAI = {
    "type": "function",
    "function": {
        "name": "search_flights",
        "description": "Search flights between two airports on a date.",
        "parameters": SCHEMA,
        "strict": True,
    },
}


def test_each_format_is_recognised():
    assert tool_format(MCP) == "mcp"
    assert tool_format(OPENAI) == "openai"
    assert tool_format({"type": "function", "name": "f", "parameters": {}}) == "openai"  # Responses API
    assert tool_format({"name": "f", "description": "d", "parameters": {}}) == "openai"  # bare function
    assert tool_format({"name": "f", "description": "d", "input_schema": {}}) == "routecore"
    assert tool_format(ToolSpec("f", "d")) == "spec"
    assert tool_format(3) == "unknown"


def test_mcp_entry_keeps_name_description_schema_and_annotations():
    (t,) = tool_specs([MCP])
    assert (t.name, t.description) == ("get_weather", "Weather forecast for a city.")
    assert t.input_schema == SCHEMA  # untouched
    assert t.safety_tags == ("read_only", "open_world")
    assert t.metadata["mcp"]["annotations"] == MCP["annotations"] and t.metadata["mcp"]["title"] == "Weather"
    assert t.schema()["function"]["parameters"] == SCHEMA


def test_mcp_sdk_objects_are_accepted():
    from mcp import types  # the test extra installs it

    obj = types.Tool(
        name="get_weather",
        description="Weather forecast for a city.",
        inputSchema=SCHEMA,
        annotations=types.ToolAnnotations(readOnlyHint=True),
    )
    (t,) = tool_specs([obj])
    assert t.input_schema == SCHEMA and t.safety_tags == ("read_only", "open_world")


@pytest.mark.parametrize(
    ("ann", "tags"),
    [
        (None, ()),
        ({}, ()),
        ({"readOnlyHint": True, "openWorldHint": False}, ("read_only",)),
        ({"readOnlyHint": False}, ("destructive", "open_world")),  # the specification's defaults
        ({"destructiveHint": False, "idempotentHint": True, "openWorldHint": False}, ("idempotent",)),
        ({"title": "x"}, ("destructive", "open_world")),
    ],
)
def test_mcp_annotations_give_safety_tags(ann, tags):
    assert mcp_safety_tags(ann) == tags


def test_openai_formats_keep_the_schema_and_extras():
    a, b, c = tool_specs(
        [
            OPENAI,
            {"type": "function", "name": "book", "description": "Book a hotel room.", "parameters": SCHEMA},
            {"name": "cancel", "description": "Cancel a booking.", "parameters": SCHEMA},
        ]
    )
    assert (
        a.name == "search_flights" and a.input_schema == SCHEMA and a.metadata == {"openai": {"strict": True}}
    )
    assert (b.name, c.name) == ("book", "cancel") and b.input_schema == c.input_schema == SCHEMA


def test_langchain_tools_are_converted_by_langchain_itself():
    from langchain_core import tools  # the test extra installs it

    @tools.tool
    def get_invoice(invoice_id: str, include_lines: bool = False) -> str:
        """Fetch an invoice by its id."""
        return invoice_id

    def refund(order_id: str, amount: float) -> str:
        return order_id

    structured = tools.StructuredTool.from_function(
        refund, name="refund_order", description="Refund part of an order."
    )
    a, b = tool_specs([get_invoice, structured])
    assert a.name == "get_invoice" and a.description.startswith("Fetch an invoice")
    assert set(a.input_schema["properties"]) == {"invoice_id", "include_lines"} and a.input_schema[
        "required"
    ] == ["invoice_id"]
    assert b.name == "refund_order" and set(b.input_schema["properties"]) == {"order_id", "amount"}


def test_overlay_adds_routecore_fields_and_merges_safety_tags(tmp_path):
    path = tmp_path / "overlay.yaml"
    path.write_text(
        "tools:\n  get_weather:\n    success_examples: [will it rain in Lyon tomorrow]\n    domain: weather\n"
        "    safety_tags: [pii_free]\n    cost_estimate: 0.2\n  search_flights:\n    core: true\n",
        encoding="utf-8",
    )
    w, f = tool_specs([MCP, OPENAI], overlay=path)
    assert (
        w.success_examples == ("will it rain in Lyon tomorrow",)
        and w.domain == "weather"
        and w.cost_estimate == 0.2
    )
    assert w.safety_tags == ("read_only", "open_world", "pii_free")
    assert f.core and f.exemplars() == ["Search flights between two airports on a date."]


def test_overlay_errors_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="not in the catalog.*nope"):
        tool_specs([MCP], overlay={"nope": {"core": True}})
    assert tool_specs([MCP], overlay={"nope": {"core": True}}, missing_ok=True)[0].name == "get_weather"
    with pytest.raises(ConfigError, match="unknown overlay keys.*colour"):
        read_overlay({"get_weather": {"colour": "red"}})
    with pytest.raises(ConfigError, match="expected a mapping of fields"):
        read_overlay({"get_weather": ["x"]})
    with pytest.raises(ConfigError, match=r"tools\[0\].*cost_estimate"):
        tool_specs([MCP], overlay={"get_weather": {"cost_estimate": -1}})


@pytest.mark.parametrize(
    ("tool", "match"),
    [
        ({"type": "function", "function": {"description": "no name"}}, "a tool needs a name"),
        ({"name": "x", "inputSchema": [1]}, "inputSchema must be a JSON Schema object"),
        ({"name": "x", "inputSchema": {}, "colour": 1}, "unknown keys in an MCP tool"),
        ({"name": "x", "inputSchema": {}}, "neither a description nor success_examples"),
        ({"type": "function", "function": "x"}, "'function' must be a mapping"),
        (object(), "a tool must be a ToolSpec"),
    ],
)
def test_bad_tools_raise_config_errors(tool, match):
    with pytest.raises(ConfigError, match=match):
        tool_specs([tool])


def test_duplicate_names_across_formats_are_refused():
    with pytest.raises(ConfigError, match="duplicate tool name 'get_weather'"):
        tool_specs([MCP, {"type": "function", "function": {"name": "get_weather", "description": "d"}}])


def test_a_config_file_may_list_mcp_and_openai_tools(tmp_path, encoder):
    path = tmp_path / "tools.json"
    path.write_text(
        json.dumps({"tools": [MCP, OPENAI, {"name": "ping", "description": "Check that a host answers."}]}),
        encoding="utf-8",
    )
    r = Router.from_config(path, encoder=encoder)
    assert [t.name for t in r.tool_specs] == ["get_weather", "search_flights", "ping"]
    assert r.tool_specs[0].input_schema == SCHEMA
    assert r.tools("what's the forecast for Paris this weekend", top_k=1).names[0] == "get_weather"


def test_router_takes_mixed_formats_and_bundles_keep_metadata(tmp_path, encoder):
    r = Router(
        tools=[MCP, OPENAI, ToolSpec("ping", "Check that a host answers.")],
        encoder=encoder,
        tool_overlay={"ping": {"success_examples": ["is the db server up"]}},
    )
    assert r.tools("find me a flight from Paris to Hanoi on Friday", top_k=1).names[0] == "search_flights"
    r.save(tmp_path / "b")
    back = Router.load(tmp_path / "b", encoder=encoder)
    assert back.tool_specs == r.tool_specs
    assert back.tool_specs[0].metadata["mcp"]["annotations"]["readOnlyHint"] is True
    assert ToolSpec.parse(MCP) == r.tool_specs[0]
