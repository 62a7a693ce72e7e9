"""Tools in the formats agents already have (MCP, OpenAI, LangChain) as routecore tool mappings,
an overlay's fields, and a config document's tools rewritten in routecore's format: everything
:mod:`routecore.config.tool_formats` does below the :class:`~routecore.config.specs.ToolSpec` (which
:mod:`routecore.config.specs` builds from these mappings)."""

from __future__ import annotations

import os
from typing import Any, Mapping

from routecore.config.config_files import read_config_file
from routecore.errors import ConfigError

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


def mapping_format(obj: Any) -> str:
    """``"routecore"``, ``"mcp"``, ``"openai"`` or ``"langchain"``; ``"unknown"`` otherwise (a
    :class:`~routecore.config.specs.ToolSpec` too: :func:`routecore.config.tool_formats.tool_format` names
    it)."""
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
    kind = mapping_format(obj)
    if kind == "langchain":
        return _langchain(obj)
    d = _wire(obj)
    if kind == "unknown":
        raise ConfigError(
            f"{where}: a tool must be a ToolSpec, a mapping (routecore, MCP or OpenAI format) "
            f"or a LangChain tool; got {type(obj).__name__}"
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
    elif isinstance(source, (str, os.PathLike)):
        where = str(source)
        data = read_config_file(source)
    else:
        raise ConfigError(f"an overlay is a mapping of tool names or a file, got {type(source).__name__}")
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
        for key in _LISTS:
            value = fields.get(key)
            if value is not None and (
                not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value)
            ):
                raise ConfigError(f"{where}: {name!r}: {key} must be a list of strings, got {value!r}")
        out[str(name)] = dict(fields)
    return out


#: Overlay keys whose value is a list of strings (a string alone would be read letter by letter).
_LISTS = ("success_examples", "anti_patterns", "safety_tags")


def normalize_config_tools(data: Any) -> Any:
    """A config document whose ``tools`` entries in MCP or OpenAI format are rewritten in routecore's."""
    if not isinstance(data, Mapping) or not isinstance(data.get("tools"), list):
        return data
    tools = data["tools"]
    if all(not isinstance(t, Mapping) or mapping_format(t) == "routecore" for t in tools):
        return data
    return {
        **data,
        "tools": [tool_dict(t, f"tools[{i}]") if isinstance(t, Mapping) else t for i, t in enumerate(tools)],
    }
