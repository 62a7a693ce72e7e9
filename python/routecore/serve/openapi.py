"""The sidecar's request and response shapes, and its OpenAPI 3.1 document (``GET /openapi.json``).

Requests are msgspec structs (decoding them names the bad field: ``Expected `str`,
got `int` - at `$.query```). Responses are the Python API's own dataclasses
(:class:`~routecore.decision.Decision`, :class:`~routecore.decision.ToolBelt`, ...)
as their ``to_dict()`` writes them; their schemas are generated from the same
dataclasses by msgspec, then tightened: every field is required and no other
field is allowed, since ``to_dict()`` writes each one, so a test that validates
real responses catches any drift between the two.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Dict, List, Literal, Optional, Union

import msgspec
from msgspec import Meta

from routecore.decision import Alert, Decision, Reason, ToolBelt, ToolChoice
from routecore.updates.learning_records import LearnedExemplar, Review

#: Longest client-chosen session id.
SESSION_ID_MAX = 128
#: Largest top_k a request may ask for.
TOP_K_MAX = 1000

SessionId = Annotated[
    str,
    Meta(min_length=1, max_length=SESSION_ID_MAX, description="a client-chosen id (e.g. the agent turn's)"),
]


class RouteRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``Router.route(query, previous=, context_domains=, previous_query=, clarify=)``: ``clarify`` is
    the ``clarify`` decision this query answers, as ``/v1/route`` returned it."""

    query: str
    previous: Optional[str] = None
    context_domains: List[str] = []
    previous_query: Optional[str] = None
    clarify: Optional[Dict[str, Any]] = None


class RouteBatchRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``Router.route_batch(queries, previous=, context_domains=, previous_query=)``: ``previous`` and
    ``previous_query`` are one for all or one per query."""

    queries: List[str]
    previous: Union[None, str, List[Optional[str]]] = None
    context_domains: List[str] = []
    previous_query: Union[None, str, List[Optional[str]]] = None


class ToolsRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``Router.tools(query, context_domains=, top_k=, threshold=, candidates=)``. With ``session_id``,
    the belt is that of a new ``request_more_tools`` session (``Router.tool_session``: the policy's
    ``top_k``, no threshold or candidates), which ``POST /v1/tools/more`` continues.
    ``context_domain`` (one name) is deprecated: ``context_domains``."""

    query: str
    context_domains: List[str] = []
    context_domain: Optional[str] = None
    top_k: Optional[Annotated[int, Meta(ge=1, le=TOP_K_MAX)]] = None
    session_id: Optional[SessionId] = None
    #: ``Router.tools(threshold=)``: a floor of this call, read on each candidate.
    threshold: Optional[Annotated[float, Meta(ge=0.0, le=1.0)]] = None
    #: ``Router.tools(candidates=)``: the only tools this call may offer (names of the catalog).
    candidates: Optional[List[str]] = None


class MoreToolsRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``ToolSession.request_more_tools(request)`` in session ``session_id``. An unknown or
    expired session is opened for ``query`` (then required) and ``context_domains``
    (``context_domain``: deprecated)."""

    session_id: SessionId
    query: Optional[str] = None
    context_domains: List[str] = []
    context_domain: Optional[str] = None
    request: Optional[str] = None


class LessonRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``Router.record_lesson(query, tool, use=, context=)``."""

    query: str
    tool: str
    use: bool
    context: str = ""


class LearnRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``Router.learn(query, route, source=, force=)`` (routecore.updates.learning)."""

    query: str
    route: str
    source: Literal["user", "llm", "agent"] = "user"
    force: bool = False


class ForgetRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``Router.forget(ids)``: the learned exemplars to remove (unknown ids: 422, nothing removed)."""

    ids: Annotated[List[int], Meta(min_length=1)]


class LearnedResponse(msgspec.Struct, kw_only=True):
    """``Router.learned()`` and ``Router.held_for_review()``: the learned exemplars, oldest first, and the
    answers held for review."""

    learned: List[LearnedExemplar]
    held: List[Review]


class ForgetResponse(msgspec.Struct, kw_only=True):
    """The learned exemplars ``Router.forget`` removed."""

    forgotten: List[LearnedExemplar]


class SessionState(msgspec.Struct, kw_only=True):
    """A ``request_more_tools`` session: the tools offered so far, the meta tool while the breaker
    is closed."""

    session_id: str
    tool_names: List[str]
    calls: int
    limit: int
    breaker_open: bool
    expires_in_s: float


class MoreToolsResponse(msgspec.Struct, kw_only=True):
    """The next best tools not yet offered (``[]`` once the breaker is open), their ``names``, and why
    (``reason.code``: ``more``, ``no_tool`` or ``circuit_breaker``); ``alerts``: the session's own since
    its first belt (the breaker's)."""

    tools: List[ToolChoice]
    alerts: List[Alert]
    session: SessionState
    names: List[str]
    reason: Reason


class RouteBatchResponse(msgspec.Struct, kw_only=True):
    decisions: List[Decision]


class LessonResponse(msgspec.Struct, kw_only=True):
    id: int


class LearnResponse(msgspec.Struct, kw_only=True):
    """What ``Router.learn`` did: ``learned`` (``id``: the learned exemplar's), ``duplicate``
    (``nearest`` >= ``cut``) or ``held`` for review (it contradicts a high-tier decision of
    ``decided``)."""

    status: Literal["learned", "duplicate", "held"]
    route: str
    generation: int
    nearest: float
    cut: float
    id: Optional[int] = None
    decided: Optional[str] = None
    evicted: List[int] = []
    #: Why, with the numbers compared (``Learned.reason``).
    reason: Optional[Dict[str, str]] = None


class ErrorDetail(msgspec.Struct, kw_only=True):
    type: str
    message: str


class ErrorResponse(msgspec.Struct, kw_only=True):
    error: ErrorDetail


class Health(msgspec.Struct, kw_only=True):
    status: str


class Ready(msgspec.Struct, kw_only=True):
    ready: bool
    generation: int
    reason: Optional[str] = None


REQUESTS = (
    RouteRequest,
    RouteBatchRequest,
    ToolsRequest,
    MoreToolsRequest,
    LessonRequest,
    LearnRequest,
    ForgetRequest,
)
RESPONSES = (
    Decision,
    ToolBelt,
    MoreToolsResponse,
    RouteBatchResponse,
    LessonResponse,
    LearnResponse,
    LearnedResponse,
    ForgetResponse,
    ErrorResponse,
    Health,
    Ready,
)
_REF = "#/components/schemas/{name}"


def components() -> Dict[str, Any]:
    """The JSON Schemas of every request and response shape, by name."""
    _, comps = msgspec.json.schema_components(REQUESTS + RESPONSES, ref_template=_REF)
    requests = {t.__name__ for t in REQUESTS}
    for name, s in comps.items():
        if name in requests or s.get("type") != "object":
            continue
        s["required"] = list(s.get("properties", {}))  # to_dict() writes every field
        s["additionalProperties"] = False
    d = comps["Decision"]["properties"]
    d["action"] = {"type": "string", "enum": ["route", "clarify", "none", "error"]}
    d["tier"] = {"type": "string", "enum": ["high", "medium", "low"]}
    for name in ("Decision", "ToolBelt"):  # properties of both, read from their alerts
        comps[name]["properties"]["collision"] = {
            "type": "boolean",
            "description": "a collision alert is in alerts",
        }
        comps[name]["properties"]["system_prompt_alert"] = {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "the collision alert's text",
        }
        comps[name]["required"] += ["collision", "system_prompt_alert"]
    # A score that is not finite (-inf: a route a clarification did not offer, a tool without exemplars)
    # is written as null.
    nullable = {"anyOf": [{"type": "number"}, {"type": "null"}], "description": "null: not finite (-inf)"}
    for name, keys in (
        ("Decision", ("probabilities", "raw_scores", "adjusted_scores", "lexical_scores", "score_bounds")),
        ("ToolBelt", ("scores", "raw_scores", "lexical_scores", "score_bounds")),
    ):
        for k in keys:
            comps[name]["properties"][k]["additionalProperties"] = nullable
    tool = comps["ToolChoice"]["properties"]
    for k in ("score", "raw_score", "lexical_score"):
        tool[k] = {**nullable, **({"default": tool[k]["default"]} if "default" in tool[k] else {})}
    belt = comps["ToolBelt"]
    belt["properties"]["names"] = {
        "type": "array",
        "items": {"type": "string"},
        "description": "the tools' names, in the belt's order",
    }
    belt["required"].append("names")
    belt["properties"]["session"] = {
        "$ref": _REF.format(name="SessionState"),
        "description": "only when the request gave a session_id",
    }
    comps["Ready"]["required"] = ["ready", "generation"]
    return comps


def _body(name: str) -> Dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": {"$ref": _REF.format(name=name)}}}}


def _answer(name: str, what: str) -> Dict[str, Any]:
    return {
        "description": what,
        "content": {"application/json": {"schema": {"$ref": _REF.format(name=name)}}},
    }


_ERRORS = {
    "400": "the body is not JSON",
    "401": "no bearer token, or a wrong one",
    "404": "unknown path, or unknown session without a query",
    "413": "the body is larger than the limit",
    "422": "a field is missing, of the wrong type or over a limit (query length, batch size)",
    "503": "the router is not loaded yet",
}


def _post(
    summary: str, request: str, response: str, *, status: str = "200", extra: tuple[str, ...] = ()
) -> Dict[str, Any]:
    errs = {k: _answer("ErrorResponse", v) for k, v in _ERRORS.items() if k != "404" or "404" in extra}
    return {
        "post": {
            "summary": summary,
            "requestBody": _body(request),
            "responses": {status: _answer(response, "OK"), **errs},
            "security": [{"bearer": []}],
        }
    }


def document(version: str = "") -> Dict[str, Any]:
    """The OpenAPI 3.1 document of the sidecar."""
    return copy.deepcopy(
        {
            "openapi": "3.1.0",
            "info": {
                "title": "routecore serve",
                "version": version or "0",
                "description": "Semantic routing and tool belts over HTTP. "
                "Bodies are the Python API's objects "
                "(Decision.to_dict(), ToolBelt.to_dict()). Scores that are not finite are written as null.",
            },
            "paths": {
                "/v1/route": _post("Route one query (Router.route)", "RouteRequest", "Decision"),
                "/v1/route/batch": _post(
                    "Route several queries (Router.route_batch)", "RouteBatchRequest", "RouteBatchResponse"
                ),
                "/v1/tools": _post(
                    "The tool belt of one query (Router.tools, or Router.tool_session with session_id)",
                    "ToolsRequest",
                    "ToolBelt",
                ),
                "/v1/tools/more": _post(
                    "request_more_tools in a session, with its circuit breaker",
                    "MoreToolsRequest",
                    "MoreToolsResponse",
                    extra=("404",),
                ),
                "/v1/learn": _post(
                    "Learn a labelled query as an exemplar of its route (Router.learn)",
                    "LearnRequest",
                    "LearnResponse",
                ),
                "/v1/learned": {
                    "get": {
                        "summary": "The learned exemplars and the answers held for review (Router.learned)",
                        "responses": {"200": _answer("LearnedResponse", "OK")},
                        "security": [{"bearer": []}],
                    }
                },
                "/v1/learned/forget": _post(
                    "Remove learned exemplars by id (Router.forget)", "ForgetRequest", "ForgetResponse"
                ),
                "/v1/lessons": _post(
                    "Record a lesson (Router.record_lesson)", "LessonRequest", "LessonResponse", status="201"
                ),
                "/healthz": {
                    "get": {
                        "summary": "The process answers",
                        "responses": {"200": _answer("Health", "alive")},
                    }
                },
                "/readyz": {
                    "get": {
                        "summary": "A router is loaded",
                        "responses": {"200": _answer("Ready", "ready"), "503": _answer("Ready", "loading")},
                    }
                },
                "/metrics": {
                    "get": {
                        "summary": "Prometheus metrics",
                        "security": [{"bearer": []}],
                        "responses": {
                            "200": {
                                "description": "text format 0.0.4",
                                "content": {"text/plain": {"schema": {"type": "string"}}},
                            }
                        },
                    }
                },
                "/openapi.json": {
                    "get": {
                        "summary": "This document",
                        "security": [{"bearer": []}],
                        "responses": {
                            "200": {
                                "description": "OpenAPI 3.1",
                                "content": {"application/json": {"schema": {"type": "object"}}},
                            }
                        },
                    }
                },
            },
            "components": {
                "schemas": components(),
                "securitySchemes": {
                    "bearer": {
                        "type": "http",
                        "scheme": "bearer",
                        "description": "only when the server has a token (--token-env / --token-file)",
                    }
                },
            },
        }
    )
