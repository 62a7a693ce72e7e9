"""Two-level tool catalog: one-line summaries for every tool, full schemas for
the selected ones, with token estimates for both."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from routecore.config.specs import ToolSpec
from routecore.errors import InvalidArgumentError

#: The meta tool of a :class:`routecore.tools.session.ToolSession`.
MORE_TOOLS = "request_more_tools"
MORE_TOOLS_SCHEMA = {
    "type": "function",
    "function": {
        "name": MORE_TOOLS,
        "description": "Ask for more tools when none of the offered ones fits the request. "
        "Returns the next best tools.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What the missing tool should do (default: the user's message).",
                }
            },
        },
    },
}


def estimate_tokens(text: str) -> int:
    """Rough token count (≈ 4 characters per token for English JSON/prose)."""
    return max(1, (len(text) + 3) // 4) if text else 0


@dataclass(frozen=True)
class Catalog:
    summaries: str
    schemas: list[dict[str, Any]]
    summary_tokens: int
    schema_tokens: int


def build_catalog(all_tools: Sequence[ToolSpec], selected: Iterable[str]) -> Catalog:
    """One-line summaries of ``all_tools`` and the full schemas of ``selected``
    (which may include :data:`MORE_TOOLS`), with token estimates for both."""
    summaries = "\n".join(t.summary() for t in all_tools)
    by_name = {t.name: t for t in all_tools}
    selected = list(selected)
    unknown = [n for n in selected if n not in by_name and n != MORE_TOOLS]
    if unknown:
        raise InvalidArgumentError(f"unknown tools {unknown}")
    schemas = [
        MORE_TOOLS_SCHEMA if n == MORE_TOOLS and n not in by_name else by_name[n].schema() for n in selected
    ]
    return Catalog(summaries, schemas, estimate_tokens(summaries), estimate_tokens(json.dumps(schemas)))
