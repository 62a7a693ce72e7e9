"""Kept-alive HTTP/1.1 connections for the LLM client, with an overall deadline.

Standard library only (``http.client``, loaded on first use). A
:class:`KeepAlivePool` belongs to one server URL: it keeps a few idle
connections, opens another when every one is busy (threads never wait for each
other), replaces connections the server closed while idle, and bounds every
connect, send and read of a request by one deadline.
"""

from __future__ import annotations

import io
import math
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from routecore.errors import LLMError

if TYPE_CHECKING:
    import http.client
    import ssl

#: The most bytes of an LLM answer read (a route choice is a few hundred): an endless
#: body used to be read until the deadline, up to 2.3 GB of memory.
MAX_ANSWER_BYTES = 1 << 20

#: Errors that mean a kept-alive connection was closed by the server while idle
#: (``http.client.RemoteDisconnected`` is a ``ConnectionResetError``).
_STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class KeepAlivePool:
    """Connections to the server of ``url`` (through the environment's proxy, if any).

    Proxies: like urllib, ``http_proxy``/``https_proxy`` and ``no_proxy`` (read
    once, when the pool is made) are honoured: ``https`` servers are reached
    through a ``CONNECT`` tunnel, ``http`` ones by sending the request to the
    proxy; ``user:password@`` in the proxy URL is sent as Basic proxy
    authorization. The proxy itself is spoken to in plain HTTP.
    """

    def __init__(self, url: str, *, max_idle: int = 8):
        self.url, self.endpoint, self.max_idle = url, _endpoint(url), max_idle
        self._idle: list[http.client.HTTPConnection] = []  # last in, first out: the warmest first
        self._lock = threading.Lock()  # guards _idle and closed only, never a request
        self.closed = False
        self._ssl: ssl.SSLContext | None = None

    def post(
        self, body: bytes, headers: Mapping[str, str], deadline: float, limit: int = MAX_ANSWER_BYTES
    ) -> tuple[int, bytes]:
        """``(status, body)`` of one POST; the body is read for 2xx answers only.

        Connecting, sending, the response headers and the body must all be done
        before ``deadline`` (``time.monotonic()``), else ``TimeoutError``; a body
        over ``limit`` bytes raises ``LLMError``. A kept-alive connection found
        closed on its first write or read is replaced and the request sent once more."""
        ep = self.endpoint
        headers = {**headers, **ep.headers}
        conn, reused = self._checkout()
        resp: http.client.HTTPResponse | None = None
        try:
            try:
                resp = _exchange(conn, ep.target, body, headers, deadline)
            except _STALE:
                if not reused:
                    raise
                conn.close()  # the server closed it while idle: once more on a new connection
                conn = self._connection()
                resp = _exchange(conn, ep.target, body, headers, deadline)
            if not 200 <= resp.status < 300:
                resp.close()
                conn.close()
                return resp.status, b""
            raw = read_until(resp, deadline, limit)
            resp.close()  # read1 does not close a response at its Content-Length: the connection waits for it
        except BaseException:
            if resp is not None:
                resp.close()
            conn.close()
            raise
        if resp.will_close:
            conn.close()
        else:
            self._checkin(conn)
        return resp.status, raw

    def close(self) -> None:
        """Close the idle connections; busy ones close when their request ends."""
        with self._lock:
            self.closed, idle, self._idle = True, self._idle, []
        for conn in idle:
            conn.close()

    def _checkout(self) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection that is still open (and ``True``), or a new one."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connection(), False
            if not _dropped(conn.sock):
                return conn, True
            conn.close()

    def _checkin(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self.closed and len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def _connection(self) -> http.client.HTTPConnection:
        import http.client

        ep = self.endpoint
        conn: http.client.HTTPConnection
        if ep.tls:
            if self._ssl is None:
                import ssl

                self._ssl = ssl.create_default_context()
            conn = http.client.HTTPSConnection(ep.host, ep.port, context=self._ssl)
        else:
            conn = http.client.HTTPConnection(ep.host, ep.port)
        if ep.tunnel:
            conn.set_tunnel(ep.tunnel[0], ep.tunnel[1], headers=dict(ep.tunnel_headers))
        return conn


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the answer took longer than the timeout")
    return left


def _exchange(
    conn: http.client.HTTPConnection, target: str, body: bytes, headers: dict[str, str], deadline: float
) -> http.client.HTTPResponse:
    """Send the request on ``conn`` (connecting it first if needed) and read the
    response headers, every step bounded by ``deadline``."""
    if conn.sock is None:
        conn.timeout = _left(deadline)
        conn.connect()
    sock = conn.sock
    if not isinstance(sock, _DeadlineSocket):
        sock = _DeadlineSocket(sock)
        conn.sock = sock
    sock.deadline = deadline
    conn.request("POST", target, body, headers)
    return conn.getresponse()


class _DeadlineSocket:
    """A connected socket whose every send and read waits at most until ``deadline``
    (set per request): a trickle of bytes cannot outlast it."""

    def __init__(self, sock: Any):
        self.sock, self.deadline = sock, math.inf
        self._readers, self._closing = 0, False  # as a socket: closed when its last reader is

    def _arm(self) -> None:
        self.sock.settimeout(_left(self.deadline))

    def sendall(self, data: Any) -> None:
        self._arm()
        self.sock.sendall(data)

    def recv_into(self, buf: Any) -> int:
        self._arm()
        return int(self.sock.recv_into(buf))

    def makefile(self, mode: str = "rb", *args: Any, **kw: Any) -> io.BufferedReader:
        self._readers += 1
        return io.BufferedReader(_Reader(self))

    def fileno(self) -> int:
        return int(self.sock.fileno())

    def close(self) -> None:
        """Close the socket, or once its last reader is closed (http.client closes the
        connection of a ``Connection: close`` answer before its body is read)."""
        self._closing = True
        if self._readers <= 0:
            self.sock.close()

    def _unref(self) -> None:
        self._readers -= 1
        if self._closing and self._readers <= 0:
            self.sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sock, name)


class _Reader(io.RawIOBase):
    def __init__(self, sock: _DeadlineSocket):
        super().__init__()
        self.sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        return self.sock.recv_into(buf)

    def close(self) -> None:
        if not self.closed:
            self.sock._unref()
        super().close()


def _dropped(sock: Any) -> bool:
    """Whether an idle kept-alive socket was closed by the server (readable while idle:
    the end of the stream, or bytes nobody asked for)."""
    if sock is None:
        return True
    import select

    try:
        if hasattr(select, "poll"):
            p = select.poll()
            p.register(sock.fileno(), select.POLLIN)
            return bool(p.poll(0))
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def read_until(response: Any, deadline: float, limit: int = MAX_ANSWER_BYTES) -> bytes:
    """The response body, read in chunks; each read may block only until
    ``deadline`` (``TimeoutError`` after it), and the body may not exceed ``limit``."""
    sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
    chunks: list[bytes] = []
    size = 0
    while True:
        left = _left(deadline)
        if sock is not None:
            sock.settimeout(left)
        chunk = response.read1(65536) if hasattr(response, "read1") else response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise LLMError(f"the LLM answer is larger than {limit} bytes")
        chunks.append(chunk)


@dataclass(frozen=True)
class _Endpoint:
    host: str  # where to connect: the server, or the proxy
    port: int
    tls: bool
    target: str  # the request target: a path, or the whole URL for an http proxy
    tunnel: tuple[str, int] | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    tunnel_headers: Mapping[str, str] = field(default_factory=dict)


def _endpoint(url: str) -> _Endpoint:
    """Where and how to send requests for ``url``, the proxy environment considered."""
    import urllib.request
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    tls = parts.scheme == "https"
    host, port = parts.hostname or "", parts.port or (443 if tls else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(f"{host}:{port}" if parts.port else host):
        return _Endpoint(host, port, tls, target)
    p = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    auth: dict[str, str] = {}
    if p.username is not None:
        import base64

        cred = f"{unquote(p.username)}:{unquote(p.password or '')}".encode()
        auth["Proxy-Authorization"] = "Basic " + base64.b64encode(cred).decode()
    if tls:
        return _Endpoint(p.hostname or "", p.port or 80, True, target, (host, port), tunnel_headers=auth)
    return _Endpoint(p.hostname or "", p.port or 80, False, url, headers=auth)
