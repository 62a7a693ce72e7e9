"""routecore: native-accelerated semantic routing core for LLM agents.

Main classes: :class:`VectorIndex`, :class:`Encoder` and :class:`Router`.
"""

from routecore._native import __version__
from routecore.encoder import Encoder
from routecore.errors import *  # noqa: F403
from routecore.errors import RoutecoreError
from routecore.index import SearchResult, VectorIndex
from routecore.policy import BiasRule, Policy
from routecore.router import Router
from routecore.routing_metrics import RoutingMetrics
from routecore.specs import RouteSpec, ToolSpec

__all__ = [
    "BiasRule",
    "Encoder",
    "Policy",
    "RouteSpec",
    "Router",
    "RoutecoreError",
    "RoutingMetrics",
    "SearchResult",
    "ToolSpec",
    "VectorIndex",
    "__version__",
]
