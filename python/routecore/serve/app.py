"""The sidecar's Starlette app: :func:`create_app`.

Endpoints (JSON; the bodies are :mod:`routecore.serve.openapi`'s shapes):

- ``POST /v1/route``, ``POST /v1/route/batch``, ``POST /v1/tools``: a
  :class:`~routecore.decision.Decision` / :class:`~routecore.decision.ToolBelt`
  as ``to_dict()`` writes it (``{"decisions": [...]}`` for a batch);
- ``POST /v1/learn``: ``Router.learn`` (routecore.updates.learning), with the token rules of the others;
- ``POST /v1/tools/more``: ``request_more_tools`` in a session keyed by a
  client-chosen id, kept ``session_ttl`` seconds after its last use, with the
  session's circuit breaker; ``POST /v1/tools`` with a ``session_id`` opens one;
- ``POST /v1/lessons``: ``Router.record_lesson`` (an in-memory store unless a
  memory is given: ``routecore serve --lessons PATH``);
- ``GET /healthz`` (the process answers), ``GET /readyz`` (503 until the
  router is loaded), ``GET /metrics`` (Prometheus), ``GET /openapi.json``.

Errors are ``{"error": {"type": ..., "message": ...}}`` with a 4xx status that
names the problem: 400 not JSON, 401 token, 404 path or session, 405 method,
408 body too slow (``--body-timeout``), 413 body size, 422 a field (type, query
length, batch size, unknown route or tool), 503 not ready. A 500 is a bug
(logged with its traceback). Slow heads and too many connections are refused
before the app (:mod:`routecore.serve.connections`).

With a ``token``, every path but ``/healthz`` and ``/readyz`` needs
``Authorization: Bearer <token>``.

**Loading and hot reload.** The router loads in a thread once the server is up
(``/healthz`` answers meanwhile; ``/readyz`` turns 200 when it is in place).
SIGHUP, or a change of the config file (or the bundle's ``bundle.json``) seen
by a poll every ``reload_poll_s`` seconds, loads a new router beside the old
one with the same encoder and lesson store, then swaps the reference: a request
or a micro-batch uses the router that was current when it started, so no
request fails or mixes two routers. A load that fails keeps the old router
(``routecore_reloads_total{result="failed"}``, ``/readyz`` reason, log). A file
replaced by a rename is loaded at the next poll; one written in place only once it
has stayed unchanged ``reload_settle_s`` seconds (it may be half-written before).

**Shutdown.** uvicorn stops accepting connections on SIGTERM/SIGINT and waits
(``--graceful-timeout``) for the requests in flight; the app then drains its
micro-batches and worker threads before the process exits.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable, Hashable, Optional

import msgspec
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from routecore.decision import plain
from routecore.errors import ConfigError, InvalidArgumentError, MemoryStoreError, RoutecoreError
from routecore.serve import openapi
from routecore.serve.batcher import (
    Batching,
    MicroBatcher,
    RouteItem,
    ToolsItem,
    route_many,
    route_one,
    run_routes,
    run_tools,
    tools_one,
)
from routecore.serve.http import (
    ApiError,
    Gate,
    Limits,
    encode_json,
    error_response,
    http_error,
    json_response,
    read_body,
    scrub,
)
from routecore.serve.metrics import Metrics
from routecore.serve.sessions import SessionStore
from routecore.serve.sources import DEFAULT_RELOAD_SETTLE, ChangeWatch, RouterSource, source_of

log = logging.getLogger("routecore.serve")

__all__ = ["Batching", "Limits", "RouterSource", "create_app"]

# -- the server's state ---------------------------------------------------------------


class Server:
    """The loaded router, its reloads, the batchers and worker threads of one app (``app.state.server``)."""

    def __init__(
        self,
        source: Any,
        *,
        token: Optional[str],
        limits: Limits,
        batching: Batching,
        memory: Any,
        session_ttl: float,
        max_sessions: int,
        reload_poll_s: float,
        threads: int,
        version: str,
        wait_for_load: bool = False,
        reload_settle_s: float = DEFAULT_RELOAD_SETTLE,
    ):
        self.source, self.token, self.limits, self.batching = source, token, limits, batching
        self.wait_for_load = wait_for_load
        self.version = version
        self.router: Any = None
        self.generation = 0
        self.load_error: Optional[str] = None
        self.reload_poll_s = reload_poll_s
        self.watch = ChangeWatch(reload_settle_s)
        self.threads = threads
        self.metrics = Metrics(lambda: getattr(self.router, "encoder", None))
        self.sessions = SessionStore(session_ttl, max_sessions, self.metrics)
        self._memory = memory
        self._stamp: Hashable = None
        self._reloading = False
        self._again = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sighup = False
        self.pool: Optional[ThreadPoolExecutor] = None
        self._loader: Optional[ThreadPoolExecutor] = None
        self._llm_pool: Optional[ThreadPoolExecutor] = None
        self.route_batcher: Optional[MicroBatcher[Any]] = None
        self.tools_batcher: Optional[MicroBatcher[Any]] = None
        self._openapi: Optional[bytes] = None

    @property
    def memory(self) -> Any:
        if self._memory is None:
            from routecore.memory.memory import ExperienceMemory

            self._memory = ExperienceMemory(":memory:")
        return self._memory

    def current(self) -> Any:
        r = self.router
        if r is None:
            raise ApiError(
                503,
                "NotReady",
                f"the router is not loaded yet{': ' + self.load_error if self.load_error else ''}",
                {"Retry-After": "1"},
            )
        return r

    def fan_out(self, router: Any) -> Optional[ThreadPoolExecutor]:
        """Threads for the LLM fallback's calls of a batch (only for routers with an LLM)."""
        if router.llm is None:
            return None
        if self._llm_pool is None:
            self._llm_pool = ThreadPoolExecutor(16, thread_name_prefix="routecore-llm")
        return self._llm_pool

    def _run_routes(self, router: Any, items: Any) -> list[Any]:
        return run_routes(router, items, self.fan_out(router))

    # -- lifecycle --------------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="routecore-serve")
        self._loader = ThreadPoolExecutor(1, thread_name_prefix="routecore-load")
        b = self.batching
        if b.enabled:
            self.route_batcher = MicroBatcher(
                self._run_routes,
                self.current,
                self.pool,
                window_ms=b.window_ms,
                max_batch=b.max_batch,
                on_batch=self.metrics.batch_size.labels("route").observe,
            )
            self.tools_batcher = MicroBatcher(
                run_tools,
                self.current,
                self.pool,
                window_ms=b.window_ms,
                max_batch=b.max_batch,
                on_batch=self.metrics.batch_size.labels("tools").observe,
            )
        if (
            self.wait_for_load
        ):  # uvicorn listens only once the lifespan has started: no request before the router
            await self.reload("start")
            if self.router is None:
                raise RuntimeError(f"the router did not load: {self.load_error}")
        else:
            self._spawn(self.reload("start"))
        if self.reload_poll_s > 0 and self.source.stamp() is not None:
            self._spawn(self._poll())
        try:
            loop.add_signal_handler(signal.SIGHUP, lambda: self._spawn(self.reload("SIGHUP")))
            self._sighup = True
        except (
            ValueError,
            RuntimeError,
            NotImplementedError,
            AttributeError,
        ):  # not the main thread, or no SIGHUP (Windows)
            log.debug("no SIGHUP handler: the event loop is not in the main thread")

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return t

    async def stop(self) -> None:
        if self._sighup:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        for t in list(self._tasks):
            t.cancel()
        for b in (self.route_batcher, self.tools_batcher):
            if b is not None:
                await b.drain()
        if self._loader is not None:  # a load still running is not waited for (its router is never used)
            self._loader.shutdown(wait=False, cancel_futures=True)
        pools = [p for p in (self.pool, self._llm_pool) if p is not None]

        def shutdown() -> None:
            for p in pools:
                p.shutdown(wait=True)

        await asyncio.get_running_loop().run_in_executor(None, shutdown)
        # The lesson store stays open: a router given to create_app may keep using it.

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.reload_poll_s)
            if not self._reloading and self.watch.due(self._stamp, self.source.stamp()):
                await self.reload("file changed")

    async def reload(self, why: str) -> None:
        """Load the router again beside the one serving, then swap them (one reload at a time;
        a request for one while it runs makes it run again)."""
        if self._reloading:
            self._again = True
            return
        self._reloading = True
        loop = asyncio.get_running_loop()
        try:
            while True:
                self._again = False
                stamp = self.source.stamp()  # before reading: a change during the load triggers another
                t0 = time.perf_counter()
                try:
                    router = await loop.run_in_executor(self._loader, self.source.load, self.memory)
                except Exception as e:  # noqa: BLE001 - keep serving the old router
                    self.load_error = f"{type(e).__name__}: {' '.join(str(e).split())}"
                    self.metrics.reloads.labels("failed").inc()
                    log.error(
                        "router load (%s) failed, %s: %s",
                        why,
                        "keeping the previous router" if self.router else "not ready",
                        self.load_error,
                    )
                else:
                    self.router = router  # the swap: one reference, read once per request or batch
                    self.generation += 1
                    self.load_error = None
                    self.metrics.reloads.labels("ok").inc()
                    self.metrics.generation.set(self.generation)
                    self.metrics.ready.set(1)
                    log.info(
                        "router loaded (%s, generation %d) in %.2f s",
                        why,
                        self.generation,
                        time.perf_counter() - t0,
                    )
                self._stamp = stamp
                if not self._again:
                    break
        finally:
            self._reloading = False

    # -- request helpers --------------------------------------------------------------
    async def body(self, request: Request, shape: type) -> Any:
        return await read_body(request, shape, self.limits)

    def check_query(self, text: Optional[str], field: str) -> None:
        if text is not None and len(text) > self.limits.max_query_chars:
            raise ApiError(
                422,
                "QueryTooLong",
                f"{field} is {len(text)} characters; the limit is {self.limits.max_query_chars} (--max-query-chars)",
            )

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        assert self.pool is not None
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)


# -- endpoints ------------------------------------------------------------------------


def _endpoints(srv: Server) -> list[Route]:
    m = srv.metrics

    async def route(request: Request) -> Response:
        t0 = time.perf_counter()
        req = await srv.body(request, openapi.RouteRequest)
        srv.check_query(req.query, "query")
        router = srv.current()
        if req.previous is not None and router.route_specs and req.previous not in router.route_table.by_name:
            raise ApiError(
                422,
                "InvalidArgumentError",
                f"unknown previous route {req.previous!r}; known: {sorted(router.route_table.by_name)}",
            )
        item = RouteItem(req.query, req.previous, tuple(req.context_domains))
        d = (
            await srv.route_batcher.submit(item)
            if srv.route_batcher is not None
            else await srv.run(route_one, router, item)
        )
        m.observe_decision("/v1/route", d, time.perf_counter() - t0)
        return json_response(d.to_dict())

    async def route_batch(request: Request) -> Response:
        t0 = time.perf_counter()
        req = await srv.body(request, openapi.RouteBatchRequest)
        n = len(req.queries)
        if n > srv.limits.max_batch:
            raise ApiError(
                422,
                "BatchTooLarge",
                f"{n} queries; the limit is {srv.limits.max_batch} per batch (--max-batch-queries)",
            )
        for i, q in enumerate(req.queries):
            srv.check_query(q, f"queries[{i}]")
        prev = req.previous
        if isinstance(prev, list):
            if len(prev) != n:
                raise ApiError(422, "ValidationError", f"previous holds {len(prev)} routes for {n} queries")
            previous = prev
        else:
            previous = [prev] * n
        router = srv.current()
        ds = (
            await srv.run(
                route_many, router, req.queries, previous, tuple(req.context_domains), srv.fan_out(router)
            )
            if n
            else []
        )
        dt = time.perf_counter() - t0
        for d in ds:
            m.observe_decision("/v1/route/batch", d, dt / n)
        # Up to max_batch decisions to write: off the event loop.
        body = await srv.run(lambda: encode_json({"decisions": [d.to_dict() for d in ds]}))
        return Response(body, media_type="application/json")

    async def tools(request: Request) -> Response:
        t0 = time.perf_counter()
        req = await srv.body(request, openapi.ToolsRequest)
        srv.check_query(req.query, "query")
        router = srv.current()
        if req.session_id is not None:
            if req.top_k is not None:
                raise ApiError(
                    422,
                    "ValidationError",
                    "top_k cannot be given with session_id: a session's belt uses the policy's top_k",
                )
            ts = await srv.run(lambda: router.tool_session(req.query, context_domain=req.context_domain))
            s = srv.sessions.put(req.session_id, ts)
            m.observe_stages("/v1/tools", ts.belt, time.perf_counter() - t0)
            return json_response({**ts.belt.to_dict(), "session": srv.sessions.state(req.session_id, s)})
        item = ToolsItem(req.query, req.context_domain, req.top_k)
        belt = (
            await srv.tools_batcher.submit(item)
            if srv.tools_batcher is not None
            else await srv.run(tools_one, router, item)
        )
        m.observe_stages("/v1/tools", belt, time.perf_counter() - t0)
        return json_response(belt.to_dict())

    async def tools_more(request: Request) -> Response:
        req = await srv.body(request, openapi.MoreToolsRequest)
        srv.check_query(req.query, "query")
        srv.check_query(req.request, "request")
        s = srv.sessions.get(req.session_id)
        if s is None:
            if req.query is None:
                raise ApiError(
                    404,
                    "UnknownSession",
                    f"no session {req.session_id!r} (never opened, or expired after "
                    f"{srv.sessions.ttl:g} s unused); give query to open one",
                )
            router = srv.current()
            ts = await srv.run(lambda: router.tool_session(req.query, context_domain=req.context_domain))
            s = srv.sessions.get(req.session_id) or srv.sessions.put(
                req.session_id, ts
            )  # another request may have opened it meanwhile
        async with s.lock:  # one request_more_tools at a time per session
            ts = s.tool_session
            more = await srv.run(ts.request_more_tools, req.request)
            state = srv.sessions.state(req.session_id, s)
            if state["breaker_open"] and not s.tripped:
                s.tripped = True
                m.breaker_trips.inc()
        return json_response(
            {"tools": [plain(t) for t in more], "alerts": [plain(a) for a in ts.alerts], "session": state}
        )

    async def lessons(request: Request) -> Response:
        req = await srv.body(request, openapi.LessonRequest)
        srv.check_query(req.query, "query")
        router = srv.current()
        query, context = scrub(req.query), scrub(req.context)  # stored text: no lone surrogate
        lesson_id = await srv.run(lambda: router.record_lesson(query, req.tool, use=req.use, context=context))
        return json_response({"id": lesson_id}, 201)

    async def learn(request: Request) -> Response:
        req = await srv.body(request, openapi.LearnRequest)
        srv.check_query(req.query, "query")
        router = srv.current()
        query = scrub(req.query)
        res = await srv.run(lambda: router.learn(query, req.route, source=req.source, force=req.force))
        body = openapi.LearnResponse(
            status=res.status,
            route=res.route,
            generation=res.generation,
            nearest=res.nearest,
            cut=res.cut,
            id=res.exemplar.id if res.exemplar is not None else None,
            decided=res.review.decided if res.review is not None else None,
            evicted=[e.id for e in res.evicted],
        )
        return json_response(msgspec.to_builtins(body))

    async def healthz(request: Request) -> Response:
        return json_response({"status": "ok"})

    async def readyz(request: Request) -> Response:
        ready = srv.router is not None
        body: dict[str, Any] = {"ready": ready, "generation": srv.generation}
        if not ready:
            body["reason"] = f"load failed: {srv.load_error}" if srv.load_error else "loading"
        return json_response(body, 200 if ready else 503)

    async def metrics(request: Request) -> Response:
        return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)

    async def openapi_json(request: Request) -> Response:
        if srv._openapi is None:
            srv._openapi = msgspec.json.encode(openapi.document(srv.version))
        return Response(srv._openapi, media_type="application/json")

    def guarded(fn: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def handler(request: Request) -> Response:
            try:
                return await fn(request)  # type: ignore[no-any-return]
            except ApiError as e:
                return error_response(e.status, e.kind, e.message, e.headers)
            except (InvalidArgumentError, ConfigError) as e:
                return error_response(422, type(e).__name__, " ".join(str(e).split()))
            except MemoryStoreError as e:
                return error_response(503, type(e).__name__, " ".join(str(e).split()))
            except RoutecoreError as e:
                log.exception("routecore error answering %s", request.url.path)
                return error_response(500, type(e).__name__, " ".join(str(e).split()))
            except Exception as e:  # noqa: BLE001 - a bug: say so in JSON, log the traceback
                log.exception("bug answering %s", request.url.path)
                return error_response(500, "InternalError", f"{type(e).__name__}: {e}")

        return handler

    post = ["POST"]
    return [
        Route("/v1/route", guarded(route), methods=post),
        Route("/v1/route/batch", guarded(route_batch), methods=post),
        Route("/v1/tools", guarded(tools), methods=post),
        Route("/v1/tools/more", guarded(tools_more), methods=post),
        Route("/v1/lessons", guarded(lessons), methods=post),
        Route("/v1/learn", guarded(learn), methods=post),
        Route("/healthz", guarded(healthz), methods=["GET"]),
        Route("/readyz", guarded(readyz), methods=["GET"]),
        Route("/metrics", guarded(metrics), methods=["GET"]),
        Route("/openapi.json", guarded(openapi_json), methods=["GET"]),
    ]


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
        routes=_endpoints(srv),
        middleware=[Middleware(Gate, token=srv.token, metrics=srv.metrics)],
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error},
    )
    app.state.server = srv
    return app
