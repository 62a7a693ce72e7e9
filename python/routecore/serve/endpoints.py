"""The sidecar's endpoints: the handlers of :func:`routecore.serve.app.create_app`'s routes over
one :class:`~routecore.serve.server.Server`, and the mapping of errors to statuses
(:mod:`routecore.serve.app` lists both)."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable

import msgspec
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from routecore.decision import Decision, Reason, plain
from routecore.errors import ConfigError, InvalidArgumentError, MemoryStoreError, RoutecoreError
from routecore.serve import openapi
from routecore.serve.batcher import RouteItem, ToolsItem, route_many, route_one, tools_one
from routecore.serve.http import ApiError, encode_json, error_response, json_response, scrub
from routecore.serve.server import Server

log = logging.getLogger("routecore.serve")

__all__ = ["endpoints"]


def per_request(value: Any, n: int, field: str, what: str) -> list[Any]:
    """A batch field given once for all ``n`` queries, or as a list of one per query."""
    if not isinstance(value, list):
        return [value] * n
    if len(value) != n:
        raise ApiError(422, "ValidationError", f"{field} holds {len(value)} {what} for {n} queries")
    return value


def _clarified(body: Any) -> Decision:
    """The ``clarify`` decision a ``/v1/route`` body answers, read back (a 422 naming what is wrong; the
    router checks it is a clarification over its routes: ``arguments.clarify_arg``)."""
    try:
        return Decision.from_dict(body)
    except InvalidArgumentError as e:
        raise ApiError(422, "InvalidArgumentError", f"clarify: {e}") from None


def endpoints(srv: Server) -> list[Route]:
    m = srv.metrics

    async def route(request: Request) -> Response:
        t0 = time.perf_counter()
        req = await srv.body(request, openapi.RouteRequest)
        srv.check_query(req.query, "query")
        router = srv.current()
        if req.previous is not None and router.route_specs:
            try:
                router.route_table.known_previous(req.previous)
            except InvalidArgumentError as e:
                raise ApiError(422, "InvalidArgumentError", str(e)) from None
        srv.check_query(req.previous_query, "previous_query")
        asked = None
        if req.clarify is not None:  # the answer to a clarification: read alone, never batched
            asked = _clarified(req.clarify)
            srv.check_query(asked.query, "clarify.query")
        item = RouteItem(req.query, req.previous, tuple(req.context_domains), req.previous_query, asked)
        d = (
            await srv.route_batcher.submit(item)
            if srv.route_batcher is not None and asked is None
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
        previous = per_request(req.previous, n, "previous", "routes")
        follows = per_request(req.previous_query, n, "previous_query", "texts")
        for i, t in enumerate(follows):
            srv.check_query(t, f"previous_query[{i}]")
        router = srv.current()
        cd = tuple(req.context_domains)
        ds = (
            await srv.run(route_many, router, req.queries, previous, cd, srv.fan_out(router), follows)
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
            given = [k for k in ("top_k", "threshold", "candidates") if getattr(req, k) is not None]
            if given:
                raise ApiError(
                    422,
                    "ValidationError",
                    f"{', '.join(given)} cannot be given with session_id: a session's belt uses the policy's "
                    "top_k and floor over the whole catalog",
                )
            domains = _domains(req)
            ts = await srv.run(lambda: router.tool_session(req.query, context_domains=domains))
            s = srv.sessions.put(req.session_id, ts)
            m.observe_stages("/v1/tools", ts.belt, time.perf_counter() - t0)
            return json_response({**ts.belt.to_dict(), "session": srv.sessions.state(req.session_id, s)})
        cands = tuple(req.candidates) if req.candidates is not None else None
        item = ToolsItem(req.query, _domains(req), req.top_k, req.threshold, cands)
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
            router, domains = srv.current(), _domains(req)
            ts = await srv.run(lambda: router.tool_session(req.query, context_domains=domains))
            s = srv.sessions.get(req.session_id) or srv.sessions.put(
                req.session_id, ts
            )  # another request may have opened it meanwhile
        async with s.lock:  # one request_more_tools at a time per session
            ts = s.tool_session
            open_before = ts.calls < ts.tool_catalog.policy.more_tools_limit
            more = await srv.run(ts.request_more_tools, req.request)
            state = srv.sessions.state(req.session_id, s)
            if state.breaker_open and not s.tripped:
                s.tripped = True
                m.breaker_trips.inc()
            text = req.request or ts.query
            if not open_before:
                why = Reason(
                    "circuit_breaker", f"request_more_tools was called {state.limit} times: no more tools"
                )
            elif not more:
                why = Reason("no_tool", f"every tool over the floor for {text!r} was offered already")
            else:
                why = Reason("more", f"{len(more)} tool(s) not offered yet, best for {text!r}")
            said = ts.alerts[len(ts.belt.alerts) :]  # the session's own (the first belt's are its answer's)
        body = openapi.MoreToolsResponse(
            tools=more, alerts=said, session=state, names=[t.name for t in more], reason=why
        )
        return json_response(body)

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
            reason=plain(res.reason),
        )
        return json_response(msgspec.to_builtins(body))

    async def learned(request: Request) -> Response:
        router = srv.current()
        got = await srv.run(lambda: (router.learned(), router.held_for_review()))
        return json_response(openapi.LearnedResponse(learned=got[0], held=got[1]))

    async def forget(request: Request) -> Response:
        req = await srv.body(request, openapi.ForgetRequest)
        router = srv.current()
        gone = await srv.run(router.forget, req.ids)
        return json_response(openapi.ForgetResponse(forgotten=gone))

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

    spec: list[bytes] = []  # the OpenAPI document, encoded on the first request

    async def openapi_json(request: Request) -> Response:
        if not spec:
            spec.append(msgspec.json.encode(openapi.document(srv.version)))
        return Response(spec[0], media_type="application/json")

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
        Route("/v1/learned", guarded(learned), methods=["GET"]),
        Route("/v1/learned/forget", guarded(forget), methods=post),
        Route("/healthz", guarded(healthz), methods=["GET"]),
        Route("/readyz", guarded(readyz), methods=["GET"]),
        Route("/metrics", guarded(metrics), methods=["GET"]),
        Route("/openapi.json", guarded(openapi_json), methods=["GET"]),
    ]


def _domains(req: Any) -> tuple[str, ...]:
    """A tools request's active domains: ``context_domains``, or the deprecated ``context_domain``."""
    if req.context_domain is not None:
        if req.context_domains:
            raise ApiError(422, "ValidationError", "give context_domains or context_domain, not both")
        return (req.context_domain,)
    return tuple(req.context_domains)
