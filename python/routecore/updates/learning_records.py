"""What learning returns and keeps (:mod:`routecore.updates.learning` does the learning): a learned
exemplar with its source and time, an answer held for review, what one ``Router.learn`` did, and the
learned exemplars' form in a bundle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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


def parse_saved(raw: Any, where: str) -> list[LearnedExemplar]:
    """The learned exemplars of a bundle's ``learned`` list (:class:`ConfigError` naming ``where``)."""
    try:
        return [LearnedExemplar(**x) for x in raw]
    except TypeError as e:
        raise ConfigError(f"{where}: {e}") from None
