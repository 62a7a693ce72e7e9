"""Context layers (issue 19): one encode, several heads.

A :class:`ContextRouter` holds named layers, each a :class:`~routecore.routers.router.Router` with its own
policy and calibration over one shared encoder. The default layers (``data/context_layers.yaml``) are
intent (ask / transform / generate / plan / debug / review), urgency (low / medium / high) and
sensitivity (public / internal / pii / safety_critical); a config adds a domain layer, replaces any
layer, and may list entities. :meth:`ContextRouter.detect` encodes the query once and decides every
layer on that vector: a :class:`Context`.

Open and exhaustive layers. An *open* layer may decline: its label is None when its decision
is ``none`` (out of scope) or ``clarify``; intent and domain layers are open. An *exhaustive*
layer's labels cover every query (every request has some urgency and some sensitivity), so
it names one even when its decision declined: its best label by probability, at the decision's
tier, with ``declined`` set to the decision's action and an ``exhaustive`` alert (not after an
``error`` decision: the encoder failed, and nothing says which label). ``open: true|false``
says which a layer is (unset: open); ``urgency`` and ``sensitivity`` are exhaustive.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from routecore.decide import reasons as reasons_mod
from routecore.decide.arguments import part_of, query_vectors
from routecore.decide.conversation import routing_text
from routecore.decision import Alert, Decision, Entity, Reason, emit, trace
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.context_result import CONTEXT_REASONS as CONTEXT_REASONS
from routecore.routers.context_result import Context as Context
from routecore.routers.context_result import ContextTimings, Notes
from routecore.routers.context_result import LayerResult as LayerResult

if TYPE_CHECKING:
    from routecore.routers.router import Router

#: The default layers.
DEFAULT_LAYERS = Path(__file__).resolve().parents[1] / "data" / "context_layers.yaml"


def _read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A context config, checked against the config schema (its ``layers`` and ``entities``)."""
    from routecore.config.specs import parse_config, read_config_file

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
    :class:`~routecore.core.entities.EntityConfig`) are found once per query; ``exhaustive``:
    the names of the layers that always name a label (the others are open); ``metrics``: a sink
    called with every :class:`Context` (as ``Router(metrics=)``).

    Calls: :meth:`detect`, :meth:`detect_batch`, :meth:`adetect`, :meth:`adetect_batch`.

    Raises:
        ConfigError: no layers, layers whose encoders differ, or an exhaustive name that is no layer.
    """

    def __init__(
        self,
        layers: Mapping[str, Any],
        entities: Any = None,
        exhaustive: Iterable[str] = (),
        *,
        metrics: Any = None,
    ):
        if not isinstance(layers, Mapping) or not layers:
            raise ConfigError("a context router needs at least one layer: a mapping of names to Routers")
        for name, r in layers.items():
            part_of(r, f"layer {name!r}", "a Router", "route", "encoder")
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
        from routecore.core.entities import EntityMatcher

        #: The entities of every query, found once (``entities``: an EntityConfig).
        self.matcher = EntityMatcher(entities) if entities is not None and entities.kinds else None
        #: Called with every Context (a :class:`routecore.routers.routing_metrics.RoutingMetrics`, or any
        #: callable); each layer's router still calls its own ``metrics`` with its decision.
        self.metrics = metrics

    @classmethod
    def from_config(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        encoder: Any = None,
        defaults: bool = True,
        **kw: Any,
    ) -> "ContextRouter":
        """The default layers (unless ``defaults=False``), with the layers of the config at
        ``path`` added or replacing them by name, all on ``encoder`` (default: the bundled model).
        A layer with ``open: false`` is exhaustive (module docs); ``kw`` (``metrics``) as in the
        constructor."""
        from routecore.config.specs import parse_config
        from routecore.core.entities import EntityConfig
        from routecore.decide.policy import Policy
        from routecore.routers.router import Router

        if encoder is None:
            from routecore.core.encoder import Encoder

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
        return cls(layers, entities, exhaustive=exhaustive, **kw)

    def detect(self, query: str, *, vector: Any = None) -> Context:
        """Encode ``query`` once and decide every layer on that vector: every layer's table is scored
        in one native call (``tables.score_many``), then each layer's rules decide.

        Never raises for any string (a non-str is an :class:`InvalidArgumentError`). Lone
        surrogates are removed with an ``invalid_text`` alert; a query with nothing left to read
        gets each layer's ``empty_query`` decision (reason ``empty_query``); when the encoder
        fails, each layer decides as :meth:`Router.route <routecore.routers.router.Router.route>` does
        then (its LLM, else an ``error`` decision; reason ``error``). ``vector``: the query's
        embedding from this encoder, when the caller has one (as ``Router.route(vector=)``)."""
        text, notes = self._checked(query)
        if not text:
            return self._emit(self._each_layer(query, notes, "empty_query"))
        t0 = time.perf_counter()
        if vector is not None:
            q = query_vectors(vector, self.encoder.dim, 1)[0]
            return self._emit(self._decided(query, text, notes, q, t0, 0.0, False))
        try:
            enc = self.encoder.encode_with_stats([text])
        except Exception as e:  # noqa: BLE001 - each layer degrades as route() does, never a crash
            return self._emit(self._each_layer(query, notes, "error", e))
        got = self._decided(query, text, notes, enc.embeddings[0], t0, enc.tokenize_ms, bool(enc.truncated))
        return self._emit(got)

    def detect_batch(self, queries: Sequence[str], *, vectors: Any = None) -> list[Context]:
        """The contexts of ``queries`` from one batched encoder call; each is the one
        :meth:`detect` gives (a failed batch call: each query degrades on its own). ``vectors``
        (``n x dim``, this encoder's) skips the encoder, as ``Router.route_batch(vectors=)``."""
        if isinstance(queries, str) or not isinstance(queries, Sequence):
            raise InvalidArgumentError("queries must be a list of strings; use detect() for one query")
        if vectors is not None:
            Q = query_vectors(vectors, self.encoder.dim, len(queries))
            return [self.detect(q, vector=x) for q, x in zip(queries, Q)]
        read = [self._checked(q) for q in queries]
        texts = [t for t, _ in read if t]
        if not texts:
            return [self.detect(q) for q in queries]
        t0 = time.perf_counter()
        try:
            enc = self.encoder.encode_with_stats(texts)
        except Exception:  # noqa: BLE001 - each query degrades on its own
            return [self.detect(q) for q in queries]
        out, j = [], 0
        for q, (text, notes) in zip(queries, read):
            if not text:
                out.append(self.detect(q))
                continue
            tok_ms = enc.tokenize_ms / len(texts)
            out.append(
                self._emit(self._decided(q, text, notes, enc.embeddings[j], t0, tok_ms, j in enc.truncated))
            )
            j += 1
        return out

    async def adetect(self, query: str, *, vector: Any = None) -> Context:
        """:meth:`detect` off the event loop (the native work releases the GIL)."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.detect, None, query, vector=vector)

    async def adetect_batch(self, queries: Sequence[str], *, vectors: Any = None) -> list[Context]:
        """:meth:`detect_batch` off the event loop."""
        from routecore.core.aio import run_off_loop  # asyncio loads on the first async call

        return await run_off_loop(self.detect_batch, None, queries, vectors=vectors)

    def _emit(self, ctx: Context) -> Context:
        return emit(self.metrics, trace("context", ctx))

    @staticmethod
    def _checked(query: Any) -> tuple[str, tuple[tuple[str, str], ...]]:
        """What is encoded for ``query`` and the notes that say what was removed (as route())."""
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a str, got {type(query).__name__}")
        text, notes = routing_text(query)
        return (text if query.strip() else ""), notes

    def _each_layer(self, query: str, notes: Notes, code: str, err: Exception | None = None) -> Context:
        """The context when nothing could be encoded: each layer's own :meth:`Router.route` decision
        (empty query, or the encoder's failure: its LLM, else an error decision)."""
        t0 = time.perf_counter()
        results = {n: self._result(n, router, router.route(query)) for n, router in self.layers.items()}
        why = (
            reasons_mod.empty_query()
            if code == "empty_query"
            else Reason("error", f"the encoder failed ({type(err).__name__}: {err}); each layer degraded")
        )
        timings = ContextTimings(total=(time.perf_counter() - t0) * 1e3)
        alerts = tuple(Alert(k, m) for k, m in notes)
        return Context(query, results, self._entities(query), timings, why, alerts)

    def _decided(
        self, query: str, text: str, notes: Notes, q: Any, t0: float, tokenize_ms: float, truncated: bool
    ) -> Context:
        """Every layer decided on ``q``, the embedding of ``text`` (the query as read)."""
        from routecore.decide.tables import score_many

        tables = [router.route_table for router in self.layers.values()]
        t1 = time.perf_counter()
        prepared = [rt.prepare(text, q) for rt in tables]
        scored = score_many(
            [rt.table for rt in tables],
            q,
            [rt.step(pp) for rt, pp in zip(tables, prepared)],
            [pp.pre.bias for pp in prepared],
        )
        t2 = time.perf_counter()
        results: dict[str, LayerResult] = {}
        per_layer: dict[str, float] = {}
        for (name, router), rt, pp, r in zip(self.layers.items(), tables, prepared, scored):
            ts = time.perf_counter()
            d = rt.decide(text, q, None, (), None, t0, tokenize_ms, truncated, prepared=pp, scored=r)
            results[name] = self._result(name, router, emit(router.metrics, d))
            per_layer[name] = (time.perf_counter() - ts) * 1e3
        total = (time.perf_counter() - t0) * 1e3
        timings = ContextTimings((t1 - t0) * 1e3, (t2 - t1) * 1e3, total, per_layer)
        decided = [f"{n} {r.label}" for n, r in results.items() if r.label is not None]
        why = Reason(
            "context",
            f"{len(decided)} of {len(results)} layers named a label"
            + (f" ({', '.join(decided)})" if decided else ""),
        )
        alerts = tuple(Alert(k, m) for k, m in notes)
        return Context(query, results, self._entities(query), timings, why, alerts)

    def _entities(self, query: str) -> tuple[Entity, ...]:
        """The query's entities (spans in the query with any lone surrogate removed)."""
        if self.matcher is None:
            return ()
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in query):  # no native matcher can read them
            query = "".join(ch for ch in query if not 0xD800 <= ord(ch) <= 0xDFFF)
        return tuple(self.matcher.find(query))

    def _result(self, name: str, router: Router, d: Decision) -> LayerResult:
        """A layer's result from its decision (module docs: open and exhaustive layers)."""
        if d.action == "route":
            return LayerResult(d.route, float(d.confidence), d.tier, d.action, d.alerts, d, reason=d.reason)
        if name in self.exhaustive and d.action in ("none", "clarify"):
            return _named_anyway(name, [s.name for s in router.route_specs], d)
        return LayerResult(None, float(d.confidence), d.tier, d.action, d.alerts, d, reason=d.reason)


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
    return LayerResult(label, p, d.tier, "route", (*d.alerts, alert), d, d.action, d.reason)
