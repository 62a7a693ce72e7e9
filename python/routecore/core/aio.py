"""Running the router's synchronous work from an event loop.

The native work (tokenizing, the model, the scan) releases the GIL, so a worker
thread per call keeps the loop free. An LLM fallback whose ``achoose`` runs on
the event loop (``native_async``, as :mod:`routecore.llm.llm_async`'s client) is
awaited on the loop itself: the worker thread hands it the request and waits
for the answer. Other LLM routers are called from the worker thread.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, Callable, TypeVar

T = TypeVar("T")


def _loop_chooser(llm: Any, loop: asyncio.AbstractEventLoop) -> Callable[[Any], Any] | None:
    """A blocking ``choose`` for worker threads that runs a native-async ``llm.achoose`` on ``loop``,
    or None."""
    achoose = getattr(llm, "achoose", None)
    if llm is None or achoose is None or not getattr(llm, "native_async", False):
        return None

    def choose(request: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(achoose(request), loop).result()

    return choose


@functools.lru_cache(maxsize=None)
def _signature(fn: Callable[..., Any]) -> inspect.Signature:
    return inspect.signature(fn)


def check_call(fn: Callable[..., Any], *args: Any, **kw: Any) -> None:
    """The :class:`TypeError` calling ``fn`` (a function, not a bound method) with these arguments
    would raise: an async method that runs an internal step taking more keywords (``choose=``)
    accepts only its public twin's."""
    try:
        _signature(fn).bind(*args, **kw)
    except TypeError as e:
        raise TypeError(f"{fn.__qualname__}(): {e}") from None


async def run_off_loop(fn: Callable[..., T], llm: Any, *args: Any, **kw: Any) -> T:
    """``fn(*args, **kw)`` in the loop's default executor; with ``choose=`` set when ``llm`` is
    native-async."""
    loop = asyncio.get_running_loop()
    choose = _loop_chooser(llm, loop)
    if choose is not None:
        kw["choose"] = choose
    return await loop.run_in_executor(None, functools.partial(fn, *args, **kw))
