"""What changes a serving :class:`~routecore.routers.router.Router`: live updates of routes and tools
(:mod:`routecore.updates.live`) and learned exemplars (:mod:`routecore.updates.learning`). Readers see the old
routes or the new ones, never a mix. A mixin of ``Router``, which documents the class.
"""

from __future__ import annotations

from typing import Any, Sequence

from routecore.config.specs import RouteSpec
from routecore.config.tool_formats import tool_specs
from routecore.updates import learning, live
from routecore.updates.rebuild import Changeable


class Changes:
    """Router's methods that change it while it serves."""

    # -- live updates ---------------------------------------------------------------
    def add_routes(self: Changeable, routes: Sequence[RouteSpec], *, recalibrate: bool = True) -> live.Update:
        """Add routes to a serving router: only their exemplars are embedded, and
        readers see the old routes or the new ones, never a mix.

        ``recalibrate=False`` keeps a zero-label calibration as it is instead of
        recomputing it for the new tables (most of an update's cost on large
        tables: BENCHMARKS.md); see :mod:`routecore.updates.live`."""
        return live.apply(self, add_routes=routes, recalibrate=recalibrate)

    def update_route(self: Changeable, route: RouteSpec, *, recalibrate: bool = True) -> live.Update:
        """Replace the route of the same name (only new or changed exemplars are embedded)."""
        return live.apply(self, update_routes=[route], recalibrate=recalibrate)

    def remove_routes(self: Changeable, names: Sequence[str], *, recalibrate: bool = True) -> live.Update:
        """Remove routes by name."""
        return live.apply(self, remove_routes=names, recalibrate=recalibrate)

    def add_tools(
        self: Changeable, tools: Sequence[Any], *, tool_overlay: Any = None, recalibrate: bool = True
    ) -> live.Update:
        """Add tools (any format :mod:`routecore.config.tool_formats` reads) to a serving router."""
        return live.apply(
            self, add_tools=tool_specs(tools, overlay=tool_overlay) if tools else [], recalibrate=recalibrate
        )

    def update_tool(
        self: Changeable, tool: Any, *, tool_overlay: Any = None, recalibrate: bool = True
    ) -> live.Update:
        """Replace the tool of the same name."""
        return live.apply(
            self, update_tools=tool_specs([tool], overlay=tool_overlay), recalibrate=recalibrate
        )

    def remove_tools(self: Changeable, names: Sequence[str], *, recalibrate: bool = True) -> live.Update:
        """Remove tools by name."""
        return live.apply(self, remove_tools=names, recalibrate=recalibrate)

    # -- learning -------------------------------------------------------------------
    def learn(
        self: Changeable,
        query: str,
        route: str,
        *,
        source: str = "user",
        vector: Any = None,
        force: bool = False,
    ) -> learning.Learned:
        """Add ``query`` to ``route`` as a learned exemplar (``source``: ``"user"``, ``"llm"`` or
        ``"agent"``), without retraining from scratch; readers see the old routes or the new ones.

        An unknown route raises :class:`~routecore.errors.UnknownRouteError`; a near-duplicate
        of one of the route's exemplars is not added; an answer that contradicts a confident
        (high-tier) decision is held for review (:meth:`held_for_review`) unless ``force``.
        ``vector``: the query's embedding, when the caller has it. See :mod:`routecore.updates.learning`."""
        return learning.learner(self).learn(query, route, source=source, vector=vector, force=force)

    def learned(self: Changeable, route: str | None = None) -> list[learning.LearnedExemplar]:
        """The learned exemplars (of ``route``), oldest first, with their source and time."""
        return learning.learner(self).learned(route)

    def forget(self: Changeable, ids: int | Sequence[int]) -> list[learning.LearnedExemplar]:
        """Remove learned exemplars by id (:attr:`LearnedExemplar.id`); returns them."""
        return learning.learner(self).forget([ids] if isinstance(ids, int) else ids)

    def sync_learned(self: Changeable) -> int:
        """Take the learned exemplars of this router's lesson store (``memory=``): those another
        replica learned, or all after a restart (a router built with a store does this itself);
        drop those removed from it. Returns how many changed."""
        return learning.learner(self).sync()

    def held_for_review(self: Changeable) -> list[learning.Review]:
        """The answers :meth:`learn` held because they contradicted a confident decision."""
        return learning.learner(self).held()
