"""The LLM fallback router for event loops, on ``httpx`` (the ``llm-async`` extra).

:class:`AsyncOpenAICompatibleRouter` is an
:class:`~routecore.llm.llm.OpenAICompatibleRouter` (same settings, request, prompt and
parsing; ``choose`` still works from threads) whose :meth:`achoose` runs on one
``httpx.AsyncClient`` with kept-alive connections. httpx is imported when a
router is made, never by ``import routecore``.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from routecore.errors import LLMError, missing_extra
from routecore.llm.llm import LLMChoice, LLMRequest, OpenAICompatibleRouter
from routecore.llm.llm_http import MAX_ANSWER_BYTES

if TYPE_CHECKING:
    import httpx


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise missing_extra("the async LLM router needs httpx", "llm-async") from None
    return httpx


class AsyncOpenAICompatibleRouter(OpenAICompatibleRouter):
    """An OpenAI-compatible LLM router with an ``httpx`` :meth:`achoose`.

    ``timeout`` bounds a whole call, body included (httpx's own timeouts are per
    phase: a server that trickles its answer would pass them), and an answer is
    read up to :data:`~routecore.llm.llm.MAX_ANSWER_BYTES`; both fail with
    ``LLMError``. Up to ``max_connections`` requests run at once (more wait for a
    connection, within their deadline). Proxies: httpx honours ``http_proxy``,
    ``https_proxy``, ``all_proxy`` and ``no_proxy``. Redirects are not followed.

    The ``httpx.AsyncClient`` is made on the first :meth:`achoose` and belongs to
    that call's event loop; on another loop (a new ``asyncio.run``) a new client
    is made. :meth:`aclose` (or ``async with``) closes it and the sync connections.
    """

    native_async = True

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 5.0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        max_idle: int = 8,
        max_connections: int = 100,
    ):
        _httpx()  # fail now, not at the first call, when httpx is missing
        super().__init__(
            base_url,
            model,
            api_key=api_key,
            timeout=timeout,
            temperature=temperature,
            max_tokens=max_tokens,
            max_idle=max_idle,
        )
        self.max_connections = max_connections
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:  # a client's connections belong to one loop
            httpx = _httpx()
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout),
                limits=httpx.Limits(
                    max_connections=self.max_connections,
                    max_keepalive_connections=min(self.max_connections, 20),
                ),
                follow_redirects=False,
            )
            self._loop = loop
        return self._client

    async def achoose(self, request: LLMRequest) -> LLMChoice:
        """One request, done within ``timeout`` seconds (else ``LLMError``)."""
        if self.closed:
            raise LLMError(f"the LLM router for {self.url} is closed")
        httpx = _httpx()
        body = json.dumps(self.payload(request)).encode()
        try:
            raw = await asyncio.wait_for(self._post_async(body), self.timeout)
        except asyncio.TimeoutError:
            raise LLMError(
                f"LLM server unreachable or too slow at {self.url}: the answer took longer than the timeout"
            ) from None
        except (httpx.HTTPError, httpx.StreamError, OSError) as e:
            raise LLMError(
                f"LLM server unreachable or too slow at {self.url}: {e or type(e).__name__}"
            ) from None
        return self.parse(raw.decode("utf-8", "replace"), request)

    async def _post_async(self, body: bytes, limit: int = MAX_ANSWER_BYTES) -> bytes:
        async with self._async_client().stream(
            "POST", self.url, content=body, headers=self.headers()
        ) as resp:
            if not 200 <= resp.status_code < 300:
                raise LLMError(f"LLM server answered HTTP {resp.status_code} at {self.url}")
            chunks: list[bytes] = []
            size = 0
            async for chunk in resp.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise LLMError(f"the LLM answer is larger than {limit} bytes")
                chunks.append(chunk)
        return b"".join(chunks)

    async def aclose(self) -> None:
        """Close the async client (if made on this loop) and the sync connections. Later calls fail."""
        self.close()
        client, loop, self._client, self._loop = self._client, self._loop, None, None
        if (
            client is not None and loop is asyncio.get_running_loop()
        ):  # another loop's client cannot be closed here
            await client.aclose()

    async def __aenter__(self) -> AsyncOpenAICompatibleRouter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
