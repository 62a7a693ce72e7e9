"""Tools written in the formats agents already have, as routecore tools.

Accepted, besides :class:`~routecore.config.specs.ToolSpec` and routecore's own mapping
(``name``, ``description``, ``input_schema``, ``success_examples``, ...):

- an MCP ``tools/list`` entry (``name``, ``title``, ``description``,
  ``inputSchema``, ``outputSchema``, ``annotations``, ``_meta``), as a mapping
  or as the MCP SDK's ``mcp.types.Tool``;
- an OpenAI tool (``{"type": "function", "function": {...}}``), a Responses-API
  function tool (``{"type": "function", "name": ...}``) or a bare function
  definition (``{"name", "description", "parameters"}``);
- a LangChain ``BaseTool`` / ``StructuredTool`` (converted by
  ``langchain_core.utils.function_calling.convert_to_openai_tool``).

The name, the description and the parameter schema are kept untouched (the
schema is what :mod:`routecore.tools.catalog` shows the LLM). What the formats do not
carry (examples, anti-patterns, domain, core, cost, latency, safety tags) comes
from an *overlay*: a mapping, or a YAML/JSON file, keyed by tool name
(:func:`read_overlay`). MCP ``annotations`` give safety tags (:func:`mcp_safety_tags`).
Everything else a format carries (MCP title, annotations, output schema, OpenAI
``strict``) is kept in ``ToolSpec.metadata``.
"""

from __future__ import annotations

from typing import Any

# Re-exported (``X as X``): the conversions below the specs (routecore.config.tool_mappings) and the
# specs built from them (routecore.config.specs).
from routecore.config.specs import ToolSpec
from routecore.config.specs import tool_specs as tool_specs
from routecore.config.tool_mappings import OVERLAY_KEYS as OVERLAY_KEYS
from routecore.config.tool_mappings import mapping_format
from routecore.config.tool_mappings import mcp_safety_tags as mcp_safety_tags
from routecore.config.tool_mappings import normalize_config_tools as normalize_config_tools
from routecore.config.tool_mappings import read_overlay as read_overlay
from routecore.config.tool_mappings import tool_dict as tool_dict


def tool_format(obj: Any) -> str:
    """``"spec"``, ``"routecore"``, ``"mcp"``, ``"openai"`` or ``"langchain"``; ``"unknown"`` otherwise."""
    return "spec" if isinstance(obj, ToolSpec) else mapping_format(obj)
