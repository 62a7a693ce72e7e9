"""The learned exemplars a route table holds, and when a query is one of them again.

A query that is a learned exemplar again (its embedding the same: a cosine of at least :data:`COPY`)
is routed to that exemplar's route at once, before the head's background refit has seen it (reason
``learned``), unless the head routes it at the high tier in scope (``learn()`` holds an answer against
such a decision). Near-copies wait for the refit: routing every query at ``learn()``'s duplicate cut to its
learned exemplar's route cut the MASSIVE en replay's worst window to 74.9 % precision among routed
(63.0 % with a teacher wrong 20 % of the time; 94.4 / 94.3 % without: docs/learning.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from routecore.decision import Exemplar

#: The cosine of a query to a learned exemplar from which it is that exemplar again: the same
#: embedding up to rounding (a fixed point of the cosine scale, not a tuned cut).
COPY = 1.0 - 1e-4


@dataclass(frozen=True)
class LearnedRows:
    """The ``(route, text)`` of each learned exemplar of a route table."""

    rows: frozenset[tuple[str, str]]

    def near(self, top: Sequence[Exemplar]) -> Exemplar | None:
        """The nearest of a query's ``top`` exemplars when it is a learned one and the query is it again."""
        if not top or not self.rows:
            return None
        best = max(top, key=lambda e: e.score)
        return best if best.score >= COPY and (best.route, best.text) in self.rows else None
