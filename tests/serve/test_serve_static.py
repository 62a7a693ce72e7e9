"""``routecore serve --static`` (issue 38 §4): the static tier's cascade behind the sidecar.

One real server (``python -m routecore.serve.cli``) serves MiniLM behind a small table distilled into
an empty model cache; the decisions say which tier gave them, alone, in a batch request and in the
micro-batches of concurrent requests. The bad combinations are refused before anything loads.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
import yaml

from conftest import MODELS, need_shared
from routecore.examples import IT_OPS_ROUTES, TOOLS
from routecore.serve.cli import main
from serve_process import ServeProcess

#: An exemplar of INCIDENT word for word: its table embedding is the exemplar's, so the table's
#: router routes it at the high tier.
STATIC = "the production server is down"
#: No piece of it has a row in the table: it embeds as zeros, never at the high tier (docs/static.md).
ESCALATED = "🚀🚀"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty model cache holding a small MiniLM table (nothing downloaded)."""
    from routecore.hub.distill import distill

    h = tmp_path_factory.mktemp("home")
    minilm = need_shared(MODELS / "all-minilm-l6-v2")
    distill(minilm, dims=32, vocab=3000, dest=h / "models" / "all-minilm-l6-v2-static")
    return h


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The IT-ops routes and the example tools."""
    cfg = yaml.safe_load(IT_OPS_ROUTES.read_text(encoding="utf-8"))
    cfg["tools"] = yaml.safe_load(TOOLS.read_text(encoding="utf-8"))["tools"]
    path = tmp_path_factory.mktemp("cfg") / "routes.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server(home: Path, config: Path) -> Iterator[ServeProcess]:
    env = {**os.environ, "ROUTECORE_HOME": str(home)}
    minilm = str(MODELS / "all-minilm-l6-v2")
    args = ("--config", str(config), "--model", minilm, "--static", "--reload-poll", "0")
    with ServeProcess(*args, "--batch-window-ms", "20", env=env) as srv:
        yield srv


def tier(d: dict[str, Any]) -> str:
    (alert,) = [a for a in d["alerts"] if a["kind"] == "cascade"]
    assert (
        alert["data"]["served_by"]
        == {"static": "fast", "transformer": "strong"}[alert["data"]["encoder_tier"]]
    )
    return str(alert["data"]["encoder_tier"])


def route(srv: ServeProcess, query: str) -> dict[str, Any]:
    r = httpx.post(f"{srv.url}/v1/route", json={"query": query}, timeout=60)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_the_table_decides_what_it_can_and_escalates_the_rest(server: ServeProcess) -> None:
    d = route(server, STATIC)
    assert (d["action"], d["route"], d["tier"], tier(d)) == ("route", "INCIDENT", "high", "static")
    e = route(server, ESCALATED)
    assert tier(e) == "transformer"
    (alert,) = [a for a in e["alerts"] if a["kind"] == "cascade"]
    assert alert["data"]["fast_tier"] != "high" or alert["data"]["fast_action"] != "route"


def test_batch_requests_and_micro_batches_keep_the_tiers(server: ServeProcess) -> None:
    queries = [STATIC, ESCALATED] * 4
    r = httpx.post(f"{server.url}/v1/route/batch", json={"queries": queries}, timeout=60)
    assert r.status_code == 200, r.text
    assert [tier(d) for d in r.json()["decisions"]] == ["static", "transformer"] * 4

    async def together() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
            rs = await asyncio.gather(*(c.post("/v1/route", json={"query": q}) for q in queries))
        return [x.json() for x in rs]

    before = metric(server, 'routecore_batch_size_sum{kind="route"}')
    got = asyncio.run(together())
    assert [tier(d) for d in got] == ["static", "transformer"] * 4
    assert [d["route"] for d in got[::2]] == ["INCIDENT"] * 4
    # the eight requests went through the micro-batcher (the cascade's route_batch)
    assert metric(server, 'routecore_batch_size_sum{kind="route"}') - before == len(queries)


def metric(srv: ServeProcess, name: str) -> float:
    text = httpx.get(f"{srv.url}/metrics", timeout=10).text
    (line,) = [ln for ln in text.splitlines() if ln.startswith(name + " ")]
    return float(line.split()[-1])


def test_metrics_count_the_tiers(server: ServeProcess) -> None:
    s0 = metric(server, 'routecore_cascade_decisions_total{encoder_tier="static"}')
    t0 = metric(server, 'routecore_cascade_decisions_total{encoder_tier="transformer"}')
    route(server, STATIC)
    route(server, ESCALATED)
    route(server, ESCALATED)
    assert metric(server, 'routecore_cascade_decisions_total{encoder_tier="static"}') == s0 + 1
    assert metric(server, 'routecore_cascade_decisions_total{encoder_tier="transformer"}') == t0 + 2


def test_tools_are_the_transformers_and_learning_is_refused(server: ServeProcess) -> None:
    r = httpx.post(f"{server.url}/v1/tools", json={"query": "restart the payment service"}, timeout=60)
    assert r.status_code == 200, r.text
    assert "tools" in r.json() and not [a for a in r.json()["alerts"] if a["kind"] == "cascade"]
    r = httpx.post(
        f"{server.url}/v1/learn", json={"query": "the disk is full", "route": "INCIDENT"}, timeout=60
    )
    assert r.status_code == 422 and r.json()["error"]["type"] == "ConfigError"
    assert "--static" in r.json()["error"]["message"]


@pytest.mark.parametrize(
    "argv, kind, words",
    [
        (["--static", "--bundle", "."], "ConfigError", "--static needs --config"),
        (["--static-model", "x-static"], "ConfigError", "give --static too"),
        (["--static"], "ModelError", "routecore models distill"),
        (["--static", "--static-model", "no-such-table"], "ModelError", "no-such-table"),
    ],
)
def test_bad_combinations_are_refused_before_loading(
    argv: list[str], kind: str, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("ROUTECORE_HOME", str(tmp_path))  # an empty model cache: no table
    assert main([*argv, "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["type"] == kind and words in err["message"], err
