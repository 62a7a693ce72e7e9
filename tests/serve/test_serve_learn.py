"""``POST /v1/learn`` (routecore.serve, issue 37): Router.learn behind the token rules of the other
endpoints."""

from __future__ import annotations

import httpx
import pytest
from test_serve import AUTH, TOKEN, ThreadServer, check, sample

from routecore import Router, RouteSpec
from routecore.serve.app import create_app
from routecore.serve.openapi import document

ROUTES = [
    RouteSpec("billing", ("my invoice is wrong", "I was charged twice", "refund my last payment")),
    RouteSpec("shipping", ("where is my parcel", "the delivery is late", "track my order")),
    RouteSpec("account", ("reset my password", "I cannot log in", "delete my account")),
]


@pytest.fixture
def router(encoder):
    return Router(ROUTES, encoder=encoder)


def test_learn_endpoint(router):
    spec = document("test")
    with ThreadServer(create_app(router, token=TOKEN)) as s, httpx.Client(base_url=s.url, timeout=30) as c:
        body = {"query": "the courier lost my box", "route": "shipping", "source": "agent"}
        for headers in ({}, {"Authorization": "Bearer nope"}):  # the token rules of /v1/route
            r = c.post("/v1/learn", json=body, headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer"), r.text
        assert router.learned() == []
        r = c.post("/v1/learn", json=body, headers=AUTH)
        assert r.status_code == 200, r.text
        check(spec, "LearnResponse", r.json())
        assert r.json()["status"] == "learned" and r.json()["id"] == 1 and r.json()["generation"] == 1
        (e,) = router.learned()
        assert (e.text, e.route, e.source) == ("the courier lost my box", "shipping", "agent")
        again = c.post("/v1/learn", json=body, headers=AUTH).json()
        assert (
            again["status"] == "duplicate" and again["id"] is None and again["reason"]["code"] == "duplicate"
        )
        d = c.post("/v1/route", json={"query": "the courier lost my box"}, headers=AUTH).json()
        assert d["generation"] == 1
        held = c.post(
            "/v1/learn", json={"query": "I cannot log in to my account", "route": "billing"}, headers=AUTH
        )
        assert held.json()["status"] == "held" and held.json()["decided"] == "account", held.text
        assert held.json()["reason"]["message"].startswith("the router routes it to account at the high tier")
        r = c.post("/v1/learn", json={"query": "will it rain", "route": "weather"}, headers=AUTH)
        assert r.status_code == 422 and r.json()["error"]["type"] == "UnknownRouteError", r.text
        check(spec, "ErrorResponse", r.json())
        r = c.post("/v1/learn", json={"query": "x", "route": "billing", "source": "robot"}, headers=AUTH)
        assert r.status_code in (400, 422), r.text
        assert "/v1/learn" in c.get("/openapi.json", headers=AUTH).json()["paths"]
        # The request counter names the endpoint (not "other"), as it does the others.
        text = c.get("/metrics", headers=AUTH).text
        assert (
            sample(text, 'routecore_http_requests_total{endpoint="/v1/learn",method="POST",status="401"}')
            == 2
        )


def test_learned_exemplars_are_listed_and_forgotten_over_http(router):
    """``GET /v1/learned`` and ``POST /v1/learned/forget``: Router.learned / held_for_review / forget, behind
    the token rules of the others."""
    spec = document("test")
    with ThreadServer(create_app(router, token=TOKEN)) as s, httpx.Client(base_url=s.url, timeout=30) as c:
        assert c.get("/v1/learned").status_code == 401
        c.post("/v1/learn", json={"query": "the courier lost my box", "route": "shipping"}, headers=AUTH)
        c.post("/v1/learn", json={"query": "I cannot log in", "route": "billing"}, headers=AUTH)  # held
        r = c.get("/v1/learned", headers=AUTH)
        assert r.status_code == 200, r.text
        check(spec, "LearnedResponse", r.json())
        (e,) = r.json()["learned"]
        assert (e["text"], e["route"], e["source"]) == ("the courier lost my box", "shipping", "user")
        assert [(h["query"], h["route"], h["decided"]) for h in r.json()["held"]] == [
            ("I cannot log in", "billing", "account")
        ]
        r = c.post("/v1/learned/forget", json={"ids": [e["id"], 999]}, headers=AUTH)
        assert r.status_code == 422 and "999" in r.json()["error"]["message"]  # nothing removed
        assert len(router.learned()) == 1
        r = c.post("/v1/learned/forget", json={"ids": [e["id"]]}, headers=AUTH)
        assert r.status_code == 200 and [x["id"] for x in r.json()["forgotten"]] == [e["id"]]
        check(spec, "ForgetResponse", r.json())
        assert router.learned() == [] and c.get("/v1/learned", headers=AUTH).json()["learned"] == []
        assert c.post("/v1/learned/forget", json={"ids": []}, headers=AUTH).status_code == 422
        paths = c.get("/openapi.json", headers=AUTH).json()["paths"]
        assert {"/v1/learned", "/v1/learned/forget"} <= set(paths)
