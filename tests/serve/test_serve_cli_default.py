"""`routecore serve` without --config or --bundle serves `routecore route`'s default (issue 35 §6)."""

from __future__ import annotations

import httpx

from routecore import Router
from routecore.examples import IT_OPS_ROUTES
from serve_process import ServeProcess


def test_serve_without_a_config_serves_the_route_default(encoder):
    query = "le serveur de production est en panne"
    with ServeProcess("--reload-poll", "0") as srv:
        got = httpx.post(f"{srv.url}/v1/route", json={"query": query}, timeout=60).json()
    want = Router.from_config(IT_OPS_ROUTES, encoder=encoder).route(query)
    assert got["action"] == want.action and got["route"] == want.route
