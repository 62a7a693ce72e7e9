"""A :class:`~routecore.router.Router`'s interface to the modules that change it while it serves
(:mod:`routecore.live`, :mod:`routecore.learning`): internal to routecore, not part of the public
API. They reach it as ``router.internals`` and read nothing private of the router."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from routecore.assembly import Parts
    from routecore.learning import Learner
    from routecore.policy import Policy


class RouterInternals:
    """What changing a router needs beyond its public attributes (``route_table``,
    ``tool_catalog``, ``spec_policy``, ``calibration``, ``encoder``, ``memory``).

    Args:
        storage: the storage its tables were built with (a rebuild keeps it).
        given_policy: the policy as given, before the routes' own thresholds were applied.
        install: puts rebuilt parts (a route table, a tool catalog and their calibration) in force.
    """

    def __init__(self, storage: str, given_policy: Policy, install: Callable[[Parts], None]):
        #: Serialises changes (live updates, learning); readers never take it.
        self.writer = threading.Lock()
        self.storage = storage
        self.given_policy = given_policy
        self.install = install
        #: The router's :class:`~routecore.learning.Learner`, made on first use (routecore.learning).
        self.learner: Learner | None = None
