"""Context layers (issue 19): one encode, several heads.

A :class:`ContextRouter` holds named layers, each a route set with its own policy and
calibration (a :class:`~routecore.router.Router` over one shared encoder). The default
layers (``data/context_layers.yaml``) are intent (ask / transform / generate / plan /
debug / review), urgency (low / medium / high) and sensitivity (public / internal / pii
/ safety_critical); a config adds a domain layer, replaces any layer, and may list
entities (:mod:`routecore.entities`). :meth:`ContextRouter.detect` encodes the query
once and decides every layer on that vector: a :class:`Context` with each layer's label,
probability, tier and alerts, the entities, and the timings.

Open and exhaustive layers. An *open* layer may decline: its label is None when its decision
is ``none`` (out of scope) or ``clarify``, as a router's route would be; intent and domain
layers are open (a query may have no intent or domain among the labels). An *exhaustive*
layer's labels cover every query (every request has some urgency and some sensitivity), so
it always names one: when its decision declined, its best label by probability, at the
decision's tier (``low`` after a ``none``: the tier still says how sure the layer is), with
``declined`` set to the decision's action and an ``exhaustive`` alert. A layer says which it
is with ``open: true|false``; unset, it is open, since an exhaustive layer must be meant to
cover everything. The default layers set it: ``intent`` open, ``urgency`` and
``sensitivity`` exhaustive. A config layer that replaces a default one by name states its own.

Config (YAML or JSON)::

    layers:
      domain:
        routes: [{name: billing, utterances: [...]}, ...]
        policy: {...}            # optional, per layer
        open: true               # optional: false for a layer that always names a label
    entities: {patterns: {incident_id: 'INC\\d{8}'}}
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from routecore.decision import Alert, Decision, Entity, plain, trace
from routecore.errors import ConfigError

#: The default layers.
DEFAULT_LAYERS = Path(__file__).resolve().parent / "data" / "context_layers.yaml"


@dataclass(frozen=True)
class LayerResult:
    """One layer's decision: its label, the best label's probability, the tier, the action
    and the alerts. An open layer's label is None when its decision was ``none`` (out of scope)
    or ``clarify``; an exhaustive layer's never is (module docs): it then names its best
    label by probability, with the action ``route``, the decision's tier, an ``exhaustive``
    alert, and ``declined`` set to the decision's action. ``decision``: the layer's own
    :class:`~routecore.decision.Decision`, as its router made it."""

    label: str | None
    probability: float
    tier: str
    action: str
    alerts: tuple[Alert, ...] = ()
    decision: Decision | None = field(default=None, repr=False, compare=False)
    #: ``none`` or ``clarify`` when an exhaustive layer named its best label over its decision's; else None.
    declined: str | None = None


@dataclass(frozen=True)
class Context:
    """Every layer's result for one query, its entities and the timings (ms):
    ``encode``, one entry per layer, and ``total``."""

    query: str
    layers: Mapping[str, LayerResult]
    entities: tuple[Entity, ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)

    def label(self, layer: str) -> str | None:
        """The label of ``layer`` (KeyError naming the layers when there is none such)."""
        if layer not in self.layers:
            raise KeyError(f"no layer {layer!r}; layers: {sorted(self.layers)}")
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
        return {
            "query": self.query,
            "entities": plain(self.entities),
            "timings": dict(self.timings),
            "layers": {n: {k: plain(getattr(r, k)) for k in _LAYER_KEYS} for n, r in self.layers.items()},
        }


#: The fields of a layer's result in :meth:`Context.to_dict`.
_LAYER_KEYS = ("label", "probability", "tier", "action", "alerts", "declined")


def _read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A context config, checked against the config schema (its ``layers`` and ``entities``)."""
    from routecore.specs import parse_config, read_config_file

    data = read_config_file(path)
    extra = set(data) - {"layers", "entities", "$schema"}
    if extra:
        raise ConfigError(
            f"{path}: unknown keys {sorted(extra)} (a context config has `layers` and `entities`)"
        )
    parse_config(data, str(path))  # types, ranges and names of every layer, with the path of any error
    return data


class ContextRouter:
    """Named layers over one encoder (see the module docs); ``entities`` (an
    :class:`~routecore.entities.EntityConfig`) are found once per query; ``exhaustive``:
    the names of the layers that always name a label (the others are open).

    Raises:
        ConfigError: no layers, layers whose encoders differ, or an exhaustive name that is no layer.
    """

    def __init__(self, layers: Mapping[str, Any], entities: Any = None, exhaustive: Iterable[str] = ()):
        if not layers:
            raise ConfigError("a context router needs at least one layer")
        models = {r.encoder.model_id for r in layers.values()}
        if len(models) != 1:
            raise ConfigError(
                f"every layer must use the same encoder (one encode for all); got {sorted(models)}"
            )
        #: The layers that always name a label (module docs: open and exhaustive layers).
        self.exhaustive = frozenset(exhaustive)
        unknown = self.exhaustive - set(layers)
        if unknown:
            raise ConfigError(f"exhaustive layers {sorted(unknown)} are not layers; layers: {sorted(layers)}")
        self.layers = dict(layers)
        self.encoder = next(iter(self.layers.values())).encoder
        from routecore.entities import EntityMatcher

        #: The entities of every query, found once (``entities``: an EntityConfig).
        self.matcher = EntityMatcher(entities) if entities is not None and entities.kinds else None

    @classmethod
    def from_config(
        cls, path: str | os.PathLike[str] | None = None, *, encoder: Any = None, defaults: bool = True
    ) -> "ContextRouter":
        """The default layers (unless ``defaults=False``), with the layers of the config at
        ``path`` added or replacing them by name, all on ``encoder`` (default: the bundled model).
        A layer with ``open: false`` is exhaustive (module docs)."""
        from routecore.entities import EntityConfig
        from routecore.policy import Policy
        from routecore.router import Router
        from routecore.specs import parse_config

        if encoder is None:
            from routecore.encoder import Encoder

            encoder = Encoder.load()
        specs: dict[str, tuple[Mapping[str, Any], str]] = {}
        entities = None
        for source in ([DEFAULT_LAYERS] if defaults else []) + ([Path(path)] if path is not None else []):
            data = _read(source)
            specs.update(
                {n: (layer, f"{source}: layers.{n}") for n, layer in (data.get("layers") or {}).items()}
            )
            if data.get("entities") is not None:
                entities = EntityConfig.from_dict(data["entities"], f"{source}: entities")
        layers = {}
        for name, (layer, where) in specs.items():
            routes, _ = parse_config({"routes": layer["routes"]}, where)
            uses = any(
                r.prefers_entities or r.requires_entities for r in routes
            )  # the others need no matcher of their own
            layers[name] = Router(
                routes,
                encoder=encoder,
                policy=Policy.from_dict(layer.get("policy"), f"{where}.policy"),
                entities=entities if uses else None,
            )
        exhaustive = [n for n, (layer, _) in specs.items() if layer.get("open") is False]
        return cls(layers, entities, exhaustive=exhaustive)

    def detect(self, query: str) -> Context:
        """Encode ``query`` once and decide every layer on that vector: every layer's
        table is scored in one native call (``tables.score_many``), then each layer's
        rules decide. ``timings``: the encoder, that call, and each layer's rules."""
        from routecore.tables import score_many

        tables = [router.route_table for router in self.layers.values()]
        for rt in tables:
            rt._text(query, None, None)  # the checks of route(): a str, a table with routes
        t0 = time.perf_counter()
        enc = self.encoder.encode_with_stats([query])
        t1 = time.perf_counter()
        q = enc.embeddings[0]
        prepared = [rt.prepare(query, q) for rt in tables]
        scored = score_many(
            [rt.table for rt in tables],
            q,
            [rt.step(pp) for rt, pp in zip(tables, prepared)],
            [pp.pre.bias for pp in prepared],
        )
        t2 = time.perf_counter()
        results: dict[str, LayerResult] = {}
        timings = {"encode": (t1 - t0) * 1e3, "scoring": (t2 - t1) * 1e3}
        for (name, router), rt, pp, r in zip(self.layers.items(), tables, prepared, scored):
            ts = time.perf_counter()
            d = router._emit(
                rt.decide(
                    query, q, None, (), None, t0, enc.tokenize_ms, bool(enc.truncated), prepared=pp, scored=r
                )
            )
            timings[name] = (time.perf_counter() - ts) * 1e3
            if d.action == "route":
                results[name] = LayerResult(d.route, float(d.confidence), d.tier, d.action, d.alerts, d)
            elif name in self.exhaustive and d.action in ("none", "clarify"):
                results[name] = _named_anyway(name, [s.name for s in rt.specs], d)
            else:
                results[name] = LayerResult(None, float(d.confidence), d.tier, d.action, d.alerts, d)
        found = self.matcher.find(query) if self.matcher is not None else ()
        timings["total"] = (time.perf_counter() - t0) * 1e3
        return trace("context", Context(query, results, found, timings))


def _named_anyway(layer: str, labels: list[str], d: Decision) -> LayerResult:
    """An exhaustive layer's result when its decision declined (``none`` or ``clarify``): the
    best of its ``labels`` by the decision's probability, at the decision's tier. Only the
    labels count: a probabilities entry that is none of them (an out-of-scope share) is not one."""
    probs = d.probabilities
    label = max(labels, key=lambda n: probs.get(n, 0.0))  # the first of equals: the config's order
    p = float(probs.get(label, 0.0))
    alert = Alert(
        "exhaustive",
        f"{layer} always names one of its labels: its decision was {d.action} at the "
        f"{d.tier} tier, so it names its most probable label {label} (p {p:.2f})",
        {"layer": layer, "declined": d.action, "label": label, "probability": p},
    )
    return LayerResult(label, p, d.tier, "route", (*d.alerts, alert), d, d.action)
