"""Tools listed live from running MCP servers (``routecore[mcp]``): :mod:`routecore.config.mcp_tools`,
re-exported here, where it was first (the router reads it from there: it imports no router)."""

from __future__ import annotations

from routecore.config.mcp_tools import (
    MCPImportError,
    MCPServerTools,
    alist_mcp_tools,
    list_mcp_tools,
    mcp_tool_specs,
)

__all__ = ["MCPImportError", "MCPServerTools", "alist_mcp_tools", "list_mcp_tools", "mcp_tool_specs"]
