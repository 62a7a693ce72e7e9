"""Micro-batching: concurrent requests of one kind encoded and scored together.

A :class:`MicroBatcher` holds the requests of one kind (routes, or tools) that
wait for the encoder, and runs them as batches in a worker thread
(``Router.route_batch`` / ``tools_batch``: one encoder call), one batch at a
time; each request's future gets its own result.

- While a batch runs, new requests queue; when it ends, the next batch takes
  everything queued (up to ``max_batch``). Under load, batches form by themselves.
- A batch starts as soon as as many requests wait as the previous batch held
  (if it ended within :data:`RECENT_S`; else one), or when ``window_ms`` has
  passed since the first waiting request arrived. So a lone client never waits
  for the window (its batches hold one request), while at 8 or 32 clients the
  next batch waits up to ``window_ms`` for the clients that have just been
  answered: the event loop parses their requests one after the other (~0.3-0.5 ms
  each), so they come back spread over a few milliseconds. At 8 clients, a 2 ms
  window made batches of ~4 (two half-groups taking turns) and 103-119 req/s;
  5 ms and 10 ms made batches of ~6.8 and 171-182 req/s (benches/serve_load.py,
  2-core machine). One client is unaffected (batches of one never wait).

Requests whose shared arguments differ (``context_domains`` for routes,
``context_domains`` and ``top_k`` for tools) are grouped by a key and run as one
batch call per key inside the same worker-thread job. A batch call that raises
is re-run one request at a time, so one bad request fails alone.

Every decision is the one the unbatched call gives (``route_batch`` is batch
invariant); only its ``timings`` differ (a batch shares its encoder time out).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generic, Hashable, Optional, Sequence, Tuple, TypeVar, Union

from routecore.decision import Decision, ToolBelt
from routecore.errors import ConfigError
from routecore.serve.defaults import (  # measured with benches/serve_load.py (see above)
    DEFAULT_MAX_BATCH,
    DEFAULT_WINDOW_MS,
)

if TYPE_CHECKING:
    from routecore.routers.router import Router
    from routecore.serve.fast_tier import FastTier

T = TypeVar("T")

#: What ``routecore serve`` serves: a router, or a cascade behind its fast tier (``--fast-model``).
ServedRouter = Union["Router", "FastTier"]

#: A batch that ended this recently (seconds) sets how many requests the next one waits for.
RECENT_S = 0.1


@dataclass(frozen=True)
class Batching:
    """Micro-batching settings: ``enabled`` (off: one worker-thread call per request),
    ``window_ms`` (the longest a waiting request is held for companions) and ``max_batch``."""

    enabled: bool = True
    window_ms: float = DEFAULT_WINDOW_MS
    max_batch: int = DEFAULT_MAX_BATCH

    def __post_init__(self) -> None:
        """Raises:
        ConfigError: a window outside 0-1000 ms or a batch size outside 1-4096 (``--batch-window-ms``,
            ``--max-batch``)."""
        if not 0 <= self.window_ms <= 1000:
            raise ConfigError(f"--batch-window-ms must be between 0 and 1000, got {self.window_ms}")
        if not 1 <= self.max_batch <= 4096:
            raise ConfigError(f"--max-batch must be between 1 and 4096, got {self.max_batch}")


@dataclass(frozen=True)
class RouteItem:
    query: str
    previous: Optional[str] = None
    context_domains: Tuple[str, ...] = ()
    previous_query: Optional[str] = None
    clarify: Optional[Decision] = None  # never batched: run_routes reads it alone


@dataclass(frozen=True)
class ToolsItem:
    query: str
    context_domains: Tuple[str, ...] = ()
    top_k: Optional[int] = None
    threshold: Optional[float] = None
    candidates: Optional[Tuple[str, ...]] = None


class MicroBatcher(Generic[T]):
    """Gathers the items :meth:`submit` receives and runs them in batches.

    ``run(router, items)`` runs in ``executor`` and returns one result or exception
    per item; ``router()`` gives the router of a batch when it starts (a reload
    swaps it between batches, never inside one); ``on_batch(size)`` observes sizes.
    """

    def __init__(
        self,
        run: Callable[[Any, Sequence[Any]], list[Any]],
        router: Callable[[], Any],
        executor: Executor,
        *,
        window_ms: float = DEFAULT_WINDOW_MS,
        max_batch: int = DEFAULT_MAX_BATCH,
        on_batch: Callable[[int], None] | None = None,
    ):
        self._run, self._router, self._executor = run, router, executor
        self.window = window_ms / 1e3
        self.max_batch = max_batch
        self._on_batch = on_batch
        self._pending: list[tuple[Any, asyncio.Future[Any]]] = []
        self._timer: asyncio.Handle | None = None
        self._running = False
        self._last_size, self._last_end = 1, float("-inf")
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, item: Any) -> Any:
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()
        self._pending.append((item, fut))
        if not self._running:
            self._schedule(loop)
        return await fut

    def _target(self, loop: asyncio.AbstractEventLoop) -> int:
        """How many requests to wait for: as many as the last batch held if it ended
        within :data:`RECENT_S`, else 1 (a lone client never waits for the window)."""
        recent = loop.time() - self._last_end < RECENT_S
        return min(self.max_batch, self._last_size if recent else 1)

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start a batch now if enough requests wait, else within the window."""
        if len(self._pending) >= self._target(loop):
            self._start(loop)
        elif self._timer is None:
            self._timer = loop.call_later(self.window, self._fire, loop)

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if not self._running and self._pending:
            self._start(loop)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending[: self.max_batch], self._pending[self.max_batch :]
        batch = [(item, fut) for item, fut in batch if not fut.done()]  # a client that went away
        if not batch:
            if self._pending:
                self._start(loop)
            return
        self._running = True
        task = loop.create_task(self._go(loop, batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _go(
        self, loop: asyncio.AbstractEventLoop, batch: list[tuple[Any, asyncio.Future[Any]]]
    ) -> None:
        try:
            if self._on_batch is not None:
                self._on_batch(len(batch))
            items = [item for item, _ in batch]
            results = await loop.run_in_executor(self._executor, self._run, self._router(), items)
            for (_, fut), r in zip(batch, results):
                if not fut.done():
                    if isinstance(r, BaseException):
                        fut.set_exception(r)
                    else:
                        fut.set_result(r)
        except BaseException as e:  # noqa: BLE001 - every waiter gets the failure
            for _, fut in batch:
                if not fut.done():
                    fut.set_exception(e)
            if not isinstance(e, Exception):
                raise
        finally:
            self._running = False
            self._last_size, self._last_end = len(batch), loop.time()
            if self._pending:
                self._schedule(loop)

    async def drain(self) -> None:
        """Wait for the batches that are queued or running (graceful shutdown)."""
        while self._pending or self._tasks:
            if self._pending and not self._running and self._timer is None:
                self._start(asyncio.get_running_loop())
            await asyncio.sleep(0.01)


def _grouped(items: Sequence[Any], key: Callable[[Any], Hashable]) -> dict[Hashable, list[int]]:
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        groups[key(it)].append(i)
    return groups


def route_one(router: ServedRouter, item: RouteItem) -> Decision:
    return router.route(
        item.query,
        previous=item.previous,
        context_domains=item.context_domains,
        previous_query=item.previous_query,
        clarify=item.clarify,
    )


def tools_one(router: ServedRouter, item: ToolsItem) -> ToolBelt:
    return router.tools(
        item.query,
        context_domains=item.context_domains,
        top_k=item.top_k,
        threshold=item.threshold,
        candidates=item.candidates,
    )


def run_routes(
    router: ServedRouter, items: Sequence[RouteItem], fan_out: Executor | None = None
) -> list[Decision | Exception]:
    """The decisions of ``items`` (or the exception of each one that failed): one batch call per
    ``context_domains``."""
    out: dict[int, Decision | Exception] = {}
    for i, it in enumerate(items):  # an answer to a clarification is read alone (route_batch has no clarify)
        if it.clarify is not None:
            out[i] = _call(route_one, router, it)
    rest = [i for i, it in enumerate(items) if it.clarify is None]
    for idx in _grouped([items[i] for i in rest], lambda it: it.context_domains).values():
        idx = [rest[j] for j in idx]
        group = [items[i] for i in idx]
        try:
            ds = route_many(
                router,
                [it.query for it in group],
                [it.previous for it in group],
                group[0].context_domains,
                fan_out,
                [it.previous_query for it in group],
            )
        except Exception:  # noqa: BLE001 - one request at a time, so that only the bad one fails
            ds = [_call(route_one, router, it) for it in group]
        out.update(zip(idx, ds))
    return [out[i] for i in range(len(items))]


def run_tools(router: ServedRouter, items: Sequence[ToolsItem]) -> list[ToolBelt | Exception]:
    """The tool belts of ``items`` (or exceptions): one ``tools_batch`` call per (context_domains, top_k,
    threshold, candidates)."""
    out: dict[int, ToolBelt | Exception] = {}
    for idx in _grouped(
        items, lambda it: (it.context_domains, it.top_k, it.threshold, it.candidates)
    ).values():
        group = [items[i] for i in idx]
        g = group[0]
        try:
            belts = (
                router.tools_batch(
                    [it.query for it in group],
                    context_domains=g.context_domains,
                    top_k=g.top_k,
                    threshold=g.threshold,
                    candidates=g.candidates,
                )
                if len(group) > 1
                else [tools_one(router, g)]
            )
        except Exception:  # noqa: BLE001
            belts = [_call(tools_one, router, it) for it in group]
        out.update(zip(idx, belts))
    return [out[i] for i in range(len(items))]


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - handed to the request's future
        return e


def route_many(
    router: ServedRouter,
    queries: list[str],
    previous: list[str | None],
    context_domains: Sequence[str],
    fan_out: Executor | None = None,
    previous_query: list[str | None] | None = None,
) -> list[Decision]:
    """``router.route_batch`` for ``queries``; with an LLM fallback, the decisions run in
    ``fan_out``'s threads, so that the LLM calls of medium-confidence decisions overlap
    instead of queueing one after the other inside the batch (decisions identical)."""
    follows = previous_query or [None] * len(queries)
    if len(queries) == 1:
        d = router.route(
            queries[0], previous=previous[0], context_domains=context_domains, previous_query=follows[0]
        )
        return [d]
    executor = fan_out if router.llm is not None else None
    return list(
        router.route_batch(
            queries,
            previous=previous,
            context_domains=context_domains,
            executor=executor,
            previous_query=follows,
        )
    )
