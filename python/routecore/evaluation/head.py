"""Moved to :mod:`routecore.calibrate.linear_head` (the router's hot path uses it); kept as an alias."""

from routecore.calibrate.linear_head import LinearHead

__all__ = ["LinearHead"]
