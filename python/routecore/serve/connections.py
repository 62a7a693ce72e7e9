"""Slow and idle clients: a deadline on reading a request's head, and a cap on open connections.

uvicorn keeps a connection open for as long as its client sends a byte now and then before the
request's head is complete (it has a keep-alive timeout between requests, none while a head is
read), and accepts as many connections as the clients open. ``routecore serve`` therefore runs
uvicorn's own HTTP protocols (``h11`` or ``httptools``) subclassed here:

- **header timeout**: a connection whose request head (request line and headers) is not
  complete ``header_timeout`` seconds after it opened, or after its previous response was sent,
  is answered ``408`` and closed. A request whose head has arrived is never cut by it (the body
  has its own deadline, ``--body-timeout``, in the app).
- **connection cap**: a connection beyond ``max_connections`` open ones (per worker process) is
  answered ``503`` at once and closed; the others go on as before.

The limits are this module's settings (:func:`configure`), read when a connection opens, so a
worker process of ``--workers N`` applies them once its app is built.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Optional, cast

from uvicorn.protocols.http.h11_impl import H11Protocol

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # httptools is optional: uvicorn then parses with h11
    HttpToolsProtocol = None  # type: ignore[misc,assignment]

DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 512


@dataclass(frozen=True)
class ConnectionLimits:
    """Seconds to receive a request's head (0: no limit) and open connections at most (0: no cap)."""

    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS


_limits = ConnectionLimits()


def configure(limits: ConnectionLimits) -> None:
    """The limits every connection opened from now on in this process gets."""
    global _limits
    _limits = limits


def _raw_response(status: str, message: str) -> bytes:
    """A whole `connection: close` response with routecore's JSON error body, sent before any app runs."""
    kind = status.split(" ", 1)[1].replace(" ", "")
    body = json.dumps({"error": {"type": kind, "message": message}}).encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _Guard:
    """What both guarded protocols add to uvicorn's: the header deadline and the connection cap."""

    _head_timer: Optional[asyncio.TimerHandle] = None
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    connections: set[Any]
    cycle: Any

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        stream = cast(asyncio.Transport, transport)  # a TCP connection (asyncio's or uvloop's)
        cap = _limits.max_connections
        if cap and len(self.connections) > cap:
            stream.write(
                _raw_response(
                    "503 Service Unavailable",
                    f"more than {cap} open connections (--max-connections); retry later",
                )
            )
            stream.close()
            return
        self._arm()

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if not self.transport.is_closing() and self._head_pending():
            self._arm()  # the next request's head has the same deadline (a pipelined one may be running)

    def _head_pending(self) -> bool:
        """No request is being answered: the connection is waiting for (the rest of) a head."""
        return self.cycle is None or bool(self.cycle.response_complete)

    def _arm(self) -> None:
        self._disarm()
        if _limits.header_timeout > 0:
            self._head_timer = self.loop.call_later(_limits.header_timeout, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._head_pending():
            return
        self.transport.write(
            _raw_response(
                "408 Request Timeout",
                f"no complete request head within {_limits.header_timeout:g} s (--header-timeout)",
            )
        )
        self.transport.close()


class GuardedH11Protocol(_Guard, H11Protocol):
    """uvicorn's h11 protocol with the header deadline and the connection cap."""


if HttpToolsProtocol is not None:

    class GuardedHttpToolsProtocol(_Guard, HttpToolsProtocol):
        """uvicorn's httptools protocol with the header deadline and the connection cap."""


def protocol_class(http: str = "auto") -> type:
    """The guarded protocol for uvicorn's ``http`` setting: ``h11``, ``httptools``, or ``auto``
    (httptools when it is installed, as uvicorn chooses)."""
    if http == "h11" or (http == "auto" and HttpToolsProtocol is None):
        return GuardedH11Protocol
    if HttpToolsProtocol is None:
        from routecore.errors import ConfigError

        raise ConfigError("--http httptools needs httptools: pip install httptools")
    return GuardedHttpToolsProtocol
