"""routecore: native-accelerated semantic routing core for LLM agents.

Main classes: :class:`VectorIndex`, :class:`Encoder` and the routers, each with a call, a
batch call and an async call and a frozen result (docs/routers.md): :class:`Router`
(:class:`Decision`, :class:`ToolBelt`), :class:`ContextRouter` (:class:`Context`),
:class:`KnowledgeRouter` (:class:`KnowledgeSelection`), :class:`LLMToolRouter`
(:class:`ToolRouting`) and :class:`Cascade` (:class:`Decision`); :class:`TurnRouter`
(:class:`Turn`) gives a turn's context, route, tools and collections from one encode.
"""

from routecore._native import __version__
from routecore.cascade import Cascade
from routecore.context import Context, ContextRouter, LayerResult
from routecore.decision import Alert, Decision, Reason, ToolBelt, ToolChoice
from routecore.encoder import Encoder
from routecore.errors import *  # noqa: F403
from routecore.errors import RoutecoreError
from routecore.index import SearchResult, VectorIndex
from routecore.knowledge import KnowledgeRouter, KnowledgeSelection
from routecore.llm_tools import LLMToolRouter, ToolRouting
from routecore.policy import BiasRule, Policy
from routecore.router import Router
from routecore.routing_metrics import RoutingMetrics
from routecore.specs import RouteSpec, ToolSpec
from routecore.turn import Turn, TurnRouter

__all__ = [
    "Alert",
    "BiasRule",
    "Cascade",
    "Context",
    "ContextRouter",
    "Decision",
    "Encoder",
    "KnowledgeRouter",
    "KnowledgeSelection",
    "LLMToolRouter",
    "LayerResult",
    "Policy",
    "Reason",
    "RouteSpec",
    "Router",
    "RoutecoreError",
    "RoutingMetrics",
    "SearchResult",
    "ToolBelt",
    "ToolChoice",
    "ToolRouting",
    "ToolSpec",
    "Turn",
    "TurnRouter",
    "VectorIndex",
    "__version__",
]
