"""A real MCP server (the official SDK's ``MCPServer``, formerly FastMCP) on stdio, for tests and benches.

``python mcp_server.py home`` serves a small home-automation plugin with MCP
annotations; ``python mcp_server.py calendar`` a calendar plugin;
``python mcp_server.py many N`` serves N generated tools (the import benchmark).
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations


def home() -> MCPServer:
    s = MCPServer("home")

    @s.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
    def ha_get_state(entity_id: str) -> str:
        """Read the current state of a Home Assistant entity (light, sensor, thermostat)."""
        return "on"

    @s.tool(
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
        )
    )
    def ha_turn_on_light(entity_id: str, brightness: int = 255) -> str:
        """Switch on a light, optionally at a brightness between 0 and 255."""
        return "ok"

    @s.tool(annotations=ToolAnnotations(destructiveHint=True))
    def ha_delete_automation(automation_id: str) -> str:
        """Delete an automation rule permanently."""
        return "deleted"

    @s.tool()
    def ha_get_logs(hours: int = 1) -> str:
        """Fetch the Home Assistant error logs of the last hours."""
        return ""

    return s


def calendar() -> MCPServer:
    s = MCPServer("calendar")

    @s.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def list_events(day: str) -> list[str]:
        """List the calendar events of a day."""
        return []

    @s.tool(title="Create an event")
    def create_event(title: str, start: str, minutes: int = 30) -> str:
        """Create a calendar event at a start time for a number of minutes."""
        return "created"

    return s


def many(n: int) -> MCPServer:
    s = MCPServer("many")
    topics = [
        "invoice",
        "ticket",
        "server",
        "user",
        "order",
        "flight",
        "report",
        "backup",
        "alert",
        "contract",
    ]
    verbs = ["get", "list", "create", "update", "delete"]
    for i in range(n):
        topic, verb = topics[i % len(topics)], verbs[(i // len(topics)) % len(verbs)]

        def fn(item_id: str, note: str = "") -> str:
            return item_id

        s.add_tool(
            fn,
            name=f"{verb}_{topic}_{i}",
            description=f"{verb.capitalize()} a {topic} record (variant {i}) by its id, "
            "with an optional note.",
            annotations=ToolAnnotations(readOnlyHint=verb in ("get", "list")),
        )
    return s


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "home"
    server = many(int(sys.argv[2])) if kind == "many" else {"home": home, "calendar": calendar}[kind]()
    server.run()
