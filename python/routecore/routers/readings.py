"""Two readings of one query and which decides (``RouteTable.with_tail``, ``with_typed``,
``BatchRoutes.in_context_batch``): a long query's start and end, a query with its typos repaired and
as typed, a query alone and after the previous turn's text."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from routecore.decide import reasons
from routecore.decide.conversation import LONG_QUERY_CHARS
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


def follow_up(alone: Decision, joined: Decision) -> Decision | None:
    """``joined`` (the query read after the previous turn's text) as the call's decision, when ``alone``
    (the query read alone) is not routed and ``joined`` routes to ``alone``'s own best route: the
    previous turn lends the confidence, the query itself names the route. Else None (a query that
    names another route is a change of topic, not a follow-up; docs/routers.md, "Conversations"). It is
    routed at the medium tier at most: its confidence comes from the previous turn."""
    if alone.action == "route" or joined.action != "route" or not alone.probabilities:
        return None
    probs = alone.probabilities
    best = max(probs, key=lambda r: probs[r])
    if joined.route != best or joined.reason is None or alone.reason is None:
        return None
    said = f"read after the previous turn: alone, {alone.action} ({alone.reason.code})"
    d = second_reading(alone, joined, "follow_up", said)
    # At most the medium tier: the previous turn lent the confidence.
    return replace(d, tier="medium", reason=reasons.follow_up(joined.reason, alone.reason))


def plus_time(d: Decision, *before: Decision) -> Decision:
    """``d`` with the time of the readings ``before`` it counted in its total."""
    total = d.timings.total + sum(b.timings.total for b in before)
    return replace(d, timings=replace(d.timings, total=total))


def asks_llm(d: Decision) -> bool:
    """Whether ``d``, decided without the LLM (``no_llm``), is one the LLM would have been asked about."""
    return d.reason is not None and d.reason.code in ("llm_failed", "error")


def joined_text(previous_query: str, query: str) -> str | None:
    """``query`` after the previous turn's text, on two lines, within :data:`LONG_QUERY_CHARS` (the
    previous text's end kept: a long one would be read as a long query); None for a long query."""
    room = LONG_QUERY_CHARS - len(query) - 1
    return f"{previous_query[-room:]}\n{query}" if room > 0 and previous_query else None
