"""Knowledge-source routing (issue 19): which collections a retriever should search.

Collections are routes (descriptions and exemplars) of a :class:`~routecore.router.Router`;
a :class:`KnowledgeRouter` returns the best ``top_k`` of them (default 2), each with a
priority (its probability, renormalised over the chosen ones) that a caller passes to
its own retrievers. routecore does not retrieve documents.

- A ``(domain, intent) → collections`` map wins when the caller's domain and intent
  match an entry.
- **Confidence gate:** when the best collection's probability is under the gate, or
  the query is out of scope, the configured fallback (every collection by default) is
  returned instead, and the result says so. The gate is the collection table's
  calibrated ``medium`` cut (the probability from which routed decisions are right on
  ``Policy.route_precision`` of held-out exemplars; 0.5 when a config is too small to
  hold any out) unless a number is given.

Config: a routecore config whose ``routes`` are the collections, with a
``knowledge:`` section (``top_k``, ``gate``, ``fallback``, ``map``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from routecore.errors import ConfigError
from routecore.routing_metrics import emit


@dataclass(frozen=True)
class KnowledgeSelection:
    """The collections to search, best first, with their priorities (summing to 1).

    ``source``: ``router`` (the best collections), ``map`` (a ``(domain, intent)``
    entry) or ``fallback`` (under the gate, or out of scope: ``reason`` says which)."""

    collections: tuple[tuple[str, float], ...]
    source: str
    reason: str = ""
    confidence: float = 0.0
    gate: float = 0.0

    @property
    def names(self) -> list[str]:
        return [c for c, _ in self.collections]


@dataclass(frozen=True)
class KnowledgeConfig:
    """The ``knowledge:`` section: how many collections, the gate (None: calibrated),
    the fallback (``all`` or a list of collections) and the ``(domain, intent)`` map."""

    top_k: int = 2
    gate: float | None = None
    fallback: str | tuple[str, ...] = "all"
    map: tuple[tuple[str | None, str | None, tuple[str, ...]], ...] = ()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, where: str = "knowledge") -> "KnowledgeConfig":
        if d is None:
            return cls()
        from routecore import config_schema

        k = config_schema.convert(d, config_schema.Knowledge, where)
        fallback = k.fallback if isinstance(k.fallback, str) else tuple(k.fallback)
        return cls(k.top_k, k.gate, fallback, tuple((e.domain, e.intent, tuple(e.collections)) for e in k.map))


class KnowledgeRouter:
    """The best collections for a query (see the module docs).

    Raises:
        ConfigError: a map entry, the fallback or ``top_k`` names unknown collections or is out of range.
    """

    def __init__(self, router: Any, config: KnowledgeConfig = KnowledgeConfig(), *, metrics: Any = None):
        names = [r.name for r in router.route_specs]
        if not names:
            raise ConfigError("a knowledge router needs collections (routes)")
        if not 1 <= config.top_k <= len(names):
            raise ConfigError(f"knowledge: top_k must be between 1 and the {len(names)} collections, got {config.top_k}")
        known = set(names)
        listed = [c for _, _, cs in config.map for c in cs] + ([] if config.fallback == "all" else list(config.fallback))
        unknown = sorted(set(listed) - known)
        if unknown:
            raise ConfigError(f"knowledge: unknown collections {unknown}; known: {sorted(known)}")
        if any(d is None and i is None for d, i, _ in config.map):
            raise ConfigError("knowledge: a map entry needs a domain, an intent or both")
        if config.fallback != "all" and not config.fallback:
            raise ConfigError("knowledge: the fallback must be 'all' or name at least one collection")
        self.router, self.config, self.names = router, config, names
        #: Called with every selection (a :class:`routecore.routing_metrics.RoutingMetrics`, or any callable).
        self.metrics = metrics

    @classmethod
    def from_config(cls, path: str | os.PathLike[str], **kw: Any) -> "KnowledgeRouter":
        """Collections from a config's ``routes`` and its ``knowledge:`` section; ``metrics=`` is this
        router's sink, the other ``kw`` go to the Router."""
        from routecore.router import Router
        from routecore.specs import read_config_file

        data = read_config_file(path)
        metrics = kw.pop("metrics", None)
        return cls(Router.from_config(path, **kw), KnowledgeConfig.from_dict(data.get("knowledge"), f"{path}: knowledge"), metrics=metrics)

    @property
    def gate(self) -> float:
        """The confidence gate: the configured number, else the calibrated ``medium`` cut."""
        if self.config.gate is not None:
            return self.config.gate
        return float(self.router.policy.medium)

    def select(self, query: str, *, domain: str | None = None, intent: str | None = None) -> KnowledgeSelection:
        """The collections for ``query``; ``domain`` and ``intent`` (from the caller's context) may match the map."""
        return emit(self.metrics, self._select(query, domain, intent))

    def _select(self, query: str, domain: str | None, intent: str | None) -> KnowledgeSelection:
        for d, i, cs in self.config.map:
            if (d is None or d == domain) and (i is None or i == intent) and (d is not None or i is not None):
                return KnowledgeSelection(tuple((c, 1.0 / len(cs)) for c in cs), "map", f"map entry ({d}, {i})")
        dec = self.router.route(query)
        probs = dict(dec.probabilities)
        best = sorted(self.names, key=lambda n: -probs.get(n, 0.0))[: self.config.top_k]
        conf, gate = float(dec.confidence), self.gate
        if dec.action == "none" or conf < gate:
            why = "out of scope" if dec.action == "none" else f"best collection's probability {conf:.3f} under the gate {gate:.3f}"
            fb = self.names if self.config.fallback == "all" else list(self.config.fallback)
            return KnowledgeSelection(tuple((c, 1.0 / len(fb)) for c in fb), "fallback", why, conf, gate)
        total = sum(probs.get(n, 0.0) for n in best) or 1.0
        return KnowledgeSelection(tuple((n, probs.get(n, 0.0) / total) for n in best), "router", "", conf, gate)

    def select_many(self, queries: Sequence[str]) -> list[KnowledgeSelection]:
        return [self.select(q) for q in queries]
