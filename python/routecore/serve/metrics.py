"""Prometheus metrics of the sidecar, in a registry of each app's own (tests build several apps).

Counters and histograms (``GET /metrics`` serves them in the text format):

- ``routecore_http_requests_total{endpoint,method,status}`` and
  ``routecore_http_request_duration_seconds{endpoint}``: every request, the
  endpoint being the route's path (``other`` for unknown paths), the method one of
  ``GET HEAD POST PUT PATCH DELETE OPTIONS`` (``other`` for any other); every label
  comes from a closed set (:func:`routecore.serve.http.metric_labels`);
- ``routecore_stage_duration_seconds{endpoint,stage}``: per routing request,
  ``encode`` (tokenizer + model: its share of a batch's encoder call) against
  ``rest`` (scoring, policy, LLM, queueing, batching; the handler's time minus
  ``encode``);
- ``routecore_decisions_total{action,route,tier}`` (route ``-`` for none);
- ``routecore_cascade_decisions_total{served_by,encoder_tier}``: decisions of ``serve --fast-model`` /
  ``--static`` by the router (``fast``, ``strong``) and encoder tier (``static``, ``transformer``)
  that gave them, read from their ``cascade`` alert;
- ``routecore_llm_calls_total``, ``routecore_llm_errors_total``,
  ``routecore_llm_timeouts_total``: the LLM fallback, read from the decisions
  (an error whose message says it timed out counts in both errors and timeouts);
- ``routecore_encoder_cache_hits_total``, ``..._misses_total`` and
  ``routecore_encoder_cache_hit_ratio``: the encoder's query cache, read at scrape time;
- ``routecore_circuit_breaker_trips_total``: ``request_more_tools`` sessions whose breaker opened;
- ``routecore_batch_size{kind}``: micro-batch sizes; ``routecore_in_flight_requests``;
  ``routecore_tool_sessions``; ``routecore_ready``; ``routecore_router_generation``;
  ``routecore_reloads_total{result}``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from routecore.routers.cascade_tools import served

LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.002,
    0.003,
    0.005,
    0.0075,
    0.01,
    0.015,
    0.02,
    0.03,
    0.05,
    0.075,
    0.1,
    0.15,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
_TIMEOUT_WORDS = ("timeout", "timed out", "too slow", "took longer")


class _EncoderCache(Collector):
    """The encoder's query-cache counters, read when Prometheus scrapes."""

    def __init__(self, encoder: Callable[[], Any]):
        self._encoder = encoder

    def collect(self) -> Iterable[Any]:
        enc = self._encoder()
        stats = enc.cache_stats() if enc is not None and hasattr(enc, "cache_stats") else None
        hits, misses = (stats.hits, stats.misses) if stats is not None else (0, 0)
        yield CounterMetricFamily(
            "routecore_encoder_cache_hits", "Queries the encoder answered from its cache.", value=hits
        )
        yield CounterMetricFamily(
            "routecore_encoder_cache_misses", "Queries the encoder had to embed.", value=misses
        )
        yield GaugeMetricFamily(
            "routecore_encoder_cache_hit_ratio",
            "hits / (hits + misses) of the encoder's query cache.",
            value=hits / (hits + misses) if hits + misses else 0.0,
        )


class Metrics:
    """The app's metrics; ``encoder()`` gives the encoder whose cache is reported."""

    def __init__(self, encoder: Callable[[], Any]):
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "routecore_http_requests",
            "HTTP requests by endpoint, method and status.",
            ["endpoint", "method", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "routecore_http_request_duration_seconds",
            "Time to answer a request, by endpoint.",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.stage = Histogram(
            "routecore_stage_duration_seconds",
            "Encoder time against the rest of a routing request.",
            ["endpoint", "stage"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.decisions = Counter(
            "routecore_decisions",
            "Route decisions by action, route and tier.",
            ["action", "route", "tier"],
            registry=r,
        )
        self.cascade = Counter(
            "routecore_cascade_decisions",
            "Route decisions of a fast tier's cascade by the router and the encoder tier that gave them.",
            ["served_by", "encoder_tier"],
            registry=r,
        )
        self.llm_calls = Counter("routecore_llm_calls", "Calls to the LLM fallback router.", registry=r)
        self.llm_errors = Counter(
            "routecore_llm_errors",
            "LLM fallback calls that failed (the semantic route was used).",
            registry=r,
        )
        self.llm_timeouts = Counter(
            "routecore_llm_timeouts", "LLM fallback calls that timed out.", registry=r
        )
        self.breaker_trips = Counter(
            "routecore_circuit_breaker_trips", "request_more_tools circuit breakers that opened.", registry=r
        )
        self.batch_size = Histogram(
            "routecore_batch_size", "Requests per micro-batch.", ["kind"], buckets=BATCH_BUCKETS, registry=r
        )
        self.in_flight = Gauge("routecore_in_flight_requests", "Requests being answered.", registry=r)
        self.sessions = Gauge("routecore_tool_sessions", "Open request_more_tools sessions.", registry=r)
        self.ready = Gauge("routecore_ready", "1 once a router is loaded.", registry=r)
        self.generation = Gauge(
            "routecore_router_generation", "Routers loaded so far (1 after the first load).", registry=r
        )
        self.reloads = Counter("routecore_reloads", "Router reloads by result.", ["result"], registry=r)
        r.register(_EncoderCache(encoder))

    def observe_decision(self, endpoint: str, d: Any, handler_s: float) -> None:
        self.decisions.labels(d.action, d.route or "-", d.tier).inc()
        by = served(d)
        if by is not None:
            self.cascade.labels(by.by, by.encoder_tier).inc()
        self._observe_llm(d)
        self.observe_stages(endpoint, d, handler_s)

    def observe_stages(self, endpoint: str, result: Any, handler_s: float) -> None:
        t = result.timings
        enc = (t.tokenize + t.encode) / 1e3
        self.stage.labels(endpoint, "encode").observe(enc)
        self.stage.labels(endpoint, "rest").observe(max(handler_s - enc, 0.0))

    def _observe_llm(self, d: Any) -> None:
        failed = (d.reason is not None and d.reason.code == "llm_failed") or any(
            a.kind == "llm_error" for a in d.alerts
        )
        if d.used_llm or failed:
            self.llm_calls.inc()
        if failed:
            self.llm_errors.inc()
            text = (d.fallback or "") + " ".join(a.message for a in d.alerts if a.kind == "llm_error")
            if any(w in text.lower() for w in _TIMEOUT_WORDS):
                self.llm_timeouts.inc()
