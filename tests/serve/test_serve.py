"""``routecore serve`` (issue 18): real uvicorn servers on 127.0.0.1 driven with httpx.

In-thread servers (``uvicorn.Server`` in a thread, sharing the session's encoder)
cover the endpoints, auth, limits, errors, the OpenAPI document, metrics, tool
sessions, readiness, batching and reload on a file change; subprocess servers
(``python -m routecore.serve.cli``) cover SIGHUP, SIGTERM and the bind check.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx  # the serve extra and jsonschema are in the test extra: missing, the suite fails, never skips
import jsonschema
import prometheus_client  # noqa: F401
import pytest
import starlette  # noqa: F401
import uvicorn
import yaml

from conftest import ROOT
from routecore.decision import Decision
from routecore.examples import IT_OPS_ROUTES, TOOLS
from routecore.serve.app import Limits, RouterSource, create_app
from routecore.serve.batcher import Batching
from routecore.serve.openapi import document

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
QUERIES = [
    "the production server is down",
    "how do I configure the VPN client on Linux",
    "hello, how are you",
    "le site renvoie des erreurs 500",
    "where is the runbook for Kafka",
    "tell me a joke",
    "device logs",
    "database connections keep timing out",
    "quelle est la procédure de rotation des identifiants",
    "the payment service is very slow",
    "thanks for your help",
    "which ports must be open for the reverse proxy",
]
BILLING = {
    "name": "BILLING",
    "description": "Invoices, refunds and payment plans",
    "domain": "finance",
    "utterances": [
        "send me my last invoice",
        "I want a refund for my order",
        "change my payment plan",
        "why was I charged twice this month",
    ],
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def combo_config(path: Path, extra_routes: list | None = None) -> Path:
    """The IT-ops routes and the example tools in one config file."""
    cfg = yaml.safe_load(IT_OPS_ROUTES.read_text(encoding="utf-8"))
    cfg["tools"] = yaml.safe_load(TOOLS.read_text(encoding="utf-8"))["tools"]
    cfg["routes"] += extra_routes or []
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


class ThreadServer:
    """uvicorn serving ``app`` from a thread of this process."""

    def __init__(self, app, **kw):
        self.app = app
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on", **kw)
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(20)
        assert not self.thread.is_alive()

    @property
    def state(self):
        return self.app.state.server


def wait_ready(url: str, timeout: float = 60.0, generation: int = 1, headers: dict | None = None) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        try:
            r = httpx.get(f"{url}/readyz", timeout=5, headers=headers)
            if r.status_code == 200 and r.json()["generation"] >= generation:
                return r.json()
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"not ready (generation {generation}) after {timeout} s"
        time.sleep(0.05)


def strip(d: dict) -> dict:
    """A decision or tool belt without its timings (the only field batching changes)."""
    return {k: v for k, v in d.items() if k != "timings"}


def sample(text: str, prefix: str) -> float:
    """The sum of the samples whose line starts with ``prefix`` (name plus the start of its labels)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix))


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Path:
    return combo_config(tmp_path_factory.mktemp("serve") / "combo.yaml")


@pytest.fixture(scope="module")
def router(config, encoder):
    from routecore import Router

    return Router.from_config(config, encoder=encoder)


@pytest.fixture(scope="module")
def spec():
    return document("test")


def check(spec: dict, name: str, body) -> None:
    """Validate ``body`` against the OpenAPI document's schema ``name``."""
    jsonschema.Draft202012Validator(
        {"$ref": f"#/components/schemas/{name}", "components": spec["components"]}
    ).validate(body)


def test_import_routecore_does_not_import_the_server():
    code = (
        "import sys, routecore, routecore.cli; routecore.cli.build_parser(); "
        "import routecore.serve, routecore.serve.cli; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('starlette', 'uvicorn', 'prometheus_client') "
        "or m == 'routecore.serve.app']; "
        "assert not bad, bad"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert p.returncode == 0, p.stderr


@pytest.fixture
def lessons(router):
    """An in-memory lesson store, attached to the module's router for one test."""
    from routecore.memory.memory import ExperienceMemory

    yield ExperienceMemory(":memory:")
    router.memory = None


def test_endpoints_auth_limits_errors_openapi_metrics(router, spec, lessons):
    app = create_app(
        router,
        token=TOKEN,
        limits=Limits(max_body_bytes=4096, max_query_chars=300, max_batch=8),
        memory=lessons,
    )
    with ThreadServer(app) as s, httpx.Client(base_url=s.url, timeout=30) as c:
        # probes need no token; readyz says the router is in place
        assert c.get("/healthz").json() == {"status": "ok"}
        ready = c.get("/readyz")
        assert ready.status_code == 200 and ready.json() == {"ready": True, "generation": 1}
        check(spec, "Ready", ready.json())
        # auth: 401 without a token or with a wrong one, as JSON errors
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic abc"}):
            r = c.post("/v1/route", json={"query": "hi"}, headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer"), r.text
            check(spec, "ErrorResponse", r.json())
        assert (
            "wrong"
            in c.post("/v1/route", json={"query": "hi"}, headers={"Authorization": "Bearer nope"}).json()[
                "error"
            ]["message"]
        )
        assert c.get("/metrics").status_code == 401
        c.headers.update(AUTH)

        # every endpoint answers what the Python API returns, in the documented shape
        r = c.post("/v1/route", json={"query": QUERIES[0]})
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        check(spec, "Decision", r.json())
        assert strip(r.json()) == strip(json.loads(router.route(QUERIES[0]).to_json()))
        r = c.post(
            "/v1/route", json={"query": QUERIES[1], "previous": "RAG", "context_domains": ["knowledge"]}
        )
        assert strip(r.json()) == strip(
            router.route(QUERIES[1], previous="RAG", context_domains=["knowledge"]).to_dict()
        )
        r = c.post(
            "/v1/route/batch", json={"queries": QUERIES[:4], "previous": [None, "RAG", None, "INCIDENT"]}
        )
        check(spec, "RouteBatchResponse", r.json())
        want = router.route_batch(QUERIES[:4], previous=[None, "RAG", None, "INCIDENT"])
        assert [strip(d) for d in r.json()["decisions"]] == [strip(d.to_dict()) for d in want]
        follows = [QUERIES[0], None, "  ", QUERIES[3]]  # the previous turns' texts, as route() takes them
        r = c.post("/v1/route", json={"query": QUERIES[2], "previous_query": QUERIES[0]})
        assert strip(r.json()) == strip(router.route(QUERIES[2], previous_query=QUERIES[0]).to_dict())
        r = c.post("/v1/route/batch", json={"queries": QUERIES[:4], "previous_query": follows})
        want = router.route_batch(QUERIES[:4], previous_query=follows)
        assert [strip(d) for d in r.json()["decisions"]] == [strip(d.to_dict()) for d in want]
        # the answer to a clarification: the clarify decision as /v1/route returned it
        asked = {**c.post("/v1/route", json={"query": QUERIES[1]}).json(), "action": "clarify"}
        asked.update(candidates=["INCIDENT", "RAG"], question="Do you mean an incident or a document?")
        r = c.post("/v1/route", json={"query": "the second one", "clarify": asked})
        want = router.route("the second one", clarify=Decision.from_dict(asked))
        assert strip(r.json()) == strip(json.loads(want.to_json())) and r.json()["route"] == "RAG"
        check(spec, "Decision", r.json())  # the routes not offered score null
        assert r.json()["adjusted_scores"]["GENERAL"] is None
        for bad, said in (
            ({"action": "clarify"}, "clarify: "),
            ({**asked, "action": "route"}, "not 'clarify'"),
            ({**asked, "candidates": [1, 2]}, "must be a list of route names"),
            ({**asked, "candidates": "INCIDENT"}, "must be a list of route names"),
            ({**asked, "candidates": ["INCIDENT", "NOPE"]}, "['NOPE'] are not routes"),
            ({**asked, "query": "x" * 301}, "clarify.query is 301 characters"),  # the limit of every query
        ):
            r = c.post("/v1/route", json={"query": "the first", "clarify": bad})
            assert r.status_code == 422 and said in r.json()["error"]["message"], (bad, r.text)
        r = c.post("/v1/tools", json={"query": "device logs", "top_k": 3})
        check(spec, "ToolBelt", r.json())
        assert (
            strip(r.json()) == strip(router.tools("device logs", top_k=3).to_dict()) and r.json()["collision"]
        )
        # the call's floor and candidates, as Router.tools takes them
        only = ["get_system_logs", "ha_get_logs", "restart_service"]
        r = c.post("/v1/tools", json={"query": "device logs", "candidates": only, "threshold": 0.5})
        want = router.tools("device logs", candidates=only, threshold=0.5)
        assert strip(r.json()) == strip(want.to_dict()) and set(r.json()["names"]) - {"search_docs"} <= set(
            only
        )
        r = c.post("/v1/tools", json={"query": "device logs", "candidates": ["nope"]})
        assert r.status_code == 422 and r.json()["error"]["type"] == "InvalidArgumentError", r.text
        r = c.post("/v1/tools", json={"query": "device logs", "session_id": "s0", "candidates": only})
        assert r.status_code == 422 and "candidates cannot be given with session_id" in r.text
        # the active domains, as /v1/route takes them; context_domain (one name) is the old form
        want = strip(router.tools("device logs", context_domains=["system"]).to_dict())
        for body in ({"context_domains": ["system"]}, {"context_domain": "system"}):
            assert strip(c.post("/v1/tools", json={"query": "device logs", **body}).json()) == want

        # request_more_tools sessions: opened by /v1/tools or /v1/tools/more, breaker after the policy's limit
        limit = router.policy.more_tools_limit
        r = c.post("/v1/tools", json={"query": "turn on the kitchen lights", "session_id": "turn-1"})
        check(spec, "ToolBelt", r.json())
        session = r.json()["session"]
        assert (
            session["calls"] == 0
            and not session["breaker_open"]
            and session["tool_names"][-1] == "request_more_tools"
        )
        local = router.tool_session("turn on the kitchen lights")
        for call in range(1, limit + 2):
            r = c.post("/v1/tools/more", json={"session_id": "turn-1"})
            assert r.status_code == 200, r.text
            check(spec, "MoreToolsResponse", r.json())
            assert [t["name"] for t in r.json()["tools"]] == [t.name for t in local.request_more_tools()]
            assert r.json()["names"] == [t["name"] for t in r.json()["tools"]]
            code = "circuit_breaker" if call > limit else "more" if r.json()["tools"] else "no_tool"
            assert r.json()["reason"]["code"] == code, r.json()["reason"]
            assert not [
                a for a in r.json()["alerts"] if a["kind"] == "no_tool"
            ]  # the first belt's: not repeated
            assert r.json()["session"]["calls"] == min(call, limit)
            assert r.json()["session"]["breaker_open"] == (call >= limit)
        assert r.json()["tools"] == [] and "request_more_tools" not in r.json()["session"]["tool_names"]
        assert any(a["kind"] == "circuit_breaker" for a in r.json()["alerts"])
        weather = c.post("/v1/tools", json={"query": "what's the weather in Paris", "session_id": "turn-3"})
        assert any(a["kind"] == "no_tool" for a in weather.json()["alerts"])  # the first belt's answer
        more = c.post("/v1/tools/more", json={"session_id": "turn-3", "request": "restart nginx"}).json()
        assert more["tools"] and not [a for a in more["alerts"] if a["kind"] == "no_tool"]
        r = c.post(
            "/v1/tools/more",
            json={"session_id": "turn-2", "query": "restart nginx on web-1", "request": "service logs"},
        )
        assert r.status_code == 200 and r.json()["session"]["calls"] == 1
        # the TTL: an expired session is unknown (404 without a query), a query opens it again
        s.state.sessions.ttl = 0.2
        c.post("/v1/tools/more", json={"session_id": "turn-2"})
        time.sleep(0.4)
        r = c.post("/v1/tools/more", json={"session_id": "turn-2"})
        assert (
            r.status_code == 404
            and r.json()["error"]["type"] == "UnknownSession"
            and "expired" in r.json()["error"]["message"]
        )
        check(spec, "ErrorResponse", r.json())
        r = c.post("/v1/tools/more", json={"session_id": "turn-2", "query": "restart nginx on web-1"})
        assert r.status_code == 200 and r.json()["session"]["calls"] == 1
        s.state.sessions.ttl = 300.0

        # lessons
        r = c.post("/v1/lessons", json={"query": "device logs", "tool": "ha_get_logs", "use": False})
        assert r.status_code == 201 and isinstance(r.json()["id"], int)
        check(spec, "LessonResponse", r.json())
        assert "ha_get_logs" not in [
            t["name"] for t in c.post("/v1/tools", json={"query": "device logs"}).json()["tools"]
        ]

        # 4xx JSON errors that name the problem
        bad = [
            (c.post("/v1/route", content=b"{not json"), 400, "InvalidJSON", "not JSON"),
            (c.post("/v1/route", content=b""), 400, "InvalidJSON", "empty"),
            (c.post("/v1/route", json={"query": 3}), 422, "ValidationError", "$.query"),
            (c.post("/v1/route", json={}), 422, "ValidationError", "query"),
            (c.post("/v1/route", json={"query": "x", "colour": 1}), 422, "ValidationError", "colour"),
            (
                c.post("/v1/route", json={"query": "x", "previous": "NOPE"}),
                422,
                "InvalidArgumentError",
                "NOPE",
            ),
            (
                c.post("/v1/route/batch", json={"queries": ["a", "b"], "previous": ["RAG"]}),
                422,
                "ValidationError",
                "previous",
            ),
            (
                c.post("/v1/route/batch", json={"queries": ["a", "b"], "previous_query": ["x", "y", "z"]}),
                422,
                "ValidationError",
                "previous_query holds 3 texts for 2 queries",
            ),
            (
                c.post("/v1/route/batch", json={"queries": ["a", "b"], "previous": "NOPE"}),
                422,
                "InvalidArgumentError",
                "NOPE",
            ),
            (c.post("/v1/tools", json={"query": "x", "top_k": 0}), 422, "ValidationError", "top_k"),
            (
                c.post("/v1/tools", json={"query": "x", "context_domains": ["a"], "context_domain": "a"}),
                422,
                "ValidationError",
                "not both",
            ),
            (
                c.post("/v1/tools", json={"query": "x", "top_k": 2, "session_id": "a"}),
                422,
                "ValidationError",
                "top_k",
            ),
            (
                c.post("/v1/lessons", json={"query": "x", "tool": "nope", "use": True}),
                422,
                "InvalidArgumentError",
                "nope",
            ),
            (c.post("/v1/route", json={"query": "x" * 301}), 422, "QueryTooLong", "300"),
            (c.post("/v1/route/batch", json={"queries": ["x"] * 9}), 422, "BatchTooLarge", "8"),
            (c.post("/v1/route", json={"query": "x" * 5000}), 413, "BodyTooLarge", "4096"),
            (
                c.post("/v1/route", content=(b"x" for _ in range(5000))),
                413,
                "BodyTooLarge",
                "4096",
            ),  # chunked, no length
            (c.get("/v1/nothing"), 404, "NotFound", "/v1/nothing"),
            (c.get("/v1/route"), 405, "MethodNotAllowed", "GET"),
        ]
        for r, status, kind, words in bad:
            assert r.status_code == status, (r.status_code, r.text)
            assert r.json()["error"]["type"] == kind and words in r.json()["error"]["message"], r.text
            check(spec, "ErrorResponse", r.json())

        # the OpenAPI document served is the one tested, and a valid one
        doc = c.get("/openapi.json").json()
        assert doc == json.loads(json.dumps(document(s.state.version)))
        assert set(doc["paths"]) >= {
            "/v1/route",
            "/v1/route/batch",
            "/v1/tools",
            "/v1/tools/more",
            "/v1/lessons",
            "/healthz",
            "/readyz",
            "/metrics",
        }
        for schema in doc["components"]["schemas"].values():
            jsonschema.Draft202012Validator.check_schema(schema)

        text = c.get("/metrics").text
    assert sample(text, 'routecore_http_requests_total{endpoint="/v1/route",method="POST",status="200"}') == 5
    assert sample(text, 'routecore_http_requests_total{endpoint="/v1/route",method="POST",status="401"}') == 4
    assert sample(text, 'routecore_http_requests_total{endpoint="other",method="GET",status="404"}') == 1
    assert sample(text, 'routecore_http_request_duration_seconds_count{endpoint="/v1/route"}') >= 3
    assert sample(text, 'routecore_stage_duration_seconds_count{endpoint="/v1/route",stage="encode"}') == 5
    assert sample(text, 'routecore_stage_duration_seconds_count{endpoint="/v1/route",stage="rest"}') == 5
    assert sample(text, "routecore_decisions_total{") == 13  # 5 routes + 2 batches of 4
    assert sample(text, 'routecore_decisions_total{action="route",route="INCIDENT",tier="high"}') >= 1
    assert sample(text, "routecore_circuit_breaker_trips_total ") == 1
    assert (
        sample(text, "routecore_llm_calls_total ") == 0
        and "routecore_llm_errors_total 0.0" in text
        and "routecore_llm_timeouts_total 0.0" in text
    )
    assert "routecore_encoder_cache_hits_total" in text and "routecore_encoder_cache_hit_ratio" in text
    assert sample(text, "routecore_ready ") == 1 and sample(text, "routecore_router_generation ") == 1
    assert sample(text, 'routecore_batch_size_count{kind="route"}') == 4  # the clarified one alone


def test_readyz_before_and_after_the_load(router):
    release = threading.Event()

    def slow_load():
        assert release.wait(20)
        return router

    with ThreadServer(create_app(slow_load)) as s, httpx.Client(base_url=s.url, timeout=10) as c:
        r = c.get("/readyz")
        assert r.status_code == 503 and r.json() == {"ready": False, "generation": 0, "reason": "loading"}
        assert c.get("/healthz").status_code == 200
        r = c.post("/v1/route", json={"query": "hi"})
        assert (
            r.status_code == 503
            and r.json()["error"]["type"] == "NotReady"
            and r.headers["retry-after"] == "1"
        )
        release.set()
        wait_ready(s.url)
        assert c.post("/v1/route", json={"query": "hi"}).status_code == 200

    def broken():
        from routecore.errors import ConfigError

        raise ConfigError("routes.yaml: route 'X' has no utterances")

    with ThreadServer(create_app(broken)) as s, httpx.Client(base_url=s.url, timeout=10) as c:
        deadline = time.monotonic() + 10
        while "failed" not in c.get("/readyz").json().get("reason", ""):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        r = c.get("/readyz")
        assert r.status_code == 503 and "no utterances" in r.json()["reason"]
        assert "no utterances" in c.post("/v1/route", json={"query": "hi"}).json()["error"]["message"]


async def _concurrently(url: str, path: str, bodies: list[dict]) -> list[dict]:
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=64)) as c:
        rs = await asyncio.gather(*(c.post(path, json=b) for b in bodies))
    assert all(r.status_code == 200 for r in rs), [r.text for r in rs if r.status_code != 200]
    return [r.json() for r in rs]


def test_batching_gives_the_unbatched_decisions(router):
    routes = [
        {
            "query": f"{q} (case {i})",
            **({"previous": "RAG"} if i % 3 == 0 else {}),
            **({"context_domains": ["operations"]} if i % 4 == 0 else {}),
            **({"previous_query": QUERIES[0]} if i % 5 == 0 else {}),
        }
        for i, q in enumerate(QUERIES * 2)
    ]
    tools = [
        {
            "query": f"{q} #{i}",
            **({"context_domains": ["system"]} if i % 2 else {}),
            **({"top_k": 2} if i % 3 == 0 else {}),
        }
        for i, q in enumerate(QUERIES)
    ]
    out = {}
    for on in (True, False):
        app = create_app(router, batching=Batching(enabled=on, window_ms=5, max_batch=16))
        with ThreadServer(app) as s:
            out[on] = (
                asyncio.run(_concurrently(s.url, "/v1/route", routes)),
                asyncio.run(_concurrently(s.url, "/v1/tools", tools)),
            )
            text = httpx.get(f"{s.url}/metrics").text
        batches = sample(text, 'routecore_batch_size_count{kind="route"}')
        if on:  # requests were gathered: fewer batches than requests
            assert 1 <= batches < len(routes) and sample(
                text, 'routecore_batch_size_sum{kind="route"}'
            ) == len(routes)
            assert sample(text, 'routecore_batch_size_count{kind="tools"}') < len(tools)
        else:
            assert batches == 0
    for batched, single in zip(out[True], out[False]):
        assert [strip(d) for d in batched] == [strip(d) for d in single]
    assert [d["query"] for d in out[True][0]] == [
        b["query"] for b in routes
    ]  # each answer went to its own request
    assert [strip(d) for d in out[True][0]] == [
        strip(
            router.route(
                b["query"],
                previous=b.get("previous"),
                context_domains=b.get("context_domains", ()),
                previous_query=b.get("previous_query"),
            ).to_dict()
        )
        for b in routes
    ]


def test_session_store_expiry_and_size():
    from routecore.serve.app import SessionStore
    from routecore.serve.metrics import Metrics

    now = [0.0]
    store = SessionStore(10.0, 3, Metrics(lambda: None), clock=lambda: now[0])
    for i in range(4):
        store.put(f"s{i}", object())
        now[0] += 1
    assert store.get("s0") is None and store.get("s1") is not None  # the least recently used went first
    now[0] = 13.5  # s2 and s3 expired (last used at 2 and 3, 10 s ttl); s1 was used at 4
    assert store.get("s2") is None and store.get("s3") is None and store.get("s1") is not None
    now[0] = 30.0
    store.sweep()
    assert store.get("s1") is None and not store._sessions


def test_a_bad_request_fails_alone_in_a_batch(router):
    from dataclasses import replace

    from routecore.errors import InvalidArgumentError
    from routecore.serve.batcher import RouteItem, ToolsItem, run_routes, run_tools

    items = [
        RouteItem(QUERIES[0]),
        RouteItem(QUERIES[1], previous="NOPE"),
        RouteItem(QUERIES[2], previous="RAG"),
        RouteItem(QUERIES[3], context_domains=("knowledge",)),
    ]
    asked = replace(router.route(QUERIES[0]), action="clarify", candidates=("INCIDENT", "RAG"))
    items.append(RouteItem("the second one", clarify=asked))  # read alone, with its clarify
    out = run_routes(router, items)
    assert isinstance(out[1], InvalidArgumentError)
    assert strip(out[4].to_dict()) == strip(router.route("the second one", clarify=asked).to_dict())
    for i in (0, 2, 3):
        it = items[i]
        want = router.route(it.query, previous=it.previous, context_domains=it.context_domains)
        assert strip(out[i].to_dict()) == strip(want.to_dict())
    only = ("get_system_logs", "check_disk_usage")
    belts = run_tools(
        router,
        [
            ToolsItem("device logs"),
            ToolsItem("restart nginx", top_k=0),
            ToolsItem("disk full", ("system",)),
            ToolsItem("disk full", candidates=only),
            ToolsItem("device logs", candidates=only),
        ],
    )
    assert isinstance(belts[1], InvalidArgumentError) and strip(belts[2].to_dict()) == strip(
        router.tools("disk full", context_domains=["system"]).to_dict()
    )
    for b, q in ((belts[3], "disk full"), (belts[4], "device logs")):  # one tools_batch for the two
        assert strip(b.to_dict()) == strip(router.tools(q, candidates=only).to_dict())


class SlowLLM:
    """An LLM fallback that takes 50 ms, fails on "boom" and times out on "slow"; tracks its concurrency."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running = self.most = 0

    def choose(self, request):
        from routecore.errors import LLMError
        from routecore.llm.llm import LLMChoice

        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(0.05)
            if "boom" in request.query:
                raise LLMError("LLM server answered HTTP 500 at http://llm")
            if "slow" in request.query:
                raise LLMError(
                    "LLM server unreachable or too slow at http://llm: "
                    "the answer took longer than the timeout"
                )
            return LLMChoice(sorted(n for n, _ in request.routes)[-1])
        finally:
            with self.lock:
                self.running -= 1


def test_llm_fallback_in_batches_runs_in_parallel_and_is_counted(config, encoder):
    """With an LLM, a micro-batch is embedded once and its decisions (and LLM calls) run in
    parallel: the same decisions as route(), and calls, errors and timeouts in the metrics."""
    from routecore import Router
    from routecore.decide.policy import Policy

    llm = SlowLLM()
    r = Router.from_config(
        config, encoder=encoder, llm=llm, policy=Policy(high=0.99999, min_score=0.0, head="off")
    )  # every turn asks the LLM
    bodies = [
        {"query": f"{q} {'boom' if i % 5 == 1 else 'slow' if i % 5 == 2 else ''} {i}"}
        for i, q in enumerate(QUERIES)
    ]
    with ThreadServer(create_app(r, batching=Batching(window_ms=20, max_batch=16))) as s:
        got = asyncio.run(_concurrently(s.url, "/v1/route", bodies))
        text = httpx.get(f"{s.url}/metrics").text
    assert llm.most > 1  # the calls of a batch overlapped
    want = [r.route(b["query"]).to_dict() for b in bodies]
    assert [strip(d) for d in got] == [strip(d) for d in want]
    assert all(d["timings"]["encode"] > 0 for d in got)  # the batch's encoder time, shared out
    asked = [d for d in got if d["used_llm"] or (d["fallback"] or "").startswith("llm failed")]
    failed = [d for d in asked if not d["used_llm"]]
    slow = [d for d in failed if "too slow" in d["fallback"]]
    assert len(asked) >= len(bodies) // 2 and failed and slow and len(slow) < len(failed)
    assert sample(text, "routecore_llm_calls_total ") == len(asked)
    assert sample(text, "routecore_llm_errors_total ") == len(failed)
    assert sample(text, "routecore_llm_timeouts_total ") == len(slow)


class Load:
    """Threads sending ``POST /v1/route`` in a loop; every answer is kept (status, route names)."""

    def __init__(self, url: str, headers: dict | None = None, threads: int = 4):
        self.url, self.headers = url, headers or {}
        self.stop = threading.Event()
        self.results: list[tuple[int, frozenset]] = []
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(threads)]

    def _run(self, k: int) -> None:
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=30) as c:
            i = 0
            while not self.stop.is_set():
                i += 1
                try:
                    r = c.post("/v1/route", json={"query": f"{QUERIES[(i + k) % len(QUERIES)]} {k}-{i}"})
                    self.results.append((r.status_code, frozenset(r.json().get("probabilities", {}))))
                except Exception as e:  # noqa: BLE001 - counted as a failed request
                    self.errors.append(repr(e))

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def check(self, old: set, new: set) -> None:
        """No failed request, and every decision is wholly the old router's or the new one's."""
        assert not self.errors, self.errors[:3]
        assert self.results and all(status == 200 for status, _ in self.results), {s for s, _ in self.results}
        seen = {names for _, names in self.results}
        assert seen <= {frozenset(old), frozenset(new)}, seen
        assert frozenset(new) in seen and frozenset(old) in seen


def test_reload_on_config_change_under_load(tmp_path, encoder):
    cfg = combo_config(tmp_path / "routes.yaml")
    app = create_app(
        RouterSource(config=cfg, encoder=encoder, cache=False), reload_poll_s=0.1, reload_settle_s=0.5
    )
    old, new = {"INCIDENT", "RAG", "GENERAL"}, {"INCIDENT", "RAG", "GENERAL", "BILLING"}
    with ThreadServer(app) as s:
        wait_ready(s.url)
        with Load(s.url) as load:
            time.sleep(0.3)
            combo_config(tmp_path / "routes.tmp", [BILLING]).replace(cfg)  # an atomic save, as editors do
            wait_ready(s.url, generation=2)
            time.sleep(0.3)
        load.check(old, new)
        assert (
            httpx.post(f"{s.url}/v1/route", json={"query": "I want a refund for my order"}).json()["route"]
            == "BILLING"
        )
        # a broken config keeps the old router serving (written in place: loaded once unchanged for 0.5 s)
        cfg.write_text("routes: [{name: X}]\n", encoding="utf-8")
        deadline = time.monotonic() + 10
        while 'routecore_reloads_total{result="failed"} 1.0' not in httpx.get(f"{s.url}/metrics").text:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert httpx.get(f"{s.url}/readyz").json() == {"ready": True, "generation": 2}
        assert httpx.post(f"{s.url}/v1/route", json={"query": "I want a refund"}).json()["route"] == "BILLING"


def test_bind_check_refuses_a_public_address_without_a_token(tmp_path):
    from routecore.serve.cli import is_loopback, resolve_token

    env = {k: v for k, v in os.environ.items() if k != "ROUTECORE_SERVE_TOKEN"}
    p = subprocess.run(
        [sys.executable, "-m", "routecore.serve.cli", "--config", str(IT_OPS_ROUTES), "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
    )
    assert (
        p.returncode == 2
        and "refusing to listen on 0.0.0.0 without a bearer token" in p.stderr
        and "--insecure" in p.stderr
    )
    assert all(map(is_loopback, ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.1.2.3", "example.com"]))
    f = tmp_path / "token"
    f.write_text(" abc \n")
    assert resolve_token("NO_SUCH_VAR_X", str(f)) == "abc" and resolve_token("NO_SUCH_VAR_X", None) is None


def test_sighup_reload_under_load_then_graceful_shutdown(tmp_path, router, encoder):
    """A subprocess server on a bundle: SIGHUP swaps in a new bundle under load with no failed
    request; SIGTERM lets a request in flight finish, then the process shuts down cleanly."""
    from routecore import Router

    bundle = tmp_path / "bundle"
    router.save(bundle)
    new_router = Router.from_config(combo_config(tmp_path / "new.yaml", [BILLING]), encoder=encoder)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "routecore.serve.cli",
            "--bundle",
            str(bundle),
            "--port",
            str(port),
            "--token-file",
            str(token_file),
            "--reload-poll",
            "0",
            "--log-level",
            "info",
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_ready(url)
        assert httpx.post(f"{url}/v1/route", json={"query": "hi"}).status_code == 401
        with Load(url, AUTH) as load:
            time.sleep(0.3)
            new_router.save(bundle)  # no poll (--reload-poll 0): only the signal reloads
            time.sleep(0.2)
            assert httpx.get(f"{url}/readyz").json()["generation"] == 1
            proc.send_signal(signal.SIGHUP)
            wait_ready(url, generation=2)
            time.sleep(0.3)
        load.check({"INCIDENT", "RAG", "GENERAL"}, {"INCIDENT", "RAG", "GENERAL", "BILLING"})

        # graceful shutdown: a batch of 96 new queries is in flight when SIGTERM arrives
        queries = [f"{q} (drain {i})" for i, q in enumerate(QUERIES * 8)]
        answer: dict = {}

        def slow() -> None:
            answer["r"] = httpx.post(
                f"{url}/v1/route/batch", json={"queries": queries}, headers=AUTH, timeout=60
            )

        t = threading.Thread(target=slow)
        t.start()
        deadline = time.monotonic() + 10
        while (
            sample(httpx.get(f"{url}/metrics", headers=AUTH).text, "routecore_in_flight_requests ") < 2
        ):  # itself + the batch
            assert time.monotonic() < deadline, "the batch request never arrived"
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        t.join(60)
        r = answer["r"]
        assert r.status_code == 200 and len(r.json()["decisions"]) == len(queries)
        assert r.json()["decisions"][0]["query"] == queries[0]
        # uvicorn re-raises the signal once shut down, so the exit is by SIGTERM, after a clean shutdown
        assert proc.wait(30) in (0, -signal.SIGTERM)
        log = proc.stderr.read()
        assert "generation 2" in log and "Application shutdown complete" in log and "Traceback" not in log, (
            log
        )
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/healthz", timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
