"""The sidecar's Starlette app: :func:`create_app`.

Endpoints (JSON; the bodies are :mod:`routecore.serve.openapi`'s shapes):

- ``POST /v1/route``, ``POST /v1/route/batch``, ``POST /v1/tools``: a
  :class:`~routecore.decision.Decision` / :class:`~routecore.decision.ToolBelt`
  as ``to_dict()`` writes it (``{"decisions": [...]}`` for a batch);
- ``POST /v1/learn``: ``Router.learn`` (routecore.updates.learning), with the token rules of the others;
  ``GET /v1/learned`` (``Router.learned``, ``held_for_review``) and ``POST /v1/learned/forget`` (``forget``);
- ``POST /v1/tools/more``: ``request_more_tools`` in a session keyed by a
  client-chosen id, kept ``session_ttl`` seconds after its last use, with the
  session's circuit breaker; ``POST /v1/tools`` with a ``session_id`` opens one;
- ``POST /v1/lessons``: ``Router.record_lesson`` (an in-memory store unless a
  memory is given: ``routecore serve --lessons PATH``);
- ``GET /healthz`` (the process answers), ``GET /readyz`` (503 until the
  router is loaded), ``GET /metrics`` (Prometheus), ``GET /openapi.json``.

The handlers are :mod:`routecore.serve.endpoints`'s; the state they share (the router, its
hot reload, the micro-batchers, the shutdown) is :class:`routecore.serve.server.Server`'s.

Errors are ``{"error": {"type": ..., "message": ...}}`` with a 4xx status that
names the problem: 400 not JSON, 401 token, 404 path or session, 405 method,
408 body too slow (``--body-timeout``), 413 body size, 422 a field (type, query
length, batch size, unknown route or tool), 503 not ready. A 500 is a bug
(logged with its traceback). Slow heads and too many connections are refused
before the app (:mod:`routecore.serve.connections`).

With a ``token``, every path but ``/healthz`` and ``/readyz`` needs
``Authorization: Bearer <token>``.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Optional

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware

from routecore.errors import ConfigError
from routecore.serve.batcher import Batching
from routecore.serve.endpoints import endpoints
from routecore.serve.http import Gate, Limits, http_error
from routecore.serve.server import Server

# Re-exported (``X as X``): the names tests and callers import from this module.
from routecore.serve.sessions import SessionStore as SessionStore
from routecore.serve.sources import DEFAULT_RELOAD_SETTLE, source_of
from routecore.serve.sources import RouterSource as RouterSource

__all__ = ["Batching", "Limits", "RouterSource", "create_app"]


def create_app(
    router_source: Any,
    *,
    token: Optional[str] = None,
    limits: Limits = Limits(),
    batching: Batching = Batching(),
    memory: Any = None,
    session_ttl: float = 300.0,
    max_sessions: int = 10_000,
    reload_poll_s: float = 2.0,
    threads: int = 8,
    version: Optional[str] = None,
    wait_for_load: bool = False,
    reload_settle_s: float = DEFAULT_RELOAD_SETTLE,
) -> Starlette:
    """The sidecar's ASGI app (run it with uvicorn; ``routecore serve`` does).

    Args:
        router_source: a :class:`RouterSource`, a config file or bundle folder path, a
            :class:`~routecore.routers.router.Router` (never reloaded) or a callable returning
            one (called again on each reload: SIGHUP or ``app.state.server.reload``).
        token: the bearer token every path but ``/healthz`` and ``/readyz`` needs (None: none).
        limits: body, query and batch limits (:class:`Limits`).
        batching: micro-batching (:class:`~routecore.serve.batcher.Batching`).
        memory: the lesson store (:class:`~routecore.memory.memory.ExperienceMemory`); default
            an in-memory one, shared by every reloaded router.
        session_ttl: seconds a ``request_more_tools`` session lives after its last use.
        reload_poll_s: how often the config or bundle files are checked for a change (0: never).
        reload_settle_s: how long a file written in place must stay unchanged before it is loaded
            (a file replaced by a rename is loaded at once: :class:`~routecore.serve.sources.ChangeWatch`).
        threads: worker threads for the router's calls.
        wait_for_load: load the router before the server listens (the lifespan fails if it
            cannot) instead of in the background with ``/readyz`` at 503 meanwhile. ``routecore
            serve --workers N`` sets it: uvicorn's supervisor replaces the workers one by one on
            SIGHUP, and a new worker then takes no request before its router is loaded.
    """
    if token is not None and not token.strip():
        raise ConfigError("the bearer token is empty")
    if version is None:
        from routecore._native import __version__

        version = str(__version__)
    srv = Server(
        source_of(router_source),
        token=token.strip() if token else None,
        limits=limits,
        batching=batching,
        memory=memory,
        session_ttl=session_ttl,
        max_sessions=max_sessions,
        reload_poll_s=reload_poll_s,
        threads=threads,
        version=version,
        wait_for_load=wait_for_load,
        reload_settle_s=reload_settle_s,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await srv.start()
        try:
            yield
        finally:
            await srv.stop()

    app = Starlette(
        routes=endpoints(srv),
        middleware=[Middleware(Gate, token=srv.token, metrics=srv.metrics)],
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error},
    )
    app.state.server = srv
    return app
