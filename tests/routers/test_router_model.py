"""Router rules that depend on meaning, with the real bundled model."""

from __future__ import annotations

import pytest

from conftest import MODELS, ROOT, need_shared
from routecore import Encoder, Router
from routecore.decide.conversation import routing_query
from routecore.errors import ConfigError

EX = ROOT / "examples"


@pytest.mark.parametrize(
    "query,route",
    [
        ("le serveur de production est en panne depuis ce matin", "INCIDENT"),
        ("our API returns 503 errors", "INCIDENT"),
        ("how do I rotate the database password", "RAG"),
        ("comment configurer le VPN", "RAG"),
        ("hello there", "GENERAL"),
        ("merci beaucoup", "GENERAL"),
    ],
)
def test_french_and_english_queries_route(it_ops_router, query, route):
    d = it_ops_router.route(query)
    assert (d.action, d.route, d.tier) == ("route", route, "high")


def test_unrelated_query_is_out_of_scope(it_ops_router):
    assert it_ops_router.route("recipe for chocolate cake").action == "none"


def test_mixed_query_clarifies_and_the_answer_is_routed(it_ops_router):
    d = it_ops_router.route("the VPN is down, where is the doc to reconfigure it")
    assert (
        d.action == "clarify"
        and set(d.candidates) == {"INCIDENT", "RAG"}
        and "RAG vs INCIDENT" in d.bias_rule
    )
    assert it_ops_router.route("I want the documentation", clarify=d).route == "RAG"


def test_device_logs_collision_alert(tools_router):
    belt = tools_router.tools("device logs")
    assert belt.collision
    assert {"ha_get_logs", "get_system_logs"} <= set(belt.names)
    assert "ha_get_logs" in belt.system_prompt_alert and "get_system_logs" in belt.system_prompt_alert
    assert belt.tools[0].name == "search_docs" and belt.tools[0].reason.code == "core"


def test_context_domain_resolves_the_collision(tools_router):
    belt = tools_router.tools("device logs", context_domains=["home_automation"])
    assert not belt.collision
    ranked = sorted((t for t in belt.tools if t.reason.code != "core"), key=lambda t: -t.score)
    assert ranked[0].name == "ha_get_logs"


def test_plugin_match_brings_discovery_tools(tools_router):
    belt = tools_router.tools("turn on the kitchen light", top_k=1)
    reasons = {t.name: t.reason.code for t in belt.tools}
    assert reasons["ha_turn_on"] == "top_k"
    assert reasons.get("get_ha_state") == "discovery" and reasons.get("list_ha_devices") == "discovery"


def test_routing_query_from_conversation(it_ops_router):
    msgs = [
        {"role": "user", "content": "bonjour"},
        {"role": "assistant", "content": "bonjour !"},
        {"role": "user", "content": "le site renvoie des erreurs 500"},
        {"role": "tool", "content": '{"status": 500}'},
    ]
    assert it_ops_router.route(routing_query(msgs)).route == "INCIDENT"


def test_bundle_with_real_model(tmp_path, it_ops_router, encoder):
    it_ops_router.save(tmp_path / "b")
    back = Router.load(tmp_path / "b")
    q = "le VPN ne marche plus"
    assert back.route(q).probabilities == pytest.approx(it_ops_router.route(q).probabilities, abs=1e-6)
    assert (
        back.calibrated == it_ops_router.calibrated == "prior"
        and back.calibration == it_ops_router.calibration
    )
    minilm = need_shared(MODELS / "all-minilm-l6-v2")
    with pytest.raises(ConfigError, match="rebuild the bundle"):
        Router.load(tmp_path / "b", encoder=Encoder.load(minilm))


def test_a_long_query_is_read_on_its_end_too(it_ops_router):
    from routecore.evaluation.perturb import long_input, long_tail

    q = "the production server is down since this morning"
    start, end = it_ops_router.route(long_input(q, 20_000, 1)), it_ops_router.route(long_tail(q, 20_000, 1))
    assert (start.action, start.route) == (end.action, end.route) == ("route", "INCIDENT")
    [a] = [a for a in end.alerts if a.kind == "long_query"]
    assert (
        "routed by its end" in a.message
        and "first paragraph" in [x.message for x in start.alerts if x.kind == "long_query"][0]
    )
    batch = it_ops_router.route_batch([long_tail(q, 20_000, 2), q])
    assert [(d.action, d.route) for d in batch] == [("route", "INCIDENT")] * 2
