"""``routecore serve``: the router as an HTTP sidecar (``pip install routecore[serve]``).

A Starlette app run by uvicorn: versioned JSON endpoints whose bodies are the
Python API's own objects (:meth:`Decision.to_dict <routecore.decision.Decision.to_dict>`,
:class:`~routecore.decision.ToolBelt`), micro-batching of concurrent requests
(:mod:`routecore.serve.batcher`), Prometheus metrics (:mod:`routecore.serve.metrics`),
an OpenAPI document (:mod:`routecore.serve.openapi`), the app and its endpoints
(:mod:`routecore.serve.app`, :mod:`routecore.serve.endpoints`), hot reload and graceful
shutdown (:mod:`routecore.serve.server`) and the command (:mod:`routecore.serve.cli`).

``import routecore`` never imports this package, and importing this package
imports neither Starlette nor uvicorn: :func:`create_app` loads them when called.
"""

from __future__ import annotations

from typing import Any

# Re-exported (``X as X``): the micro-batching defaults the command's parser reads.
from routecore.serve.defaults import DEFAULT_MAX_BATCH as DEFAULT_MAX_BATCH
from routecore.serve.defaults import DEFAULT_WINDOW_MS as DEFAULT_WINDOW_MS

__all__ = ["Batching", "Limits", "RouterSource", "create_app"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        try:
            from routecore.serve import app
        except ModuleNotFoundError as e:
            if (e.name or "").split(".")[0] not in ("starlette", "uvicorn"):
                raise
            from routecore.errors import missing_extra

            raise missing_extra("routecore.serve needs the serve extra", "serve", str(e)) from e

        return getattr(app, name)
    raise AttributeError(f"module 'routecore.serve' has no attribute {name!r}")
