"""``routecore.serve.http``: the gate's request metrics (issue 36 §3), on a real ``routecore serve``."""

from __future__ import annotations

import os
import random
import string

import httpx
import pytest
from serve_process import ServeProcess

from routecore.examples import IT_OPS_ROUTES
from routecore.serve.http import METHODS, metric_labels

TOKEN = "metrics-token"


def labels_of(metrics: str, name: str) -> list[dict[str, str]]:
    """The label sets of every sample of ``name`` in a Prometheus text page."""
    out = []
    for line in metrics.splitlines():
        if line.startswith(name + "{"):
            body = line[len(name) + 1 : line.rindex("}")]
            out.append(
                dict((kv.split("=", 1)[0], kv.split("=", 1)[1].strip('"')) for kv in body.split(",") if kv)
            )
    return out


def test_metric_labels_come_from_closed_sets():
    assert metric_labels("/v1/route", "POST", 200) == ("/v1/route", "POST", "200")
    assert metric_labels("/v1/route/../x", "BREW", 200) == ("other", "other", "200")
    assert metric_labels("/metrics", "get", 999) == (
        "/metrics",
        "other",
        "other",
    )  # methods are case-sensitive
    assert {metric_labels("/", m, 404)[1] for m in METHODS} == METHODS


#: Methods httptools' parser knows beyond METHODS (it answers 400 to others); h11 lets any token through.
WEBDAV = ["PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "REPORT", "PURGE", "SEARCH"]


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_random_methods_and_paths_before_authentication_do_not_grow_the_metrics(http):
    """Unauthenticated requests with made-up methods and paths are counted under ``other``:
    the request counter keeps a bounded set of label values however many arrive."""
    env = {**os.environ, "ROUTECORE_SERVE_TOKEN": TOKEN}
    rng = random.Random(36)
    methods = (
        ["".join(rng.choices(string.ascii_uppercase, k=8)) for _ in range(40)] if http == "h11" else WEBDAV
    )
    with ServeProcess("--config", str(IT_OPS_ROUTES), "--reload-poll", "0", "--http", http, env=env) as s:
        with httpx.Client(base_url=s.url, timeout=30) as c:
            for i, m in enumerate(methods):
                assert c.request(m, f"/x{i}-{m}").status_code == 401  # refused before any handler
            text = c.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    samples = labels_of(text, "routecore_http_requests_total")
    assert {x["method"] for x in samples} <= METHODS | {"other"}
    assert {x["endpoint"] for x in samples} <= {"other", "/readyz", "/metrics"}
    other = [x for x in samples if x["method"] == "other"]
    assert len(other) == 1 and other[0]["endpoint"] == "other" and other[0]["status"] == "401"
    count = next(
        line
        for line in text.splitlines()
        if line.startswith('routecore_http_requests_total{endpoint="other",method="other"')
    )
    assert float(count.rsplit(" ", 1)[1]) == len(methods)
    assert not any(m in text for m in methods)
