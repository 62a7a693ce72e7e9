"""Converters from other routers' saved configs to routecore config documents.

- :mod:`routecore.importers.semantic_router`: semantic-router route configs (0.x and 1.x),
  ``routecore import semantic-router FILE``.
"""

from routecore.importers.semantic_router import read_semantic_router, router_from_semantic_router, write_config

__all__ = ["read_semantic_router", "router_from_semantic_router", "write_config"]
