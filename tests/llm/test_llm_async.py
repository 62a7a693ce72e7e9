"""The async LLM router (httpx, the ``llm-async`` extra) against the loopback
server of test_llm.py; plain pytest, each test runs its own event loop."""

from __future__ import annotations

import asyncio
import sys

import httpx  # noqa: F401 (the test extra installs it: missing, these fail, never skip)
import pytest
from test_llm import REQ, server  # noqa: F401 (the loopback LLM server fixture)

from routecore.errors import LLMError
from routecore.llm.llm import OpenAICompatibleRouter, achoose


def test_import_routecore_does_not_import_httpx():
    import subprocess

    code = (
        "import sys, routecore, routecore.llm.llm_async; "
        "print(any(m in sys.modules for m in ('httpx', 'http.client')))"
    )
    assert (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.strip()
        == "False"
    )


def _async(server, **kw):
    from routecore.llm.llm_async import AsyncOpenAICompatibleRouter

    return AsyncOpenAICompatibleRouter(server.url, "test-model", **kw)


def test_async_router_answers_and_keeps_its_connection(server):
    server.mode = "ok:RAG"

    async def main():
        async with _async(server, timeout=2.0, max_tokens=32) as llm:
            n = server.connections
            out = [(await llm.achoose(REQ)).route for _ in range(3)]
            return out, server.connections - n

    assert asyncio.run(main()) == (["RAG"] * 3, 1)
    assert server.requests[-1]["max_tokens"] == 32 and server.seen[-1][2]["Accept-Encoding"] == "identity"


@pytest.mark.parametrize(
    "mode, timeout, match",
    [
        ("drip:RAG", 0.5, "too slow"),
        ("slowheaders", 0.5, "too slow"),
        ("huge", 5.0, "larger than"),
        ("http500", 2.0, "HTTP 500"),
        ("garbage", 2.0, "unparseable"),
    ],
)
def test_async_router_failures(server, mode, timeout, match):
    server.mode = mode
    server.hung_up.clear()

    async def main():
        async with _async(server, timeout=timeout) as llm:
            with pytest.raises(LLMError, match=match):
                await llm.achoose(REQ)

    asyncio.run(main())
    kind = mode.partition(":")[0]
    if kind in ("drip", "slowheaders", "huge"):  # a deadline or the cap: the client left before the end
        assert server.saw_hang_up(kind)


def test_async_router_unreachable():
    from routecore.llm.llm_async import AsyncOpenAICompatibleRouter

    async def main():
        async with AsyncOpenAICompatibleRouter("http://127.0.0.1:9/v1", "m", timeout=0.5) as llm:
            await llm.achoose(REQ)

    with pytest.raises(LLMError, match="unreachable"):
        asyncio.run(main())


def test_a_hundred_concurrent_async_calls_on_one_client(server):
    server.mode = "ok:INCIDENT"
    llm = _async(server, timeout=10.0)

    async def main():
        out = await asyncio.gather(*(llm.achoose(REQ) for _ in range(100)))
        again = await llm.achoose(REQ)  # on a kept-alive connection
        await llm.aclose()
        return [c.route for c in out] + [again.route]

    assert asyncio.run(main()) == ["INCIDENT"] * 101
    assert llm._client is None and llm.native_async and not OpenAICompatibleRouter.native_async


def test_the_async_router_works_on_a_new_loop_and_from_threads(server):
    server.mode = "ok:RAG"
    llm = _async(server, timeout=2.0)
    assert asyncio.run(llm.achoose(REQ)).route == "RAG"
    assert asyncio.run(llm.achoose(REQ)).route == "RAG"  # a new asyncio.run: a new client
    assert llm.choose(REQ).route == "RAG"  # the sync path still works
    llm.close()


def test_achoose_awaits_any_llm_router(server):
    server.mode = "ok:GENERAL"

    class Plain:  # only choose(): run in a worker thread
        def choose(self, request):
            return OpenAICompatibleRouter(server.url, "m").choose(request)

    async def main():
        with OpenAICompatibleRouter(server.url, "m") as sync:
            return [(await achoose(x, REQ)).route for x in (Plain(), sync)] + [
                (await sync.achoose(REQ)).route
            ]

    assert asyncio.run(main()) == ["GENERAL"] * 3


def test_aroute_awaits_an_async_llm_on_the_loop(server):
    from test_llm import ROUTES

    from routecore.routers.router import Router
    from stubs import StubEncoder, manual, mix, unit

    server.mode = "ok:RAG"
    enc = StubEncoder({"e0": unit(0), "e1": unit(1), "e2": unit(2), "q": mix(a0=0.6, a1=0.52)})
    llm = _async(server)
    r = Router(ROUTES, encoder=enc, llm=llm, policy=manual(bias_rules=(), three_way_within=0.0))

    def blocking(request):  # the sync path must not be taken
        raise AssertionError("choose() was called; achoose() on the loop was expected")

    llm.choose = blocking  # type: ignore[method-assign]

    async def main():
        loop_thread = __import__("threading").get_ident()
        seen = []
        real = llm.achoose

        async def spy(request):
            seen.append(__import__("threading").get_ident())
            return await real(request)

        llm.achoose = spy  # type: ignore[method-assign]
        decisions = await asyncio.gather(*(r.aroute("q") for _ in range(20)))
        await llm.aclose()
        return loop_thread, seen, decisions

    loop_thread, seen, decisions = asyncio.run(main())
    assert all(d.used_llm and d.route == "RAG" for d in decisions)
    assert len(seen) == 20 and set(seen) == {loop_thread}  # each LLM call ran on the event loop's thread
