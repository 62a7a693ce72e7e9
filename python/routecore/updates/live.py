"""Live updates of a serving router: add, change and remove routes and tools.

An update builds a new snapshot (route table, tool catalog, calibration) beside
the one in use, embedding only exemplar texts that the old tables do not hold,
then swaps it in with two attribute assignments. A call reads the router's
route table (or tool catalog) once, so it sees the old snapshot or the new one,
never a mix. Updates are serialised by a lock; reads never wait for it.

A zero-label calibration is recomputed for the new tables (``recalibrate=False``
keeps it: on 150 routes x 100 exemplars the recomputation is most of an
update's 1.8 s, see BENCHMARKS.md); a fitted or manual one is kept (its
per-route values of removed routes dropped). A router with a
fitted linear head refuses route changes: the head knows the old routes only.
A head trained on the exemplars (``Policy(head="exemplars")``, the default) is
trained again with its calibration when routes change (its five trainings: about
as long as building the router); with ``recalibrate=False`` only the serving head
is trained again, and its cuts and the calibration stay.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

from routecore.calibrate.calibration_record import kept_calibration
from routecore.config.specs import RouteSpec, ToolSpec, unique
from routecore.decide.policy import with_route_thresholds
from routecore.decide.tables import known_vectors
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.updates.rebuild import Changeable, rebuild_of


@dataclass(frozen=True)
class Update:
    """What a live update did and cost."""

    routes: int  # routes after the update
    tools: int
    embedded: int  # exemplar texts embedded (new or changed)
    embed_ms: float
    build_ms: float  # tables, lexical index and calibration, embedding excluded


def _merged(
    old: Sequence[Any], add: Sequence[Any], update: Sequence[Any], remove: Sequence[str], kind: str
) -> list[Any]:
    if isinstance(remove, str):
        raise InvalidArgumentError(f"give a list of {kind} names to remove, not one string")
    names = {s.name for s in old}
    for group, want in ((update, True), (remove, True), (add, False)):
        for item in group:
            n = item if isinstance(item, str) else item.name
            if (n in names) != want:
                raise ConfigError(
                    f"{'no' if want else 'a'} {kind} named {n!r} {'exists' if want else 'already exists'}"
                )
    gone = set(remove)
    changed = {s.name: s for s in update}
    out = [changed.get(s.name, s) for s in old if s.name not in gone] + list(add)
    unique([s.name for s in out], kind, "update")
    return out


def apply(
    router: Changeable,
    *,
    add_routes: Sequence[RouteSpec] = (),
    update_routes: Sequence[RouteSpec] = (),
    remove_routes: Sequence[str] = (),
    add_tools: Sequence[ToolSpec] = (),
    update_tools: Sequence[ToolSpec] = (),
    remove_tools: Sequence[str] = (),
    recalibrate: bool = True,
) -> Update:
    """Apply one update to ``router`` (see the module doc); the router is unchanged when it raises."""
    for s in [*add_routes, *update_routes]:
        if not isinstance(s, RouteSpec):
            raise InvalidArgumentError(f"routes must be RouteSpec objects, got {type(s).__name__}")
    with router.internals.writer:
        rt, tc = router.route_table, router.tool_catalog
        routes = _merged(rt.specs, add_routes, update_routes, remove_routes, "route")
        tools = _merged(tc.specs, add_tools, update_tools, remove_tools, "tool")
        if not routes and not tools:
            raise ConfigError("an update may not remove every route and every tool")
        spec_policy = with_route_thresholds(router.internals.given_policy, routes)
        head, routes_changed = rt.head, bool(add_routes or update_routes or remove_routes)
        calibration = kept_calibration(router.calibration, {r.name for r in routes}, recalibrate)
        fitted = router.calibration is not None and router.calibration.source == "fitted"
        if head is not None and routes_changed and (spec_policy.head != "exemplars" or fitted):
            raise ConfigError(
                "this router has a fitted head over its routes: "
                "refit it (routecore fit --head) instead of a live update"
            )
        head_threshold = None
        if (
            head is not None
            and spec_policy.head == "exemplars"
            and not fitted
            and (routes_changed or calibration is None)
        ):
            # A head trained on the exemplars is trained again: with new cuts and the calibration they
            # belong to, or, with ``recalibrate=False``, alone (the cuts and the calibration stay).
            head_threshold = head.threshold if calibration is not None else None
            head = None
        t0 = time.perf_counter()
        args = rebuild_of(
            router, routes, tools, spec_policy, head, calibration, head_threshold, known_vectors(rt.table)
        )
        parts = router.internals.build(args)
        total = (time.perf_counter() - t0) * 1e3
        router.spec_policy = spec_policy
        router.internals.install(parts)
        return Update(len(routes), len(tools), parts.embedded, parts.embed_ms, total - parts.embed_ms)
