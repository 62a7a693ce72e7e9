"""Converters from other routers' saved configs to routecore config documents.

- :mod:`routecore.importers.semantic_router`: semantic-router route configs (0.x and 1.x),
  ``routecore import semantic-router FILE``. Its thresholds are left in metadata in favour
  of routecore's calibration, with an :class:`ImportNote` warning (``--thresholds`` keeps them).

The readers are config readers (:mod:`routecore.config.semantic_router`) and import no router:
:meth:`routecore.Router.from_semantic_router` builds one from what they read, and
:func:`router_from_semantic_router` here is that call.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from routecore.config.semantic_router import ImportNote, read_semantic_router, write_config

if TYPE_CHECKING:  # imported on use: the command line builds its parser without the routers
    from routecore.routers.router import Router


def router_from_semantic_router(
    path: str | os.PathLike[str], *, thresholds: bool = False, **router_kw: Any
) -> Router:
    """A :class:`routecore.Router` over the routes of a semantic-router config file:
    :meth:`Router.from_semantic_router <routecore.routers.router.Router.from_semantic_router>`."""
    from routecore.routers.router import Router

    return Router.from_semantic_router(path, thresholds=thresholds, **router_kw)


__all__ = ["ImportNote", "read_semantic_router", "router_from_semantic_router", "write_config"]
