"""Moved to :mod:`routecore.linear_head` (the router's hot path uses it); kept as an alias."""

from routecore.linear_head import LinearHead

__all__ = ["LinearHead"]
