"""routecore: native-accelerated semantic routing core for LLM agents.

Main classes: :class:`VectorIndex`, :class:`Encoder` and the routers, each with a call, a
batch call and an async call and a frozen result (docs/routers.md): :class:`Router`
(:class:`Decision`, :class:`ToolBelt`), :class:`ContextRouter` (:class:`Context`),
:class:`KnowledgeRouter` (:class:`KnowledgeSelection`), :class:`LLMToolRouter`
(:class:`ToolRouting`) and :class:`Cascade` (:class:`Decision`); :class:`TurnRouter`
(:class:`Turn`) gives a turn's context, route, tools and collections from one encode.
"""

from typing import TYPE_CHECKING, Any

from routecore._native import __version__
from routecore.errors import *  # noqa: F403
from routecore.errors import RoutecoreError

if TYPE_CHECKING:
    from routecore.config.specs import RouteSpec, RouteThresholds, ToolSpec
    from routecore.core.encoder import Encoder
    from routecore.core.index import SearchResult, VectorIndex
    from routecore.decide.policy import BiasRule, Policy
    from routecore.decide.tables import TableLexical, TableVectors
    from routecore.decision import Alert, Decision, Reason, ToolBelt, ToolChoice
    from routecore.routers.cascade import Cascade
    from routecore.routers.context import Context, ContextRouter, LayerResult
    from routecore.routers.knowledge import KnowledgeRouter, KnowledgeSelection
    from routecore.routers.llm_tools import LLMToolRouter, ToolRouting
    from routecore.routers.metrics_report import MetricsReport
    from routecore.routers.router import Router
    from routecore.routers.routing_metrics import RoutingMetrics
    from routecore.routers.turn import Turn, TurnRouter

#: Names imported on first use (PEP 562): ``import routecore`` loads only the native module and the
#: errors, so a CLI call starts loading its model before numpy and the routers are imported, and a
#: plain ``Router`` never pays for the other routers' modules.
_LAZY = {
    "BiasRule": "decide.policy",
    "Encoder": "core.encoder",
    "Policy": "decide.policy",
    "RouteSpec": "config.specs",
    "RouteThresholds": "config.specs",
    "Router": "routers.router",
    "SearchResult": "core.index",
    "ToolSpec": "config.specs",
    "VectorIndex": "core.index",
    "Cascade": "routers.cascade",
    "Context": "routers.context",
    "ContextRouter": "routers.context",
    "LayerResult": "routers.context",
    "Alert": "decision",
    "Decision": "decision",
    "Reason": "decision",
    "TableLexical": "decide.tables",
    "TableVectors": "decide.tables",
    "ToolBelt": "decision",
    "ToolChoice": "decision",
    "KnowledgeRouter": "routers.knowledge",
    "KnowledgeSelection": "routers.knowledge",
    "LLMToolRouter": "routers.llm_tools",
    "ToolRouting": "routers.llm_tools",
    "RoutingMetrics": "routers.routing_metrics",
    "MetricsReport": "routers.metrics_report",
    "Turn": "routers.turn",
    "TurnRouter": "routers.turn",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'routecore' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"routecore.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


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
    "MetricsReport",
    "Policy",
    "Reason",
    "RouteSpec",
    "RouteThresholds",
    "Router",
    "RoutecoreError",
    "RoutingMetrics",
    "SearchResult",
    "TableLexical",
    "TableVectors",
    "ToolBelt",
    "ToolChoice",
    "ToolRouting",
    "ToolSpec",
    "Turn",
    "TurnRouter",
    "VectorIndex",
    "__version__",
]
