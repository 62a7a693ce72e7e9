"""The example configs shipped with routecore: paths usable from any working directory.

``IT_OPS_ROUTES``: INCIDENT / RAG / GENERAL routes in French and English, with the
IT-operations bias rules (domain rules live in examples, not in library defaults).
``TOOLS``: a small home-automation and system tool catalog with core and discovery tools.
``LLM_TOOLS``: an operations tool catalog with an ``llm:`` server and an ``llm_tools:``
section, for :meth:`routecore.routers.llm_tools.LLMToolRouter.from_config`.
``KNOWLEDGE``: knowledge collections with a ``knowledge:`` section, for ``KnowledgeRouter.from_config``.
``CONTEXT``: intent, urgency, sensitivity and domain layers with entities, for ``ContextRouter.from_config``.
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent
IT_OPS_ROUTES = HERE / "it_ops_routes.yaml"
TOOLS = HERE / "tools.yaml"
LLM_TOOLS = HERE / "llm_tools.yaml"
KNOWLEDGE = HERE / "knowledge.yaml"
CONTEXT = HERE / "context.yaml"

__all__ = ["CONTEXT", "IT_OPS_ROUTES", "KNOWLEDGE", "LLM_TOOLS", "TOOLS"]
