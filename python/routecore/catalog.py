"""Two-level tool catalog: one-line summaries for every tool, full schemas for
the selected ones, with token estimates for both."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable, Sequence

from routecore.specs import ToolSpec


def estimate_tokens(text: str) -> int:
    """Rough token count (≈ 4 characters per token for English JSON/prose)."""
    return max(1, (len(text) + 3) // 4) if text else 0


@dataclass(frozen=True)
class Catalog:
    summaries: str
    schemas: list[dict]
    summary_tokens: int
    schema_tokens: int


def build_catalog(all_tools: Sequence[ToolSpec], selected: Iterable[str]) -> Catalog:
    summaries = "\n".join(t.summary() for t in all_tools)
    by_name = {t.name: t for t in all_tools}
    schemas = [by_name[n].schema() for n in selected if n in by_name]
    return Catalog(summaries, schemas, estimate_tokens(summaries), estimate_tokens(json.dumps(schemas)))
