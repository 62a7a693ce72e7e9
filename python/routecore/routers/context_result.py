"""What a :class:`~routecore.routers.context.ContextRouter` returns: a :class:`Context` of one
:class:`LayerResult` per layer, with its reason codes (:data:`CONTEXT_REASONS`) and its dict form."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from routecore.decision import Alert, Decision, Entity, JsonResult, Reason, plain
from routecore.errors import InvalidArgumentError, UnknownLayerError

#: What reading a query removed: (alert kind, message) pairs (``conversation.routing_text``).
Notes = tuple[tuple[str, str], ...]

#: The reason codes of a :class:`Context` (each layer's decision has its own reason).
CONTEXT_REASONS: dict[str, str] = {
    "context": "every layer decided on the query's one embedding (the message names the labels)",
    "empty_query": (
        "nothing to read (empty, blank, or only lone surrogates): each layer's empty_query decision"
    ),
    "error": "the encoder failed: each layer decided as Router.route does then (its LLM, else error)",
}


@dataclass(frozen=True)
class LayerResult:
    """One layer's decision: its label, the best label's probability, the tier, the action
    and the alerts. An open layer's label is None when its decision was ``none`` (out of scope)
    or ``clarify``; an exhaustive layer's then names its best label (module docs). ``decision``:
    the layer's own :class:`~routecore.decision.Decision`, as its router made it."""

    label: str | None
    probability: float
    tier: str
    action: str
    alerts: tuple[Alert, ...] = ()
    decision: Decision | None = field(default=None, repr=False, compare=False)
    #: ``none`` or ``clarify`` when an exhaustive layer named its best label over its decision's; else None.
    declined: str | None = None
    #: Why: the layer's decision's reason (kept by :meth:`Context.to_dict`, unlike ``decision``).
    reason: Reason | None = None


@dataclass(frozen=True)
class ContextTimings:
    """Milliseconds of one context: ``encode`` (the one encoder call for every layer), ``scoring``
    (every layer's native step), ``layers`` (each layer's decision, by name) and ``total``; only
    ``total`` when nothing was encoded (an empty query, a failed encoder)."""

    encode: float = 0.0
    scoring: float = 0.0
    total: float = 0.0
    layers: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ContextTimings":
        """The timings :meth:`Context.to_dict` wrote; a flat mapping (a layer's time beside the
        stages', as earlier versions wrote it) too."""
        stages = {k: float(d[k]) for k in ("encode", "scoring", "total") if k in d}
        layers = d.get("layers")
        if not isinstance(layers, Mapping):
            layers = {k: v for k, v in d.items() if k not in stages}
        return cls(**stages, layers={str(k): float(v) for k, v in layers.items()})


@dataclass(frozen=True)
class Context(JsonResult):
    """Every layer's result for one query, its entities and its :class:`ContextTimings`.
    ``reason``: a code of :data:`CONTEXT_REASONS`; ``alerts``: what reading the query did
    (``invalid_text``, ``long_query``), as on a :class:`~routecore.decision.Decision`."""

    query: str
    layers: Mapping[str, LayerResult]
    entities: tuple[Entity, ...] = ()
    timings: ContextTimings = field(default_factory=ContextTimings)
    reason: Reason | None = None
    alerts: tuple[Alert, ...] = ()

    def label(self, layer: str) -> str | None:
        """The label of ``layer``.

        Raises:
            UnknownLayerError: no such layer (a KeyError too); the message names the layers.
        """
        if layer not in self.layers:
            raise UnknownLayerError(f"no layer {layer!r}; layers: {sorted(self.layers)}")
        return self.layers[layer].label

    def search_text(self) -> str:
        """The text a tool search embeds for this context, as the layered design builds it:
        the intent and domain labels (when decided), the entities' values, then the task
        (the query), e.g. ``intent: debug. domain: operations. entities: INC20481234. task: ...``;
        the query alone when no layer decided and no entity was found. The tool floor is
        calibrated on plain queries, and such texts score a little lower: on MetaTool, 3 points
        more belts came out empty (BENCHMARKS.md, "Tool search from a context")."""
        parts = [
            f"{name}: {self.layers[name].label}."
            for name in ("intent", "domain")
            if name in self.layers and self.layers[name].label is not None
        ]
        if self.entities:
            parts.append("entities: " + ", ".join(dict.fromkeys(e.value for e in self.entities)) + ".")
        return (
            " ".join([*parts, f"task: {self.query}"]) if parts else self.query
        )  # nothing decided: the query as it is

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values; each layer without its decision (:data:`_LAYER_KEYS`)."""
        return {
            "query": self.query,
            "entities": plain(self.entities),
            "timings": asdict(self.timings),
            "layers": {n: {k: plain(getattr(r, k)) for k in _LAYER_KEYS} for n, r in self.layers.items()},
            "reason": plain(self.reason),
            "alerts": plain(self.alerts),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Context":
        """The context :meth:`to_dict` wrote (the layers' decisions are not in it: None).

        Raises:
            InvalidArgumentError: not a mapping, or a field of the wrong shape (named).
        """
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(f"a context must be a mapping, got {type(d).__name__}")
        try:
            layers = {
                n: LayerResult(
                    **{
                        **r,
                        "alerts": tuple(Alert(**a) for a in r.get("alerts", ())),
                        "reason": Reason(**r["reason"]) if r.get("reason") is not None else None,
                    }
                )
                for n, r in d["layers"].items()
            }
            return cls(
                d["query"],
                layers,
                tuple(Entity(**e) for e in d.get("entities", ())),
                ContextTimings.from_dict(d.get("timings") or {}),
                Reason(**d["reason"]) if d.get("reason") is not None else None,
                tuple(Alert(**a) for a in d.get("alerts", ())),
            )
        except (KeyError, TypeError, AttributeError, ValueError) as e:
            raise InvalidArgumentError(f"context: {type(e).__name__}: {e}") from None


#: The fields of a layer's result in :meth:`Context.to_dict`.
_LAYER_KEYS = ("label", "probability", "tier", "action", "alerts", "declined", "reason")


def context_search(context: Any, domains: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """What a tool search from ``context`` reads: its :meth:`~Context.search_text`, and the active
    domains (``domains`` when given, else the ``domain`` layer's label when it decided).

    Raises:
        InvalidArgumentError: ``context`` is not a :class:`Context`.
    """
    if not isinstance(context, Context):
        raise InvalidArgumentError(
            f"context must be a Context (ContextRouter.detect()), got {type(context).__name__}"
        )
    label = context.layers["domain"].label if "domain" in context.layers else None
    return context.search_text(), tuple(domains) or ((label,) if label is not None else ())
