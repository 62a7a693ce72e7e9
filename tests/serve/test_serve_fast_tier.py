"""``routecore serve --static`` / ``--fast-model``: a fast tier's cascade behind the sidecar.

One real server (``python -m routecore.serve.cli``) serves MiniLM behind a small table distilled into
an empty model cache (``--static``, issue 38 §4); the decisions say which tier gave them, alone, in a
batch request and in the micro-batches of concurrent requests. Another serves the bundled e5 behind
MiniLM (``--fast-model``) on an English config: the escalated queries are decided on both routers
against the pair's cuts (issue 34). The bad combinations are refused before anything loads.
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
def config(it_ops_with_tools: Path) -> Path:
    """The IT-ops routes and the example tools."""
    return it_ops_with_tools


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
    fast = 'routecore_cascade_decisions_total{encoder_tier="static",served_by="fast"}'
    strong = 'routecore_cascade_decisions_total{encoder_tier="transformer",served_by="strong"}'
    s0, t0 = metric(server, fast), metric(server, strong)
    route(server, STATIC)
    route(server, ESCALATED)
    route(server, ESCALATED)
    assert metric(server, fast) == s0 + 1
    assert metric(server, strong) == t0 + 2


def test_tools_are_the_transformers_and_learning_is_refused(server: ServeProcess) -> None:
    r = httpx.post(f"{server.url}/v1/tools", json={"query": "restart the payment service"}, timeout=60)
    assert r.status_code == 200, r.text
    (alert,) = [a for a in r.json()["alerts"] if a["kind"] == "cascade"]  # no shortlist: the model's belt
    assert alert["data"]["candidate_tier"] == "transformer" and alert["data"]["shortlist"] == []
    r = httpx.post(
        f"{server.url}/v1/learn", json={"query": "the disk is full", "route": "INCIDENT"}, timeout=60
    )
    assert r.status_code == 422 and r.json()["error"]["type"] == "ConfigError"
    assert "--static" in r.json()["error"]["message"]
    assert httpx.get(f"{server.url}/v1/learned", timeout=60).json() == {"learned": [], "held": []}
    r = httpx.post(f"{server.url}/v1/learned/forget", json={"ids": [1]}, timeout=60)
    assert r.status_code == 422 and r.json()["error"]["type"] == "ConfigError"


@pytest.mark.parametrize(
    "argv, kind, words",
    [
        (["--static", "--bundle", "."], "ConfigError", "--static needs --config"),
        (["--fast-model", "x", "--bundle", "."], "ConfigError", "--fast-model needs --config"),
        (["--static", "--fast-model", "x-static"], "ConfigError", "give one"),
        (["--static"], "ModelError", "routecore models distill"),
        (["--fast-model", "no-such-model"], "ModelError", "no-such-model"),
        (["--batch-window-ms", "2000"], "ConfigError", "between 0 and 1000"),  # not a traceback
        (["--max-batch", "0"], "ConfigError", "between 1 and 4096"),
    ],
)
def test_bad_combinations_are_refused_before_loading(
    argv: list[str], kind: str, words: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv("ROUTECORE_HOME", str(tmp_path))  # an empty model cache: no table
    assert main([*argv, "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["type"] == kind and words in err["message"], err


#: Five utterances a route: the smallest configs the pair's prior was measured on.
ENGLISH = {
    "BILLING": [
        "why was I charged twice",
        "my invoice is wrong",
        "refund my last payment",
        "update my card",
        "what is this fee on my statement",
    ],
    "OUTAGE": [
        "the site is down",
        "the app will not load",
        "servers are not responding",
        "we have an outage",
        "everything is broken",
    ],
    "ACCOUNT": [
        "reset my password",
        "change my email address",
        "delete my account",
        "I cannot sign in",
        "enable two-factor login",
    ],
    "SHIPPING": [
        "where is my parcel",
        "track my order",
        "my package has not arrived",
        "when will my order ship",
        "change my delivery address",
    ],
}


def test_a_model_in_front_of_the_bundled_one_combines_where_the_pair_was_measured(tmp_path: Path) -> None:
    """MiniLM in front of e5 on an English config: what MiniLM is unsure of is decided on both heads,
    against the pair's cuts; the alerts say so, and the metric counts the strong router's decisions."""
    cfg = tmp_path / "english.yaml"
    routes = [{"name": n, "utterances": u} for n, u in ENGLISH.items()]
    cfg.write_text(yaml.safe_dump({"routes": routes}), encoding="utf-8")
    minilm = str(need_shared(MODELS / "all-minilm-l6-v2"))
    args = ("--config", str(cfg), "--fast-model", minilm, "--reload-poll", "0")
    with ServeProcess(*args, env={**os.environ, "ROUTECORE_HOME": str(tmp_path / "home")}) as srv:
        queries = ["the site is down", "I was billed two times", "can you help me", "hello", "my box is lost"]
        r = httpx.post(f"{srv.url}/v1/route/batch", json={"queries": queries}, timeout=60)
        assert r.status_code == 200, r.text
        cascades = [next(a for a in d["alerts"] if a["kind"] == "cascade") for d in r.json()["decisions"]]
        assert cascades[0]["data"]["served_by"] == "fast"  # an exemplar word for word: MiniLM's, high tier
        escalated = [
            (d, a) for d, a in zip(r.json()["decisions"], cascades) if a["data"]["served_by"] == "strong"
        ]
        assert escalated, [a["data"] for a in cascades]
        assert all(a["data"]["combined"] and a["data"]["encoder_tier"] == "transformer" for _, a in escalated)
        scored = [d for d, _ in escalated if d["action"] != "none"]  # out of scope: no cut decided
        assert scored and all([x for x in d["alerts"] if x["kind"] == "pair_cuts"] for d in scored)
        n = metric(srv, 'routecore_cascade_decisions_total{encoder_tier="transformer",served_by="strong"}')
        assert n == len(escalated)


def test_the_fast_tier_has_the_routers_verbs(home: Path, config: Path) -> None:
    """What ``serve`` serves answers the calls a Router answers: route, batch and async alike."""
    from routecore import Encoder, Router
    from routecore.serve.fast_tier import fast_tier

    strong = Router.from_config(config, encoder=Encoder.load(str(MODELS / "all-minilm-l6-v2")))
    fast = Router.from_config(config, encoder=Encoder.load(str(home / "models" / "all-minilm-l6-v2-static")))
    t = fast_tier(fast, strong)
    qs = [STATIC, ESCALATED]
    key = [(d.route, d.tier) for d in t.route_batch(qs)]
    assert [(d.route, d.tier) for d in asyncio.run(t.aroute_batch(qs))] == key
    assert (asyncio.run(t.aroute(STATIC)).route, t.route(STATIC).tier) == key[0]
    tq = ["restart the payment service", "device logs"]
    names = [b.names for b in t.tools_batch(tq)]
    assert [b.names for b in asyncio.run(t.atools_batch(tq))] == names
    assert asyncio.run(t.atools(tq[0])).names == t.tools(tq[0]).names == names[0]
