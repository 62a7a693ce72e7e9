"""A :class:`~routecore.routers.router.Router`'s interface to the modules that change it while it serves
(:mod:`routecore.updates.live`, :mod:`routecore.updates.learning`): internal to routecore, not part of
the public API. They reach it as ``router.internals`` and read nothing private of the router, and import
nothing of ``routecore.routers``: the router hands them what rebuilds it (``build``)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from routecore.decide.policy import Policy
    from routecore.routers.assembly import Parts
    from routecore.updates.learning import Learner
    from routecore.updates.rebuild import Rebuild


class RouterInternals:
    """What changing a router needs beyond its public attributes (``route_table``,
    ``tool_catalog``, ``spec_policy``, ``calibration``, ``encoder``, ``memory``).

    Args:
        storage: the storage its tables were built with (a rebuild keeps it).
        given_policy: the policy as given, before the routes' own thresholds were applied.
        install: puts rebuilt parts (a route table, a tool catalog and their calibration) in force.
        build: builds those parts from a :class:`~routecore.updates.rebuild.Rebuild`
            (:func:`routecore.routers.assembly.rebuild`): what a live update or a learning refit
            rebuilds with.
    """

    def __init__(
        self,
        storage: str,
        given_policy: Policy,
        install: Callable[[Parts], None],
        build: Callable[[Rebuild], Parts],
    ):
        #: Serialises changes (live updates, learning); readers never take it.
        self.writer = threading.Lock()
        self.storage = storage
        self.given_policy = given_policy
        self.install = install
        self.build = build
        #: The router's :class:`~routecore.updates.learning.Learner`, made on first use
        #: (routecore.updates.learning).
        self.learner: Learner | None = None
