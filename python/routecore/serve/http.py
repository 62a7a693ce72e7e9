"""The sidecar's HTTP plumbing: limits, JSON responses and errors, and the ASGI gate
(bearer token, request counts, latency, requests in flight)."""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from dataclasses import dataclass
from typing import Any, Optional

import msgspec
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from routecore.decision import plain
from routecore.serve.metrics import Metrics

#: Paths answered without a token (probes).
OPEN_PATHS = frozenset({"/healthz", "/readyz"})
ENDPOINTS = frozenset(
    {
        "/v1/route",
        "/v1/route/batch",
        "/v1/tools",
        "/v1/tools/more",
        "/v1/lessons",
        "/v1/learn",
        "/v1/learned",
        "/v1/learned/forget",
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
    }
)
#: The HTTP methods the request counter names; any other is counted as ``other`` (the label is set
#: before authentication, so a raw method would let anyone grow the metrics without bound).
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def metric_labels(path: str, method: str, status: int) -> tuple[str, str, str]:
    """The request counter's labels, each from a closed set: a known endpoint or ``other``, a
    known method or ``other``, a status code from 100 to 599 or ``other``."""
    return (
        path if path in ENDPOINTS else "other",
        method if method in METHODS else "other",
        str(status) if 100 <= status <= 599 else "other",
    )


@dataclass(frozen=True)
class Limits:
    """Request limits: body bytes (413), characters per query and queries per batch (422), seconds
    to receive a body once the request's head is in (408; 0: no limit)."""

    max_body_bytes: int = 1 << 20
    max_query_chars: int = 8192
    max_batch: int = 256
    body_timeout: float = 30.0


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, headers: Optional[dict[str, str]] = None):
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, headers


def error_response(
    status: int, kind: str, message: str, headers: Optional[dict[str, str]] = None
) -> Response:
    body = encode_json({"error": {"type": kind, "message": message}})
    return Response(body, status, headers, media_type="application/json")


def scrub(obj: Any) -> Any:
    """``obj`` (JSON-like) with every lone surrogate of its strings replaced by U+FFFD."""
    if isinstance(obj, str):
        return obj.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(obj, dict):
        return {scrub(k): scrub(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub(v) for v in obj]
    return obj


def encode_json(body: Any) -> bytes:
    """``body`` as JSON bytes. A string holding a lone surrogate (a query read from a body with invalid
    UTF-8, echoed back) is not valid UTF-8: such strings are written with U+FFFD in its place."""
    try:
        return msgspec.json.encode(body, enc_hook=enc_hook)
    except UnicodeEncodeError:
        return msgspec.json.encode(scrub(msgspec.to_builtins(body, enc_hook=enc_hook)), enc_hook=enc_hook)


def decode_lenient(raw: bytes, shape: type) -> Any:
    """A body msgspec refuses for its text only: bytes that are not UTF-8, or an escaped lone surrogate
    (``"\\ud83d"``, half an emoji). Python's JSON reader takes them (bytes as lone surrogates), and the
    router removes lone surrogates from a query with an ``invalid_text`` alert. ``ValueError`` when the
    body is not JSON at all (``NaN`` and ``Infinity`` included, as msgspec refuses them)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        obj = json.loads(raw.decode("utf-8", "surrogateescape"), parse_constant=refuse)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    return msgspec.convert(obj, type=shape)


def enc_hook(obj: Any) -> Any:
    if hasattr(obj, "item"):  # numpy scalars
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return plain(obj)


def json_response(body: Any, status: int = 200) -> Response:
    """``body`` as JSON; scores that are not finite become null (msgspec), never bare ``Infinity``."""
    return Response(encode_json(body), status, media_type="application/json")


class Gate:
    """Pure ASGI middleware: the bearer token, request counts, latency, requests in flight."""

    def __init__(self, app: ASGIApp, token: str | None, metrics: Metrics):
        self.app, self.metrics = app, metrics
        self._token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        m = self.metrics
        path = scope["path"]
        status = 500
        t0 = time.perf_counter()
        m.in_flight.inc()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            if self._token is not None and path not in OPEN_PATHS:
                problem = self._auth(scope)
                if problem is not None:
                    err = 'Bearer realm="routecore"' + (
                        ', error="invalid_token"' if "wrong" in problem else ""
                    )
                    await error_response(401, "Unauthorized", problem, {"WWW-Authenticate": err})(
                        scope, receive, send_status
                    )
                    return
            await self.app(scope, receive, send_status)
        finally:
            m.in_flight.dec()
            endpoint, method, code = metric_labels(path, scope.get("method", ""), status)
            m.requests.labels(endpoint, method, code).inc()
            m.latency.labels(endpoint).observe(time.perf_counter() - t0)

    def _auth(self, scope: Scope) -> Optional[str]:
        header = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), None)
        if header is None:
            return "this server needs a bearer token: send 'Authorization: Bearer <token>'"
        scheme, _, given = header.partition(b" ")
        if scheme.lower() != b"bearer" or not given.strip():
            return "the Authorization header is not 'Bearer <token>'"
        assert self._token is not None
        if not hmac.compare_digest(given.strip(), self._token):
            return "wrong bearer token"
        return None


async def read_body(request: Request, shape: type, limits: Limits) -> Any:
    """The request's JSON body as ``shape``, or an :class:`ApiError`: 413 over ``max_body_bytes``, 408 when it
    does not arrive within ``body_timeout`` seconds, 400 when it is not JSON, 422 when it is not ``shape``."""
    limit = limits.max_body_bytes
    cl = request.headers.get("content-length")
    if cl is not None and cl.isdigit() and int(cl) > limit:
        raise ApiError(
            413, "BodyTooLarge", f"the body is {int(cl)} bytes; the limit is {limit} (--max-body-bytes)"
        )
    chunks: list[bytes] = []

    async def read() -> None:
        n = 0
        async for chunk in request.stream():
            n += len(chunk)
            if n > limit:
                raise ApiError(
                    413, "BodyTooLarge", f"the body is over {limit} bytes, the limit (--max-body-bytes)"
                )
            chunks.append(chunk)

    wait = limits.body_timeout
    try:
        await (asyncio.wait_for(read(), wait) if wait > 0 else read())
    except ClientDisconnect:
        raise ApiError(
            400, "ClientDisconnect", "the client went away before sending the whole body"
        ) from None
    except asyncio.TimeoutError:
        raise ApiError(
            408,
            "BodyTimeout",
            f"the body did not arrive within {wait:g} s (--body-timeout)",
            {"Connection": "close"},
        ) from None
    raw = b"".join(chunks)
    try:
        return msgspec.json.decode(raw, type=shape)
    except msgspec.ValidationError as e:
        raise ApiError(422, "ValidationError", str(e)) from None
    except (msgspec.DecodeError, UnicodeDecodeError) as e:  # not JSON, or text that is not valid Unicode
        try:
            return decode_lenient(raw, shape)
        except msgspec.ValidationError as v:
            raise ApiError(422, "ValidationError", str(v)) from None
        except ValueError:
            raise ApiError(
                400,
                "InvalidJSON",
                f"the body is not JSON: {e}" if raw.strip() else "the body is empty; send a JSON object",
            ) from None


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
    msg = {
        404: f"no endpoint at {request.url.path} (see /openapi.json)",
        405: f"{request.method} is not allowed on {request.url.path}",
    }.get(exc.status_code, str(exc.detail))
    return error_response(exc.status_code, kind, msg, dict(exc.headers or {}))
