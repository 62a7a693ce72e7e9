"""``routecore.serve.http``: the gate's request metrics (issue 36 §3), on a real ``routecore serve``."""

from __future__ import annotations

import os
import random
import string

import httpx
import pytest
import yaml

from routecore.examples import IT_OPS_ROUTES
from routecore.serve.http import METHODS, metric_labels
from serve_process import ServeProcess

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


def test_invalid_utf8_and_lone_surrogates_are_routed_with_an_alert(tmp_path):
    """Issue 36 §2 on the sidecar: bytes that are not UTF-8 inside a JSON string answered 500, and an
    escaped lone surrogate (half an emoji) a misleading 400. Both are now read, and the router removes
    them from the query with an ``invalid_text`` alert, as the library and the command line do."""
    bodies = {
        "/v1/route": b'{"query": "the production server is down \xe9\xff"}',
        "/v1/tools": b'{"query": "device logs \\ud83d"}',
        "/v1/route/batch": b'{"queries": ["the production server is down \\ud83d", '
        b'"le serveur est en panne"]}',
    }
    combo = yaml.safe_load(IT_OPS_ROUTES.read_text(encoding="utf-8"))
    combo["tools"] = yaml.safe_load((IT_OPS_ROUTES.parent / "tools.yaml").read_text(encoding="utf-8"))[
        "tools"
    ]
    cfg = tmp_path / "combo.yaml"
    cfg.write_text(yaml.safe_dump(combo, allow_unicode=True), encoding="utf-8")
    with (
        ServeProcess("--config", str(cfg), "--reload-poll", "0") as s,
        httpx.Client(base_url=s.url, timeout=30) as c,
    ):
        answers = {path: c.post(path, content=body) for path, body in bodies.items()}
        lesson = c.post(
            "/v1/lessons", content=b'{"query": "device logs \\udc00", "tool": "get_system_logs", "use": true}'
        )
        bad = [c.post("/v1/route", content=b) for b in (b'{"query": NaN}', b'{"query": "x"', b"\xff")]
    for path, r in answers.items():
        assert r.status_code == 200, (path, r.text)
    route, tools, batch = (answers[p].json() for p in bodies)
    assert route["route"] == "INCIDENT" and "invalid_text" in {a["kind"] for a in route["alerts"]}
    assert route["query"] == "the production server is down"  # the bytes removed, as lone surrogates are
    assert "invalid_text" in {a["kind"] for a in tools["alerts"]}
    first, second = batch["decisions"]
    assert first["route"] == second["route"] == "INCIDENT"
    assert "invalid_text" in {a["kind"] for a in first["alerts"]} and not second["alerts"]
    assert lesson.status_code == 201, lesson.text
    assert [r.status_code for r in bad] == [400, 400, 400]  # still not JSON
    assert all(r.json()["error"]["type"] == "InvalidJSON" for r in bad)
