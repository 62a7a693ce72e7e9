"""Tools written in the formats agents already have, as routecore tools.

Accepted, besides :class:`~routecore.specs.ToolSpec` and routecore's own mapping
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
schema is what :mod:`routecore.catalog` shows the LLM). What the formats do not
carry (examples, anti-patterns, domain, core, cost, latency, safety tags) comes
from an *overlay*: a mapping, or a YAML/JSON file, keyed by tool name
(:func:`read_overlay`). MCP ``annotations`` give safety tags (:func:`mcp_safety_tags`).
Everything else a format carries (MCP title, annotations, output schema, OpenAI
``strict``) is kept in ``ToolSpec.metadata``.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

from routecore.errors import ConfigError
from routecore.specs import ToolSpec, parse_config, read_config_file

#: The keys an overlay entry may set: routecore's tool fields that the formats lack.
OVERLAY_KEYS = (
    "success_examples",
    "anti_patterns",
    "domain",
    "plugin",
    "core",
    "cost_estimate",
    "avg_latency",
    "safety_tags",
    "description",
)

#: MCP tool keys kept in ``ToolSpec.metadata`` (under ``"mcp"``).
_MCP_KEPT = ("title", "annotations", "outputSchema", "_meta", "icons", "execution")


def mcp_safety_tags(annotations: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Safety tags from MCP tool ``annotations``, with the MCP specification's defaults.

    ``read_only`` when ``readOnlyHint`` is true; otherwise ``destructive`` unless
    ``destructiveHint`` is false (the specification's default is true);
    ``idempotent`` for ``idempotentHint``; ``open_world`` unless ``openWorldHint``
    is false (default true). A tool without annotations gets no tags: nothing is
    known about it, and a guess would read as a statement.
    """
    if not annotations:
        return ()
    a = dict(annotations)
    tags = []
    if a.get("readOnlyHint") is True:
        tags.append("read_only")
    elif a.get("destructiveHint", True) is not False:
        tags.append("destructive")
    if a.get("idempotentHint") is True:
        tags.append("idempotent")
    if a.get("openWorldHint", True) is not False:
        tags.append("open_world")
    return tuple(tags)


def _wire(obj: Any) -> Any:
    """A pydantic object (the MCP SDK's ``Tool``) as its wire mapping; anything else unchanged."""
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not _is_langchain(obj):
        return dump(by_alias=True, exclude_none=True, mode="json")
    return obj


def _is_langchain(obj: Any) -> bool:
    return any(
        c.__module__.startswith("langchain_core.tools") and c.__name__ == "BaseTool"
        for c in type(obj).__mro__
    )


def tool_format(obj: Any) -> str:
    """``"spec"``, ``"routecore"``, ``"mcp"``, ``"openai"`` or ``"langchain"``; ``"unknown"`` otherwise."""
    if isinstance(obj, ToolSpec):
        return "spec"
    if _is_langchain(obj):
        return "langchain"
    obj = _wire(obj)
    if not isinstance(obj, Mapping):
        return "unknown"
    if obj.get("type") == "function" or "parameters" in obj:
        return "openai"
    if "inputSchema" in obj or "annotations" in obj or "outputSchema" in obj:
        return "mcp"
    return "routecore"


def _schema(value: Any, where: str, key: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: {key} must be a JSON Schema object, got {type(value).__name__}")
    return dict(value)


def _openai(d: Mapping[str, Any], where: str) -> dict[str, Any]:
    fn = d.get("function", d) if d.get("type") == "function" and "function" in d else d
    if not isinstance(fn, Mapping):
        raise ConfigError(f"{where}: 'function' must be a mapping, got {type(fn).__name__}")
    extra = {k: v for k, v in fn.items() if k not in ("name", "description", "parameters", "type")}
    out: dict[str, Any] = {
        "name": fn.get("name"),
        "description": fn.get("description") or "",
        "input_schema": _schema(fn.get("parameters"), where, "parameters"),
    }
    if extra:
        out["metadata"] = {"openai": extra}
    return out


def _mcp(d: Mapping[str, Any], where: str) -> dict[str, Any]:
    unknown = set(d) - {"name", "description", "inputSchema", *_MCP_KEPT}
    if unknown:
        raise ConfigError(f"{where}: unknown keys in an MCP tool: {sorted(unknown)}")
    ann = d.get("annotations")
    if ann is not None and not isinstance(ann, Mapping):
        raise ConfigError(f"{where}: annotations must be a mapping, got {type(ann).__name__}")
    # An undocumented tool falls back on its human-readable title.
    out: dict[str, Any] = {
        "name": d.get("name"),
        "description": d.get("description") or d.get("title") or "",
        "input_schema": _schema(d.get("inputSchema"), where, "inputSchema"),
        "safety_tags": list(mcp_safety_tags(ann)),
    }
    kept = {k: d[k] for k in _MCP_KEPT if d.get(k) is not None}
    if kept:
        out["metadata"] = {"mcp": kept}
    return out


def _langchain(tool: Any) -> dict[str, Any]:
    from langchain_core.utils.function_calling import (
        convert_to_openai_tool,  # the object exists: so does the library
    )

    d = _openai(convert_to_openai_tool(tool), f"LangChain tool {getattr(tool, 'name', '?')!r}")
    d["description"] = d["description"] or (tool.description or "")
    return d


def tool_dict(obj: Any, where: str = "tool") -> dict[str, Any]:
    """``obj`` (any accepted format but a ToolSpec) as a routecore tool mapping, not yet validated."""
    kind = tool_format(obj)
    if kind == "langchain":
        return _langchain(obj)
    d = _wire(obj)
    if kind == "unknown":
        raise ConfigError(
            f"{where}: a tool must be a ToolSpec, a mapping (routecore, MCP or OpenAI format) or a LangChain tool; got {type(obj).__name__}"
        )
    if kind == "openai":
        return _openai(d, where)
    if kind == "mcp":
        return _mcp(d, where)
    return dict(d)


def read_overlay(source: str | os.PathLike[str] | Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """An overlay: tool name -> routecore fields (:data:`OVERLAY_KEYS`), from a mapping or a YAML/JSON file.

    A file may hold the mapping itself or put it under ``tools:``."""
    where = "overlay"
    if isinstance(source, Mapping):
        data: Any = source
    else:
        where = str(source)
        data = read_config_file(source)
    if isinstance(data, Mapping) and set(data) == {"tools"} and isinstance(data["tools"], Mapping):
        data = data["tools"]
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: an overlay maps tool names to fields, got {type(data).__name__}")
    out: dict[str, dict[str, Any]] = {}
    for name, fields in data.items():
        if not isinstance(fields, Mapping):
            raise ConfigError(f"{where}: {name!r}: expected a mapping of fields, got {type(fields).__name__}")
        bad = set(fields) - set(OVERLAY_KEYS)
        if bad:
            raise ConfigError(
                f"{where}: {name!r}: unknown overlay keys {sorted(bad)}; allowed: {', '.join(OVERLAY_KEYS)}"
            )
        out[str(name)] = dict(fields)
    return out


def tool_specs(
    tools: Iterable[Any],
    *,
    overlay: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    domain: str | None = None,
    missing_ok: bool = False,
    where: str = "tools",
) -> list[ToolSpec]:
    """ToolSpecs from tools in any accepted format, with ``overlay`` applied.

    Args:
        tools: ToolSpecs, mappings (routecore, MCP, OpenAI) or LangChain tools, mixed freely.
        overlay: routecore fields by tool name (:func:`read_overlay`); its safety tags
            are added to those of MCP annotations, its other values win.
        domain: the domain (plugin) of tools that have none (an MCP server's name).
        missing_ok: accept overlay entries that name no tool (a server dropped the
            tool); by default they raise :class:`ConfigError`, since a typo would
            otherwise go unnoticed.

    Raises:
        ConfigError: an unreadable tool or overlay, duplicate names, or an invalid
            field (the error names the tool's position).
    """
    over = read_overlay(overlay) if overlay is not None else {}
    docs: list[dict[str, Any]] = []
    for i, t in enumerate(tools):
        d = _from_spec(t) if isinstance(t, ToolSpec) else tool_dict(t, f"{where}[{i}]")
        if not isinstance(d.get("name"), str) or not d["name"]:
            raise ConfigError(f"{where}[{i}]: a tool needs a name")
        extra = over.get(d["name"], {})
        d.update({k: v for k, v in extra.items() if k != "safety_tags"})
        if extra.get("safety_tags"):
            d["safety_tags"] = list(dict.fromkeys([*d.get("safety_tags", ()), *extra["safety_tags"]]))
        if domain and not (d.get("domain") or d.get("plugin")):
            d["domain"] = domain
        docs.append(d)
    unknown = set(over) - {d["name"] for d in docs}
    if unknown and not missing_ok:
        named = "overlay" if isinstance(overlay, Mapping) else f"overlay {overlay}"
        raise ConfigError(f"{named} names tools that are not in the catalog: {sorted(unknown)[:10]}")
    return parse_config({"tools": docs}, where)[1]


def _from_spec(t: ToolSpec) -> dict[str, Any]:
    from dataclasses import asdict

    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(t).items()}


def normalize_config_tools(data: Any) -> Any:
    """A config document whose ``tools`` entries in MCP or OpenAI format are rewritten in routecore's."""
    if not isinstance(data, Mapping) or not isinstance(data.get("tools"), list):
        return data
    tools = data["tools"]
    if all(not isinstance(t, Mapping) or tool_format(t) == "routecore" for t in tools):
        return data
    return {
        **data,
        "tools": [tool_dict(t, f"tools[{i}]") if isinstance(t, Mapping) else t for i, t in enumerate(tools)],
    }
