"""Two readings of one query and which decides (``RouteTable.with_tail``, ``with_typed``): a long
query's start and end, a query with its typos repaired and as typed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from routecore.decision import Alert, Decision
from routecore.errors import InvalidArgumentError


def repaired(notes: Sequence[tuple[str, str]]) -> bool:
    """Whether the alerts of :meth:`RouteTable.read_query` say it repaired a typo."""
    return any(kind == "spelling" for kind, _ in notes)


def surer_reading(read: Decision, typed: Decision) -> Decision:
    """``typed`` (the query as typed) when it decides more surely than ``read`` (its typos
    repaired), with a ``spelling`` alert that says so; else ``read``."""
    if sureness(typed) <= sureness(read) or (typed.reason is not None and typed.reason.code == "llm_failed"):
        return read  # (the second reading asked no LLM: its "llm failed" is not the user's)
    said = (
        f"read as typed: that decided more surely ({typed.action}, tier {typed.tier}) than with its "
        f"likely typos repaired ({read.action}, tier {read.tier})"
    )
    return replace(typed, alerts=(*typed.alerts, Alert("spelling", said)))


def no_llm(request: Any) -> Any:
    raise InvalidArgumentError("a second reading of the query asks no LLM")


def sureness(d: Decision) -> int:
    """How surely a decision decides: a high-tier route, a medium one, a clarification, the rest."""
    if d.action == "route":
        return 3 if d.tier == "high" else 2
    return 1 if d.action == "clarify" else 0
