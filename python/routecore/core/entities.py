"""Entities in a query: dictionary terms and patterns from the config (issue 19).

A config's ``entities:`` section lists dictionaries (products, services,
repositories: terms matched as whole words, case-insensitively, and
accent-insensitively unless ``fold_accents: false``) and patterns (regexes, such
as ``INC\\d{8}`` for incident IDs). The Rust core matches them
(``routecore_core::entities``: one Aho-Corasick automaton, then the regexes).

Entities feed routing: a route that ``prefers_entities`` a type gains
``Policy.entity_boost`` (one calibrated scale unless set: its probability rises by
a factor *e*) when the query holds one, and the out-of-scope cut does not apply to
it then (the config says such a query is the route's); a route that
``requires_entities`` a type is left out when the query holds none. Every decision
lists its entities. Tools take the same two fields: a preferred tool's score gains
the same boost, and a tool that requires a type the query lacks is not offered;
tool belts list the query's entities too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from routecore.decision import Entity as Entity  # re-exported
from routecore.errors import ConfigError


@dataclass(frozen=True)
class EntityConfig:
    """The ``entities:`` section of a config: ``dictionaries`` (type → terms),
    ``patterns`` (type → regex) and ``fold_accents``."""

    dictionaries: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    patterns: Mapping[str, str] = field(default_factory=dict)
    fold_accents: bool = True

    @property
    def kinds(self) -> set[str]:
        """Every entity type the config defines."""
        return set(self.dictionaries) | set(self.patterns)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dictionaries": {k: list(v) for k, v in self.dictionaries.items()},
            "patterns": dict(self.patterns),
            "fold_accents": self.fold_accents,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, where: str = "entities") -> "EntityConfig | None":
        """The section as parsed from YAML/JSON (None: no section), checked against the schema."""
        if d is None:
            return None
        from routecore import _native
        from routecore.config import config_schema
        from routecore.errors import ConfigError, InvalidArgumentError

        e = config_schema.convert(d, config_schema.Entities, where)
        for k, pattern in e.patterns.items():  # compiled here, so that the error names the file
            try:
                _native.EntitySet([], [(k, pattern)], e.fold_accents)
            except InvalidArgumentError as err:
                msg = " ".join(str(err).split()).removeprefix("invalid argument: ")
                raise ConfigError(f"{where}.patterns.{k}: {msg}") from None
        return cls({k: tuple(v) for k, v in e.dictionaries.items()}, dict(e.patterns), e.fold_accents)


class EntityMatcher:
    """Compiled dictionaries and patterns of an :class:`EntityConfig`.

    Raises:
        InvalidArgumentError: a pattern that does not compile, or an empty term (named).
    """

    def __init__(self, config: EntityConfig):
        from routecore import _native

        self.config = config
        self._set = _native.EntitySet(
            [(k, list(v)) for k, v in config.dictionaries.items()],
            list(config.patterns.items()),
            config.fold_accents,
        )

    def find(self, text: str) -> tuple[Entity, ...]:
        """The entities of ``text``: dictionary terms, then pattern matches."""
        return tuple(Entity(*t) for t in self._set.find(text))

    def find_many(self, texts: Sequence[str]) -> list[tuple[Entity, ...]]:
        return [tuple(Entity(*t) for t in found) for found in self._set.find_many(list(texts))]


def check_route_entities(
    routes: Sequence[Any], config: EntityConfig | None, where: str = "routes", what: str = "route"
) -> None:
    """Every type a route (or a tool: ``what="tool"``) prefers or requires is defined by ``config``.

    Raises:
        ConfigError: naming the route or tool and the unknown types.
    """
    kinds = config.kinds if config is not None else set()
    for r in routes:
        unknown = sorted((set(r.prefers_entities) | set(r.requires_entities)) - kinds)
        if unknown:
            raise ConfigError(
                f"{where}: {what} {r.name!r} names entity types {unknown} "
                "that no `entities:` dictionary or pattern defines"
            )


def entity_bias(routes: Sequence[Any], found: Sequence[Entity], boost: float) -> np.ndarray | None:
    """Per route (spec order), what its cosine gains from the query's entities: ``boost``
    for a preferred type present, -inf for a required type absent; None when nothing
    changes. When every route would be left out, requirements are not applied."""
    return entity_effects(routes, {e.kind for e in found}, boost)[0]


def entity_effects(
    routes: Sequence[Any], kinds: set[str], boost: float
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(:func:`entity_bias`, which routes prefer a type in ``kinds``), each None when empty."""
    inf = float("-inf")
    preferred = [bool(r.prefers_entities) and not kinds.isdisjoint(r.prefers_entities) for r in routes]
    vals = [
        inf if r.requires_entities and kinds.isdisjoint(r.requires_entities) else boost if p else 0.0
        for r, p in zip(routes, preferred)
    ]
    if vals and all(v == inf for v in vals):
        vals = [boost if p else 0.0 for p in preferred]
    return (np.array(vals, np.float32) if any(vals) else None), (
        np.array(preferred) if any(preferred) else None
    )
