"""Converters from other routers' saved configs to routecore config documents.

- :mod:`routecore.importers.semantic_router`: semantic-router route configs (0.x and 1.x),
  ``routecore import semantic-router FILE``. Its thresholds are left in metadata in favour
  of routecore's calibration, with an :class:`ImportNote` warning (``--thresholds`` keeps them).
"""

from routecore.importers.semantic_router import (
    ImportNote,
    read_semantic_router,
    router_from_semantic_router,
    write_config,
)

__all__ = ["ImportNote", "read_semantic_router", "router_from_semantic_router", "write_config"]
