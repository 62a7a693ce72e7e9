"""Two readings of one query and which decides (``RouteTable.with_tail``, ``with_typed``): a long
query's start and end, a query with its typos repaired and as typed."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from routecore.decision import Alert, Decision

#: Alerts about the call, not the reading: the second reading's decision carries the first's.
CALL_ALERTS = ("context_domain", "invalid_text")


def second_reading(first: Decision, second: Decision, kind: str, said: str) -> Decision:
    """``second`` (another reading of the query) as the call's decision: the first reading's alerts
    about the call, its time counted in the total, and a ``kind`` alert that says ``said``."""
    carried = tuple(a for a in first.alerts if a.kind in CALL_ALERTS)
    total = first.timings.total + second.timings.total
    return replace(
        second,
        alerts=(*second.alerts, *carried, Alert(kind, said)),
        timings=replace(second.timings, total=total),
    )


def surer_reading(read: Decision, typed: Decision) -> Decision:
    """``typed`` (the query as typed) when it decides more surely than ``read`` (its typos
    repaired), with a ``spelling`` alert that says so; else ``read``."""
    if sureness(typed) <= sureness(read) or (typed.reason is not None and typed.reason.code == "llm_failed"):
        return read  # (the second reading asked no LLM: its "llm failed" is not the user's)
    said = (
        f"read as typed: that decided more surely ({typed.action}, tier {typed.tier}) than with its "
        f"likely typos repaired ({read.action}, tier {read.tier})"
    )
    return second_reading(read, typed, "spelling", said)


def read_as_typed_too(d: Decision, notes: Sequence[tuple[str, str]]) -> bool:
    """Whether a decision read with its typos repaired (``notes``) is also read as typed: not when
    nothing was repaired, nor when it asked the LLM (its answer is kept, not paid for and dropped)."""
    return not d.used_llm and any(kind == "spelling" for kind, _ in notes)


def sureness(d: Decision) -> int:
    """How surely a decision decides: a high-tier route, a medium one, a clarification, the rest."""
    if d.action == "route":
        return 3 if d.tier == "high" else 2
    return 1 if d.action == "clarify" else 0
