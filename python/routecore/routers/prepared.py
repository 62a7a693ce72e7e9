"""What a route table knows of a query before its native step (:class:`Prepared`, with what the
step adds to each route's cosine: :class:`PreScore`), and :func:`with_notes`, the alerts of what
was done to the query's text before it was read."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

import numpy as np

from routecore.decide.policy import Policy
from routecore.decision import Alert, Decision, Entity


class PreScore(NamedTuple):
    """What the scoring step adds to each route's cosine, and why (spec order but ``bias``)."""

    bias: (
        np.ndarray | None
    )  # lexical + entities (None: nothing); spec or label-code order (ScoreTable.coded takes both)
    lexical: np.ndarray | None  # the lexical score alone
    entities: tuple[Entity, ...]  # the query's entities
    preferred: np.ndarray | None  # routes that prefer a type the query holds


class Prepared(NamedTuple):
    """What a decision needs before its native step: the policy for the query (and its
    language when it has its own), what the step adds to the cosines, the routes kept
    exact, when this began, and the language the table's detector found (None when it
    did not run)."""

    policy: Policy
    language: str | None
    pre: PreScore
    exact: list[str]
    t1: float
    detected: str | None = None


def with_notes(d: Decision, notes: tuple[tuple[str, str], ...]) -> Decision:
    """``d`` with the alerts of what :func:`routecore.decide.conversation.routing_text` did to its
    query (routed by its start, lone surrogates removed)."""
    return d if not notes else replace(d, alerts=d.alerts + tuple(Alert(k, m) for k, m in notes))
