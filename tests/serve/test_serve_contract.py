"""The contract at the sidecar's entry points (issue 35 item 2): when the encoder fails, ``/v1/route``,
``/v1/route/batch`` and ``/v1/tools`` answer 200 with what ``Router.route`` and ``Router.tools`` give
(an ``error`` decision, the core tools with an ``encoder_error`` alert), batched or not, and a lone
surrogate is an empty query there too. Lone surrogates inside a readable query, and bytes that are not
UTF-8: tests/serve/test_serve_http.py."""

from __future__ import annotations

import httpx
import pytest
from test_serve import ThreadServer

from routecore import Router
from routecore.config.specs import RouteSpec, ToolSpec
from routecore.serve.app import create_app
from routecore.serve.batcher import Batching
from stubs import StubEncoder, manual, unit

ENC = StubEncoder(
    {
        "a1": unit(0),
        "b1": unit(1),
        "restart a service": unit(4),
        "read the logs": unit(5),
        "search the docs": unit(6),
    }
)
ROUTER = Router(
    (RouteSpec("A", ("a1",)), RouteSpec("B", ("b1",))),
    tools=(
        ToolSpec("restart", "restart a service"),
        ToolSpec("logs", "read the logs"),
        ToolSpec("search", "search the docs", core=True),
    ),
    encoder=ENC,
    policy=manual(low_action="none", tool_threshold=0.5),
)


@pytest.mark.parametrize("batching", [None, Batching(window_ms=5, max_batch=8)], ids=["direct", "batched"])
def test_a_failing_encoder_and_a_lone_surrogate_answer_200_as_the_library_does(batching):
    app = create_app(ROUTER) if batching is None else create_app(ROUTER, batching=batching)
    json_type = {"content-type": "application/json"}
    with ThreadServer(app) as s, httpx.Client(base_url=s.url, timeout=30, headers=json_type) as c:
        ENC.fail = True
        try:
            route = c.post("/v1/route", content='{"query": "a1"}')
            batch = c.post("/v1/route/batch", content='{"queries": ["\\ud800", "b1"]}')
            tools = c.post("/v1/tools", content='{"query": "read the logs"}')
            empty = c.post("/v1/tools", content='{"query": "\\udc00"}')
        finally:
            ENC.fail = False
        ok = c.post("/v1/route", content='{"query": "a1"}')
    for r in (route, batch, tools, empty, ok):
        assert r.status_code == 200, r.text
    assert (route.json()["action"], route.json()["reason"]["code"]) == ("error", "error")
    assert [(d["action"], d["reason"]["code"]) for d in batch.json()["decisions"]] == [
        ("none", "empty_query"),
        ("error", "error"),
    ]
    belt = tools.json()
    assert belt["reason"]["code"] == "error" and [t["name"] for t in belt["tools"]] == ["search"]
    assert [a["kind"] for a in belt["alerts"]] == ["encoder_error"]
    assert empty.json()["reason"]["code"] == "empty_query"
    assert (ok.json()["route"], ok.json()["reason"]["code"]) == ("A", "confident")  # the encoder is back
