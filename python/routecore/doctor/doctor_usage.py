"""What queries say about a route config (``routecore doctor --data / --log``).

- :func:`data_report`: a labelled JSONL (``{"text", "label"}``, the format of
  ``routecore eval --data``) routed through the router: per route, how many of its
  queries are routed right, clarified, declined or sent elsewhere (and where). A label
  that names no route is out of scope: right when the router does not route it.
- :func:`log_report`: a decision log of :class:`~routecore.routers.routing_metrics.RoutingMetrics`:
  per route, how many queries fell out of it. A query with feedback falls out of the
  route the feedback names when it was not routed there; one without feedback that
  was clarified or declined falls out of the route it scores best on (its text is
  routed again), or of the route its record names when the log holds no text.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from routecore.routers.router import Router

#: Examples kept per route, and logged queries suggested as exemplars per route.
EXAMPLES = 3


@dataclass(frozen=True)
class RouteAccuracy:
    """One route's labelled queries: ``right`` routed to it, the rest by outcome."""

    route: str
    n: int
    right: int
    clarify: int
    none: int
    accuracy: float
    sent_to: tuple[tuple[str, int], ...]
    misses: tuple[str, ...]


@dataclass(frozen=True)
class DataReport:
    path: str
    rows: int
    in_scope: int
    accuracy: float | None
    routed: float | None
    out_of_scope: int
    declined: float | None
    routes: tuple[RouteAccuracy, ...]


@dataclass(frozen=True)
class FallOut:
    """Queries that fell out of ``route`` (``fell``) against those it kept (``kept``)."""

    route: str
    fell: int
    kept: int
    share: float
    actions: tuple[tuple[str, int], ...]
    examples: tuple[str, ...]


@dataclass(frozen=True)
class LogReport:
    path: str
    decisions: int
    with_feedback: int
    fell_out: int
    unattributed: int
    routes: tuple[FallOut, ...]
    to_add: tuple[tuple[str, str], ...]


def _share(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def data_report(router: Router, path: str | os.PathLike[str]) -> DataReport:
    """Per-route accuracy and confusions of ``router`` on the labelled JSONL at ``path``."""
    from routecore.evaluation.datasets import load_routes

    data = load_routes(path)
    names = {s.name for s in router.route_specs}
    texts = [s.text for s in data.samples]
    decisions = router.route_batch(texts)
    rows: dict[str, list[tuple[Any, str]]] = {}
    oos_rows, oos_declined = 0, 0
    for s, d in zip(data.samples, decisions):
        if s.label in names:
            rows.setdefault(s.label, []).append((d, s.text))
        else:
            oos_rows += 1
            oos_declined += d.action != "route"
    out, right_all, routed_all, n_all = [], 0, 0, 0
    for route in sorted(rows):
        ds = rows[route]
        right = sum(d.action == "route" and d.route == route for d, _ in ds)
        wrong = Counter(d.route for d, _ in ds if d.action == "route" and d.route != route)
        misses = tuple(t for d, t in ds if not (d.action == "route" and d.route == route))[:EXAMPLES]
        out.append(
            RouteAccuracy(
                route,
                len(ds),
                right,
                sum(d.action == "clarify" for d, _ in ds),
                sum(d.action == "none" for d, _ in ds),
                round(right / len(ds), 4),
                tuple(wrong.most_common(EXAMPLES)),
                misses,
            )
        )
        right_all += right
        routed_all += sum(d.action == "route" for d, _ in ds)
        n_all += len(ds)
    out.sort(key=lambda r: (r.accuracy, -r.n, r.route))
    return DataReport(
        str(path),
        len(data),
        n_all,
        _share(right_all, n_all),
        _share(routed_all, n_all),
        oos_rows,
        _share(oos_declined, oos_rows),
        tuple(out),
    )


def log_report(router: Router, path: str | os.PathLike[str]) -> LogReport:
    """The routes queries of the decision log at ``path`` most fall out of."""
    from routecore.routers.routing_metrics import RoutingMetrics

    recs = [r for r in RoutingMetrics.from_log(path).records() if r.get("kind") == "route"]
    names = {s.name for s in router.route_specs}
    fell: dict[str, list[tuple[str, str]]] = {}
    kept: Counter[str] = Counter()
    to_add: dict[str, list[str]] = {}
    unattributed = judged = 0
    reroute: list[tuple[dict[str, Any], str]] = []
    for r in recs:
        fb = r.get("feedback", {})
        action, query = r.get("action"), r.get("query") or ""
        if "route" in fb:
            judged += 1
            truth = fb["route"]
            if truth not in names:
                continue  # out of scope, or a route this config no longer has
            if action == "route" and r.get("route") == truth:
                kept[truth] += 1
            else:
                fell.setdefault(truth, []).append((str(action), query))
                if query:
                    to_add.setdefault(truth, []).append(query)
        elif action == "route" and r.get("route") in names:
            kept[r["route"]] += 1
        elif action in ("clarify", "none"):
            if query:
                reroute.append((r, query))
            elif r.get("route") in names:
                fell.setdefault(r["route"], []).append((str(action), query))
            else:
                unattributed += 1
    if reroute:
        for (r, q), d in zip(reroute, router.route_batch([q for _, q in reroute])):
            best = max(d.probabilities, key=d.probabilities.__getitem__) if d.probabilities else None
            if best is None:
                unattributed += 1
            else:
                fell.setdefault(best, []).append((str(r.get("action")), q))
    routes = []
    for route, items in fell.items():
        acts = Counter(a for a, _ in items)
        examples = tuple(dict.fromkeys(q for _, q in items if q))[:EXAMPLES]
        routes.append(
            FallOut(
                route,
                len(items),
                kept[route],
                round(len(items) / (len(items) + kept[route]), 4),
                tuple(sorted(acts.items())),
                examples,
            )
        )
    routes.sort(key=lambda f: (-f.fell, f.route))
    adds = tuple(
        (route, q) for route in sorted(to_add) for q in list(dict.fromkeys(to_add[route]))[:EXAMPLES]
    )
    return LogReport(
        str(path), len(recs), judged, sum(f.fell for f in routes), unattributed, tuple(routes), adds
    )
