"""Ray Serve deployment of a router (``pip install 'routecore[ray]'``).

:func:`deployment` builds a Serve application whose replicas each load one router
(from a config file or a bundle folder) in their constructor::

    from ray import serve
    from routecore.integrations.ray import deployment

    app = deployment(bundle="bundles/it-ops", num_replicas=4, lessons="postgresql://router@db/lessons")
    handle = serve.run(app, name="routecore")  # or: serve run module:app / serve deploy config.yaml
    decision = handle.route.remote("the production server is down").result()   # a Decision
    belt = handle.tools.remote("restart the payment service").result()         # a ToolBelt

Single calls from concurrent clients are gathered by ``@serve.batch`` on each
replica and answered by one :meth:`Router.route_batch` (or ``tools_batch``) call per
batch: each decision is the one :meth:`Router.route` gives for that query.

Over HTTP (Serve's proxy, ``route_prefix``, default ``/``), the replica answers
``POST /route`` (``{"query", "previous", "context_domains", "previous_query"}``), ``POST /tools``
(``{"query", "context_domains", "top_k"}``), ``POST /lessons``
(``{"query", "tool", "use", "context"}``) and ``GET /healthz``, with the JSON of
``routecore serve``'s ``/v1/route`` and ``/v1/tools`` (errors too: ``{"error": {"type", "message"}}``).

``lessons``: a ``postgresql://`` URL (``routecore[postgres]``) that every replica
opens, so a lesson recorded through one replica steers the tool belts of all of
them. A SQLite path is only shared by replicas on the same machine; without it each
replica has no lesson store.

For replicas in one machine or behind a load balancer you do not need Ray: run
N copies of ``routecore serve`` with ``--lessons postgresql://...``.

``import routecore`` never imports this module or Ray.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

from routecore.errors import missing_extra

try:
    from ray import serve
    from ray.serve.deployment import Application
except ImportError as e:  # the extra is not installed
    raise missing_extra("routecore.integrations.ray needs the ray extra", "ray", str(e)) from e

from routecore.decision import Decision, ToolBelt
from routecore.errors import ConfigError, InvalidArgumentError, RoutecoreError

__all__ = ["RouterDeployment", "deployment"]

_MAX_BATCH = 32
_WAIT_S = 0.005


def _result(r: Any) -> Any:
    """A batch answers each request with its result or with the exception it raised."""
    if isinstance(r, BaseException):
        raise r
    return r


@serve.deployment(name="routecore")
class RouterDeployment:
    """One Serve replica: a router loaded once, batched ``route`` and ``tools``."""

    def __init__(
        self,
        config: str | None = None,
        bundle: str | None = None,
        lessons: str | None = None,
        max_batch_size: int = _MAX_BATCH,
        batch_wait_timeout_s: float = _WAIT_S,
        router_options: Mapping[str, Any] | None = None,
    ) -> None:
        from routecore.memory.memory import ExperienceMemory
        from routecore.routers.router import Router

        if (config is None) == (bundle is None):
            raise ConfigError("give exactly one of config= and bundle=")
        kw: dict[str, Any] = dict(router_options or {})
        if lessons:
            kw["memory"] = ExperienceMemory(lessons)
        self.router = (
            Router.from_config(config, **kw) if config is not None else Router.load(str(bundle), **kw)
        )
        batched: tuple[Any, ...] = (self._route_batched, self._tools_batched)  # @serve.batch wrappers
        for method in batched:
            method.set_max_batch_size(max_batch_size)
            method.set_batch_wait_timeout_s(batch_wait_timeout_s)

    # -- Python handle methods ----------------------------------------------------
    async def route(
        self,
        query: str,
        previous: str | None = None,
        context_domains: Sequence[str] = (),
        previous_query: str | None = None,
    ) -> Decision:
        """``Router.route(query, previous=, context_domains=, previous_query=)``, batched with concurrent
        calls."""
        from routecore.serve.batcher import RouteItem

        item = RouteItem(query, previous, tuple(context_domains), previous_query)
        d: Decision = _result(await self._route_batched(item))
        return d

    async def tools(
        self,
        query: str,
        context_domains: Sequence[str] = (),
        top_k: int | None = None,
        *,
        context_domain: str | None = None,
    ) -> ToolBelt:
        """``Router.tools(query, context_domains=, top_k=)``, batched with concurrent calls
        (``context_domain``: deprecated)."""
        from routecore.decide.arguments import context_domains_arg
        from routecore.serve.batcher import ToolsItem

        # One domain passed by position is the old form (context_domain=), with its warning.
        by_position = isinstance(context_domains, str) and context_domain is None
        one = context_domains if by_position else context_domain
        domains = context_domains_arg(() if by_position else context_domains, one, "context_domain")
        b: ToolBelt = _result(await self._tools_batched(ToolsItem(query, domains, top_k)))
        return b

    def record_lesson(self, query: str, tool: str, use: bool, context: str = "") -> int:
        """``Router.record_lesson``: shared by every replica when ``lessons`` is a PostgreSQL URL."""
        return self.router.record_lesson(query, tool, use=use, context=context)

    def replica_pid(self) -> int:
        """This replica's process id (tests, diagnostics)."""
        return os.getpid()

    @serve.batch(max_batch_size=_MAX_BATCH, batch_wait_timeout_s=_WAIT_S)
    async def _route_batched(self, items: list[Any]) -> list[Any]:
        import asyncio

        from routecore.serve.batcher import run_routes

        # one route_batch per context_domains; an exception in the list fails only its own request
        return await asyncio.to_thread(run_routes, self.router, items)

    @serve.batch(max_batch_size=_MAX_BATCH, batch_wait_timeout_s=_WAIT_S)
    async def _tools_batched(self, items: list[Any]) -> list[Any]:
        import asyncio

        from routecore.serve.batcher import run_tools

        return await asyncio.to_thread(
            run_tools, self.router, items
        )  # one tools_batch per (context_domains, top_k)

    # -- HTTP -------------------------------------------------------------------------
    async def __call__(self, request: Any) -> Any:
        """``POST /route``, ``POST /tools``, ``POST /lessons``, ``GET /healthz`` (a Starlette request)."""
        from routecore.serve.http import error_response, json_response

        path = request.url.path.rstrip("/").rsplit("/", 1)[-1]
        if request.method == "GET" and path == "healthz":
            return json_response({"status": "ok"})
        if request.method != "POST" or path not in ("route", "tools", "lessons"):
            return error_response(404, "NotFound", f"{request.method} {request.url.path}")
        try:
            body = await request.json()
            if not isinstance(body, dict) or not isinstance(body.get("query"), str):
                raise InvalidArgumentError("the body must be a JSON object with a string 'query'")
            if path == "route":
                domains = body.get("context_domains") or ()
                d = await self.route(body["query"], body.get("previous"), domains, body.get("previous_query"))
                return json_response(d.to_dict())
            if path == "tools":
                domains, one = body.get("context_domains") or (), body.get("context_domain")
                belt = await self.tools(body["query"], domains, body.get("top_k"), context_domain=one)
                return json_response(belt.to_dict())
            lesson = self.record_lesson(
                body["query"], str(body["tool"]), bool(body["use"]), str(body.get("context", ""))
            )
            return json_response({"id": lesson})
        except (
            RoutecoreError,
            ValueError,
            KeyError,
            TypeError,
        ) as e:  # a bad argument, bad JSON, a missing field
            return error_response(422, type(e).__name__, str(e))


def deployment(
    config: str | os.PathLike[str] | None = None,
    bundle: str | os.PathLike[str] | None = None,
    *,
    num_replicas: int = 2,
    autoscaling_config: Mapping[str, Any] | None = None,
    max_batch_size: int = _MAX_BATCH,
    batch_wait_timeout_s: float = _WAIT_S,
    lessons: str | os.PathLike[str] | None = None,
    ray_actor_options: Mapping[str, Any] | None = None,
    router_options: Mapping[str, Any] | None = None,
    name: str = "routecore",
    max_ongoing_requests: int | None = None,
) -> Application:
    """A Serve application (``serve.run(app)``) of a router from ``config`` or ``bundle``.

    Args:
        num_replicas: fixed replica count; ignored when ``autoscaling_config`` is given
            (Serve's ``min_replicas``, ``max_replicas``, ``target_ongoing_requests``...).
        max_batch_size, batch_wait_timeout_s: the ``@serve.batch`` of each replica.
        lessons: the lesson store every replica opens (a ``postgresql://`` URL to share it).
        ray_actor_options: per replica, e.g. ``{"num_cpus": 1}``.
        router_options: more keyword arguments for ``Router.from_config`` / ``Router.load``
            (they must pickle: the replica builds the router in its own process).
    Paths must be readable where the replicas run (a shared volume, or a bundle
    baked into the image/``runtime_env``).
    """
    if (config is None) == (bundle is None):
        raise ConfigError("give exactly one of config= and bundle=")
    if max_batch_size < 1 or batch_wait_timeout_s < 0:
        raise InvalidArgumentError("max_batch_size must be >= 1 and batch_wait_timeout_s >= 0")
    opts: dict[str, Any] = {"name": name}
    if autoscaling_config is not None:
        opts["autoscaling_config"] = dict(autoscaling_config)
    else:
        opts["num_replicas"] = num_replicas
    if ray_actor_options is not None:
        opts["ray_actor_options"] = dict(ray_actor_options)
    if max_ongoing_requests is not None:
        opts["max_ongoing_requests"] = max_ongoing_requests

    def path(p: str | os.PathLike[str] | None) -> str | None:
        return None if p is None else os.path.abspath(os.fspath(p))

    lesson_store = (
        None if lessons is None else (str(lessons) if str(lessons).startswith("postgres") else path(lessons))
    )
    dep: Any = RouterDeployment  # a serve.Deployment (the decorator's type is not precise)
    app: Application = dep.options(**opts).bind(
        path(config),
        path(bundle),
        lesson_store,
        max_batch_size,
        batch_wait_timeout_s,
        dict(router_options or {}),
    )
    return app
