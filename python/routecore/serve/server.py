"""The sidecar's state: :class:`Server`, the loaded router, its reloads, the micro-batchers and
the worker threads of one app (``app.state.server``; :func:`routecore.serve.app.create_app` makes it).

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
from typing import Any, Callable, Hashable, Optional, Sequence

from starlette.requests import Request

from routecore.decision import Decision
from routecore.errors import ConfigError
from routecore.serve.batcher import Batching, MicroBatcher, RouteItem, ServedRouter, run_routes, run_tools
from routecore.serve.http import ApiError, Limits, read_body
from routecore.serve.metrics import Metrics
from routecore.serve.sessions import SessionStore
from routecore.serve.sources import DEFAULT_RELOAD_SETTLE, ChangeWatch

log = logging.getLogger("routecore.serve")

__all__ = ["Server"]


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
        self.router: Optional[ServedRouter] = None
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

    @property
    def memory(self) -> Any:
        if self._memory is None:
            from routecore.memory.memory import ExperienceMemory

            self._memory = ExperienceMemory(":memory:")
        return self._memory

    def current(self) -> ServedRouter:
        r = self.router
        if r is None:
            raise ApiError(
                503,
                "NotReady",
                f"the router is not loaded yet{': ' + self.load_error if self.load_error else ''}",
                {"Retry-After": "1"},
            )
        return r

    def fan_out(self, router: ServedRouter) -> Optional[ThreadPoolExecutor]:
        """Threads for the LLM fallback's calls of a batch (only for routers with an LLM)."""
        if router.llm is None:
            return None
        if self._llm_pool is None:
            self._llm_pool = ThreadPoolExecutor(16, thread_name_prefix="routecore-llm")
        return self._llm_pool

    def _run_routes(self, router: ServedRouter, items: Sequence[RouteItem]) -> list[Decision | Exception]:
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
                raise ConfigError(f"the router did not load: {self.load_error}")
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
                f"{field} is {len(text)} characters; "
                f"the limit is {self.limits.max_query_chars} (--max-query-chars)",
            )

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        assert self.pool is not None
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
