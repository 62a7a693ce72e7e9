"""What learning returns and keeps (:mod:`routecore.updates.learning` does the learning): a learned
exemplar with its source and time, an answer held for review, what one ``Router.learn`` did, and the
learned exemplars' form in a bundle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from routecore.decision import Decision, Reason
from routecore.errors import ConfigError

SOURCES = ("user", "llm", "agent")
Source = Literal["user", "llm", "agent"]


@dataclass(frozen=True)
class LearnedExemplar:
    """One learned exemplar: its id (unique in this router), route, text, source, when
    (Unix seconds) and the generation that added it."""

    id: int
    route: str
    text: str
    source: str
    time: float
    generation: int


@dataclass(frozen=True)
class Review:
    """An answer held for review: it named ``route`` for ``query``, but the router was
    confident (high tier) of ``decided`` at ``confidence``."""

    query: str
    route: str
    decided: str
    confidence: float
    source: str
    time: float


@dataclass(frozen=True)
class Learned:
    """What :meth:`Router.learn` did: ``status`` is ``learned``, ``duplicate`` (a
    near-duplicate of an exemplar of the route: ``nearest`` >= ``cut``) or ``held`` (for
    review, ``review``). ``evicted``: learned exemplars it removed (the route's cap, or the same
    text learned for another route before)."""

    status: Literal["learned", "duplicate", "held"]
    route: str
    generation: int
    nearest: float
    cut: float
    exemplar: LearnedExemplar | None = None
    review: Review | None = None
    evicted: tuple[LearnedExemplar, ...] = ()
    #: Why: ``status`` as the code and a line with the numbers compared (``learned.reason.message``).
    reason: Reason | None = None


def duplicate(route: str, nearest: float, cut: float, d: Decision) -> Reason:
    """Why ``learn()`` added nothing: an exemplar of ``route`` is as near as the cut (and what the router
    decides now, ``d``, when that is not ``route``)."""
    said = f"an exemplar of {route} scores {nearest:.3f} >= the duplicate cut {cut:.3f}: not added"
    if d.action != "route" or d.route != route:
        now = f"{d.route} at the {d.tier} tier" if d.action == "route" else d.action
        said += f"; the router decides {now}: an exemplar of {route} nearer this wording helps"
    return Reason("duplicate", said)


def held(d: Decision) -> Reason:
    """Why ``learn()`` held an answer: the router is sure (the high tier) of another route."""
    return Reason(
        "held", f"the router routes it to {d.route} at the high tier ({d.confidence:.2f}): held for review"
    )


def learned(route: str, nearest: float, cut: float, generation: int, evicted: int) -> Reason:
    """What ``learn()`` added."""
    said = f"added to {route} (its nearest exemplar {nearest:.3f} < the duplicate cut {cut:.3f})"
    said += f", generation {generation}"
    return Reason("learned", said + (f"; {evicted} learned exemplar(s) evicted" if evicted else ""))


def parse_saved(raw: Any, where: str) -> list[LearnedExemplar]:
    """The learned exemplars of a bundle's ``learned`` list (:class:`ConfigError` naming ``where``)."""
    try:
        return [LearnedExemplar(**x) for x in raw]
    except TypeError as e:
        raise ConfigError(f"{where}: {e}") from None
