"""Tools listed live from real MCP servers started as subprocesses (routecore.integrations.mcp_tools)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import mcp  # noqa: F401 (the test extra installs it: missing, these fail, never skip)
import pytest

from routecore import Router
from routecore.errors import ConfigError
from routecore.integrations.mcp_tools import MCPImportError, alist_mcp_tools, list_mcp_tools, mcp_tool_specs

SERVER = str(Path(__file__).parents[1] / "data" / "mcp_server.py")
HOME = [sys.executable, SERVER, "home"]
CALENDAR = {"name": "cal", "command": [sys.executable, SERVER, "calendar"]}


@pytest.fixture(scope="module")
def listed():
    return list_mcp_tools([HOME, CALENDAR])


def test_two_servers_are_two_plugins(listed):
    home, cal = listed
    assert home.name == "home"  # the name the server reports
    assert cal.name == "cal"  # the name given wins
    assert [t["name"] for t in home.tools] == [
        "ha_get_state",
        "ha_turn_on_light",
        "ha_delete_automation",
        "ha_get_logs",
    ]
    specs = mcp_tool_specs(listed)
    assert {t.name: t.domain for t in specs} == {
        "ha_get_state": "home",
        "ha_turn_on_light": "home",
        "ha_delete_automation": "home",
        "ha_get_logs": "home",
        "list_events": "cal",
        "create_event": "cal",
    }
    by = {t.name: t for t in specs}
    assert by["ha_get_state"].safety_tags == ("read_only",)
    assert by["ha_turn_on_light"].safety_tags == ("idempotent",)
    assert by["ha_delete_automation"].safety_tags == ("destructive", "open_world")
    assert by["ha_get_logs"].safety_tags == ()  # no annotations: nothing claimed
    assert by["ha_turn_on_light"].input_schema["properties"]["brightness"]["default"] == 255
    assert by["create_event"].metadata["mcp"]["title"] == "Create an event"


def test_router_from_mcp_routes_queries_to_server_tools(encoder):
    r = Router.from_mcp(
        [HOME, CALENDAR],
        encoder=encoder,
        tool_overlay={"ha_get_logs": {"success_examples": ["why did home assistant crash"]}},
    )
    assert r.tools("switch on the kitchen light", top_k=1).names[0] == "ha_turn_on_light"
    belt = r.tools("what meetings do I have on Monday", top_k=1)
    assert belt.names[0] == "list_events" and belt.tools[0].domain == "cal"
    assert r.tool_specs[3].success_examples == ("why did home assistant crash",)


def test_afrom_mcp_inside_an_event_loop(encoder):
    async def main():
        with pytest.raises(ConfigError, match="running event loop"):
            list_mcp_tools([HOME])
        return await Router.afrom_mcp([HOME], encoder=encoder)

    r = asyncio.run(main())
    assert len(r.tool_specs) == 4


def test_overlay_for_a_tool_no_server_lists(listed):
    with pytest.raises(ConfigError, match="no MCP server lists.*ha_reboot"):
        mcp_tool_specs(listed, overlay={"ha_reboot": {"core": True}})


def test_server_errors_are_typed():
    with pytest.raises(MCPImportError, match="no-such-mcp-server"):
        list_mcp_tools(["no-such-mcp-server --flag"], timeout=20)
    with pytest.raises(
        MCPImportError, match="did not list its tools within"
    ):  # a process that never speaks MCP
        list_mcp_tools([[sys.executable, "-c", "import time; time.sleep(60)"]], timeout=1.5)
    with pytest.raises(ConfigError, match="two MCP servers are named 'home'"):
        list_mcp_tools([HOME, HOME])
    with pytest.raises(ConfigError, match="needs 'command' or 'url'"):
        asyncio.run(alist_mcp_tools([{"name": "x"}]))
    with pytest.raises(ConfigError, match="no MCP servers"):
        list_mcp_tools([])


def test_cli_tools_from_an_mcp_server(capsys):
    from routecore.cli import main

    cmd = " ".join([sys.executable, SERVER, "home"])
    assert main(["tools", "turn on the living room lamp", "--mcp-stdio", cmd, "--top-k", "1", "--json"]) == 0
    belt = json.loads(capsys.readouterr().out)
    assert belt["tools"][0]["name"] == "ha_turn_on_light" and belt["tools"][0]["domain"] == "home"
