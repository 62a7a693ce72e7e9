"""Tool belts on crafted vectors: core, top-k/threshold, affinity, discovery,
anti-patterns, collisions, request_more_tools breaker, lessons."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from routecore.config.specs import ToolSpec
from routecore.decide.conversation import routing_query
from routecore.decision import TOOL_REASON_CODES, ToolBelt
from routecore.errors import ConfigError, InvalidArgumentError, MemoryStoreError
from routecore.memory.memory import ExperienceMemory
from routecore.routers.router import Router
from routecore.tools.catalog import build_catalog, estimate_tokens
from stubs import StubEncoder, manual, mix, unit

TOOLS = [
    ToolSpec("ask_user", "ask", domain="core", core=True),
    ToolSpec("ha_get_logs", "t-ha-logs", domain="ha", anti_patterns=("anti-kernel",)),
    ToolSpec("ha_turn_on", "t-ha-on", domain="ha"),
    ToolSpec("list_ha_devices", "t-ha-list", domain="ha"),
    ToolSpec("get_system_logs", "t-sys-logs", domain="system"),
    ToolSpec("restart_service", "t-sys-restart", domain="system"),
    ToolSpec("disk", "t-disk", domain="system"),
]
VEC = {
    "ask": unit(6),
    "t-ha-logs": unit(0),
    "t-ha-on": unit(1),
    "t-ha-list": unit(2),
    "t-sys-logs": unit(3),
    "t-sys-restart": unit(4),
    "t-disk": unit(5),
    "anti-kernel": mix(a0=0.3, a3=0.6),
}


def router(policy=None, memory=None, **q):
    return Router(tools=TOOLS, encoder=StubEncoder({**VEC, **q}), policy=policy or manual(), memory=memory)


def test_core_plus_top_k_and_discovery():
    belt = router(q=mix(a0=0.6, a1=0.4, a4=0.3)).tools("q", top_k=2)
    reasons = {t.name: t.reason.code for t in belt.tools}
    assert reasons["ask_user"] == "core"
    assert reasons["ha_get_logs"] == "top_k" and reasons["ha_turn_on"] == "top_k"
    assert (
        reasons["list_ha_devices"] == "discovery"
    )  # plugin 'ha' matched: its list_/get_/search_ tools come along
    assert "restart_service" not in reasons
    # the reason counts every tool the belt holds beyond the best top_k
    assert belt.reason.message.endswith("the best 2 offered, beside 1 core tool(s) and 1 discovery tool(s)")
    # each tool says why it is there, with the numbers compared
    lines = {t.name: t.reason.message for t in belt.tools}
    first = next(t for t in belt.tools if t.name == "ha_get_logs")
    assert lines["ha_get_logs"] == f"#1 by score, {first.score:.3f} >= the floor {belt_floor(belt)}"
    assert lines["ha_turn_on"].startswith("#2 by score, ") and "floor" not in lines["ha_turn_on"]
    assert lines["list_ha_devices"] == "a discovery tool of the 'ha' domain, beside ha_get_logs"
    assert lines["ask_user"] == "a core tool: in every belt"
    assert all(t.reason.code in TOOL_REASON_CODES for t in belt.tools)
    as_json = json.loads(belt.to_json())
    assert as_json["names"] == belt.names  # as the Python belt has them
    back = ToolBelt.from_dict(as_json)
    assert back.tools == belt.tools
    with pytest.raises(InvalidArgumentError, match="reason must be a mapping"):
        ToolBelt.from_dict({**belt.to_dict(), "reason": "tools"})


def belt_floor(belt) -> str:
    """The floor a belt's reason names, as written there."""
    return belt.reason.message.split(">= the floor ")[1].split(":")[0]


def test_threshold_mode():
    belt = router(q=mix(a0=0.6, a1=0.4, a4=0.3)).tools("q", threshold=0.35)
    assert {"ha_get_logs", "ha_turn_on"} <= set(belt.names) and "restart_service" not in belt.names


def test_floor_gates_top_k_on_the_best_candidate_and_filters_each_in_threshold_mode():
    q = mix(a0=0.6, a1=0.5, a3=0.45, a4=0.3)
    # top_k (tool_floor "best", the default): the best passes the floor, so the belt holds the top k.
    top = router(manual(tool_threshold=0.4), q=q).tools("q", top_k=4)
    assert [t.name for t in top.tools if t.reason.code == "top_k"] == [
        "ha_get_logs",
        "ha_turn_on",
        "get_system_logs",
        "restart_service",
    ]
    # tool_floor "each": every candidate must pass it.
    each = router(manual(tool_threshold=0.4, tool_floor="each"), q=q).tools("q", top_k=5)
    assert [t.name for t in each.tools if t.reason.code == "top_k"] == [
        "ha_get_logs",
        "ha_turn_on",
        "get_system_logs",
    ]
    assert all("the floor 0.400" in t.reason.message for t in each.tools if t.reason.code == "top_k")
    assert "floor" not in next(t for t in top.tools if t.name == "ha_turn_on").reason.message  # best only
    # The threshold selection, or a threshold given to the call, always reads it per candidate; k caps it.
    capped = router(manual(tool_threshold=0.4, tool_selection="threshold"), q=q).tools("q", top_k=2)
    assert [t.name for t in capped.tools if t.reason.code == "threshold"] == ["ha_get_logs", "ha_turn_on"]
    given = router(manual(), q=q).tools("q", top_k=5, threshold=0.4)
    assert [t.name for t in given.tools if t.reason.code == "threshold"] == [
        "ha_get_logs",
        "ha_turn_on",
        "get_system_logs",
    ]
    assert not top.no_tool and not each.no_tool and not capped.no_tool and not given.no_tool
    # The reason says which reading of the floor let the belt through, and counts the core tool apart.
    assert top.reason.message.startswith(
        "the best tool, ha_get_logs 0.600, >= the floor 0.400: the best 4 offered"
    )
    assert top.reason.message.endswith("beside 1 core tool(s) and 1 discovery tool(s)")
    assert each.reason.message.startswith("3 tool(s) >= the floor 0.400, beside 1 core tool(s)")
    # Under the floor, both readings leave no candidate.
    for mode in ("best", "each"):
        assert router(manual(tool_threshold=0.65, tool_floor=mode), q=q).tools("q").no_tool
    with pytest.raises(ConfigError):
        manual(tool_floor="some")


def test_no_candidate_above_the_floor_leaves_core_tools_and_says_so():
    belt = router(manual(tool_threshold=0.7), q=mix(a0=0.6, a1=0.5)).tools("q")
    assert belt.names == ["ask_user"] and belt.no_tool
    assert [a.kind for a in belt.alerts] == ["no_tool"] and '"no_tool": true' in belt.to_json()
    assert belt.alerts[0].message.endswith("the belt holds only its core tools")
    bare = Router(
        tools=TOOLS[1:], encoder=StubEncoder({**VEC, "q": mix(a0=0.6)}), policy=manual(tool_threshold=0.7)
    )
    assert bare.tools("q").alerts[0].message.endswith("the belt holds no tool")  # no core tool to hold


def test_affinity_and_collision_alert():
    q = mix(a0=0.5, a3=0.52)
    belt = router(q=q).tools("q")
    assert (
        belt.collision
        and "ha_get_logs" in belt.system_prompt_alert
        and "get_system_logs" in belt.system_prompt_alert
    )
    with_ctx = router(q=q).tools("q", context_domains=["ha"])
    assert with_ctx.scores["ha_get_logs"] == pytest.approx(0.5 * 1.15, abs=1e-5)
    assert with_ctx.scores["get_system_logs"] == pytest.approx(0.52 * 0.7, abs=1e-5)
    assert not with_ctx.collision and with_ctx.tools[1].name == "ha_get_logs"


def test_two_close_tools_below_the_floor_raise_no_collision_alert():
    belt = router(manual(tool_threshold=0.7), q=mix(a0=0.5, a3=0.52)).tools("q")
    assert belt.no_tool and not belt.collision and belt.system_prompt_alert is None
    assert [a.kind for a in belt.alerts] == ["no_tool"]


def test_tool_belt_and_breaker_are_logged_at_debug(caplog):
    with caplog.at_level(logging.DEBUG, logger="routecore"):
        belt = router(q=mix(a0=0.5, a3=0.52)).tools("q")
        s = router(q=mix(a0=0.6, a1=0.4)).tool_session("q")
        for _ in range(3):
            s.request_more_tools()
    belts = [
        json.loads(r.getMessage().split(" ", 2)[2])
        for r in caplog.records
        if r.getMessage().startswith("tool belt ")
    ]
    assert belts[0]["scores"] == pytest.approx(dict(belt.scores)) and belts[0]["raw_scores"] == pytest.approx(
        dict(belt.raw_scores)
    )
    assert belts[0]["alerts"][0]["kind"] == "collision" and belts[0]["collision"] is True
    assert any("request_more_tools call 3" in r.getMessage() for r in caplog.records)
    assert any("circuit_breaker" in r.getMessage() for r in caplog.records)


def test_anti_pattern_lowers_score():
    belt = router(q=VEC["anti-kernel"]).tools("q")  # the query is ha_get_logs' anti-pattern
    assert belt.scores["ha_get_logs"] == pytest.approx(belt.raw_scores["ha_get_logs"] * 0.5, abs=1e-5)


def test_an_anti_pattern_never_raises_a_negative_score():
    """Issue 35 §3: the demotion divides a negative score by the penalty (a product of 0.5 raised
    ha_get_logs over disk)."""
    q = VEC["anti-kernel"].copy()
    q[0], q[5] = -0.1, -0.07  # the anti-pattern matches (cosine 0.9); ha_get_logs and disk are negative
    belt = router(q=q / np.linalg.norm(q)).tools("q", top_k=6)
    raw, got = belt.raw_scores, belt.scores
    assert raw["ha_get_logs"] < raw["disk"] < 0
    assert got["ha_get_logs"] == pytest.approx(raw["ha_get_logs"] / 0.5, abs=1e-5)
    assert got["ha_get_logs"] < got["disk"]


def test_request_more_tools_and_circuit_breaker():
    s = router(q=mix(a0=0.6, a1=0.4)).tool_session("q")
    first = set(s.belt.names)
    assert "request_more_tools" in s.tool_names
    seen = set(first)
    for _ in range(3):
        more = s.request_more_tools()
        assert not (set(t.name for t in more) & seen)
        assert all(
            t.reason.code == "more" and t.reason.message.startswith("request_more_tools: ") for t in more
        )
        seen |= {t.name for t in more}
    assert "request_more_tools" not in s.tool_names
    assert s.request_more_tools() == []
    assert any(a.kind == "circuit_breaker" for a in s.alerts)


def test_lessons_adjust_later_similar_queries(tmp_path):
    mem = ExperienceMemory(tmp_path / "m.sqlite")
    q = mix(a0=0.6, a3=0.55)
    similar = q.copy()
    similar[5] += 0.05
    r = router(memory=mem, q=q, similar=similar / np.linalg.norm(similar))
    assert r.tools("similar").tools[1].name == "ha_get_logs"
    lid = r.record_lesson("q", "ha_get_logs", use=False, context="")
    belt = r.tools("similar")
    assert "ha_get_logs" not in belt.names
    r.record_lesson("q", "disk", use=True)
    assert "disk" in r.tools("similar", top_k=2).names
    assert [l.tool for l in mem.list()] == ["ha_get_logs", "disk"]
    assert mem.delete(lid) and not mem.delete(lid)
    assert "ha_get_logs" in r.tools("similar").names
    # context-scoped lessons only apply in their context
    r.record_lesson("q", "ha_get_logs", use=False, context="ha")
    assert "ha_get_logs" in r.tools("similar").names
    assert "ha_get_logs" not in r.tools("similar", context_domains=["ha"]).names


def test_a_discovery_tool_a_lesson_bans_stays_out(tmp_path):
    r = router(memory=ExperienceMemory(tmp_path / "m.sqlite"), q=mix(a0=0.6, a1=0.4, a4=0.3))
    assert {t.name: t.reason.code for t in r.tools("q", top_k=2).tools}["list_ha_devices"] == "discovery"
    r.record_lesson("q", "list_ha_devices", use=False)
    belt = r.tools("q", top_k=2)
    assert "list_ha_devices" not in belt.names and "ha_get_logs" in belt.names  # its plugin still matched


def test_unusable_memory_gives_a_belt_without_lessons(tmp_path):
    mem = ExperienceMemory(tmp_path / "m.sqlite")
    r = router(memory=mem, q=mix(a0=0.6, a3=0.55))
    r.record_lesson("q", "ha_get_logs", use=False)
    assert "ha_get_logs" not in r.tools("q").names
    mem.close()  # the store fails from now on (as a corrupt or vanished file would)
    belt = r.tools("q")
    assert "ha_get_logs" in belt.names and belt.tools[1].name == "ha_get_logs"
    assert [a.kind for a in belt.alerts] == ["memory_error", "collision"]
    with pytest.raises(MemoryStoreError):
        mem.list()


def test_a_lesson_of_the_wrong_width_is_skipped_with_an_alert(tmp_path):
    import sqlite3

    mem = ExperienceMemory(tmp_path / "m.sqlite")
    r = router(memory=mem, q=mix(a0=0.6, a3=0.55))
    r.record_lesson("q", "ha_get_logs", use=False)
    db = sqlite3.connect(tmp_path / "m.sqlite")  # another process wrote a 3-wide embedding
    db.execute(
        "INSERT INTO lessons (query, context, tool, use, model_id, embedding, created) "
        "VALUES ('x', '', 'disk', 1, ?, ?, 0)",
        (r.encoder.model_id, np.ones(3, np.float32).tobytes()),
    )
    db.commit()
    belt = r.tools("q")
    assert "ha_get_logs" not in belt.names  # the good lesson still applies
    assert any(a.kind == "memory_error" and "1 lessons skipped" in a.message for a in belt.alerts)


def test_routing_query_from_conversation():
    msgs = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "second"},
        {"role": "tool", "content": "tool output"},
        {"role": "user", "content": '{"json": "payload"}'},
        {"role": "user", "content": "third"},
        {"role": "human", "content": "fourth"},
    ]
    assert routing_query(msgs) == "second\nthird\nfourth"
    assert routing_query(msgs, last_n=1) == "fourth"
    assert routing_query([]) == ""
    parts = [
        {"type": "text", "text": "look at"},
        {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "this"},
    ]
    assert routing_query(msgs + [{"role": "user", "content": parts}], last_n=2) == "fourth\nlook at\nthis"
    with pytest.raises(InvalidArgumentError):
        routing_query(msgs, last_n=0)


def test_two_level_catalog():
    cat = build_catalog(TOOLS, ["ha_get_logs"])
    assert cat.summaries.count("\n") == len(TOOLS) - 1 and len(cat.schemas) == 1
    assert cat.schemas[0]["function"]["name"] == "ha_get_logs"
    assert cat.summary_tokens == estimate_tokens(cat.summaries) and cat.schema_tokens > 0
    with pytest.raises(InvalidArgumentError, match="nope"):
        build_catalog(TOOLS, ["ha_get_logs", "nope"])
    rich = ToolSpec(
        "restart_service",
        "Restart a service.\nMore text.",
        domain="system",
        cost_estimate=0.02,
        avg_latency=1.5,
        safety_tags=("destructive", "needs_confirmation"),
    )
    assert (
        rich.summary() == "restart_service [system]: Restart a service. "
        "(cost 0.02; latency 1.5; safety: destructive, needs_confirmation)"
    )
    assert TOOLS[1].summary() == "ha_get_logs [ha]: t-ha-logs"


def test_session_catalog_offers_the_meta_tool_until_the_breaker_trips():
    s = router(q=mix(a0=0.6, a1=0.4)).tool_session("q")
    names = [x["function"]["name"] for x in s.catalog().schemas]
    assert names == s.tool_names and names[-1] == "request_more_tools"
    assert s.catalog().schemas[-1]["function"]["parameters"]["properties"]["query"]["type"] == "string"
    for _ in range(3):
        s.request_more_tools()
    names = [x["function"]["name"] for x in s.catalog().schemas]
    assert "request_more_tools" not in names and set(names) == s.offered


def test_tool_without_exemplars_is_never_ranked():
    tools = TOOLS + [ToolSpec("mystery")]  # no description, no examples: no vector
    r = Router(tools=tools, encoder=StubEncoder({**VEC, "q": mix(a0=0.6, a3=0.5)}), policy=manual())
    belt = r.tools("q", top_k=20)
    assert "mystery" not in belt.names and "ha_get_logs" in belt.names
    assert "mystery" not in r.tools("q", threshold=0.0).names


def test_lone_surrogate_in_a_query_is_replaced_not_fatal(encoder):
    """An emoji cut in half ("\\ud83d") no longer breaks tools() or route()."""
    from routecore.config.specs import RouteSpec

    tools = Router(
        tools=[ToolSpec("get_weather", "weather forecast for a city")], encoder=encoder, policy=manual()
    )
    assert tools.tools("weather in Paris \ud83d").names == ["get_weather"]
    routes = Router(
        [RouteSpec("WEATHER", ("what's the weather",)), RouteSpec("MUSIC", ("play a song",))],
        encoder=encoder,
        policy=manual(),
    )
    d = routes.route("weather tomorrow \ud83d\ude00 \udc00")
    assert d.action == "route" and d.route == "WEATHER"
    assert encoder.encode("a \ud83d b").shape == (1, encoder.dim)


def test_candidates_limit_one_call_to_a_subset_without_re_embedding():
    r = router(q=mix(a0=0.5, a3=0.48, a1=0.3, a4=0.2))
    calls = r.encoder.calls
    belt = r.tools("q", top_k=2, candidates=["get_system_logs", "ha_turn_on", "restart_service"])
    assert r.encoder.calls == calls + 1  # the query only
    assert [t.name for t in belt.tools] == [
        "get_system_logs",
        "ha_turn_on",
    ]  # no core, no discovery outside them
    assert set(belt.scores) == {"ha_turn_on", "get_system_logs", "restart_service"}
    assert (
        not belt.collision
    )  # ha_get_logs (0.5) and get_system_logs (0.48) would collide; one is not a candidate
    full = r.tools("q", top_k=2)
    assert full.collision and "ask_user" in full.names


def test_candidates_keep_core_and_discovery_tools_they_name():
    belt = router(q=mix(a0=0.6, a1=0.4)).tools(
        "q", top_k=1, candidates=["ask_user", "ha_get_logs", "list_ha_devices"]
    )
    assert {t.name: t.reason.code for t in belt.tools} == {
        "ask_user": "core",
        "ha_get_logs": "top_k",
        "list_ha_devices": "discovery",
    }


def test_bad_or_empty_candidates():
    r = router(q=mix(a0=0.6))
    with pytest.raises(InvalidArgumentError, match=r"unknown tools \['nope'\]"):
        r.tools("q", candidates=["ha_get_logs", "nope"])
    with pytest.raises(InvalidArgumentError, match="list of tool names"):
        r.tools("q", candidates="ha_get_logs")
    empty = r.tools("q", candidates=[])
    assert empty.tools == () and empty.no_tool and empty.alerts[0].kind == "no_tool"


def test_a_router_without_tools_answers_with_an_empty_belt():
    from routecore.config.specs import RouteSpec

    r = Router([RouteSpec("A", ("a",))], encoder=StubEncoder({"a": unit(0)}), policy=manual())
    belt = r.tools("anything")
    assert belt.tools == () and belt.no_tool and "no tools" in belt.alerts[0].message
    assert r.tool_session("anything").tool_names == ["request_more_tools"]


def test_discovery_tools_come_in_the_same_order_in_every_process():
    """Plugins were a set: their discovery tools' order followed each process's string hashing."""
    import subprocess
    import sys

    code = (
        "from routecore import Router; from routecore.examples import TOOLS; "
        "print(Router.from_config(TOOLS).tools('my server disk is full and the lights are off').names)"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**__import__("os").environ, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in (1, 2, 3, 4)
    }
    assert len(outs) == 1, outs


def test_fallback_tool_when_no_tool_passes_the_floor(encoder):
    from routecore.decide.policy import Policy
    from routecore.errors import ConfigError

    tools = [
        ToolSpec(
            "get_weather", "Weather forecast for a city", success_examples=("will it rain tomorrow in Paris",)
        ),
        ToolSpec("book_taxi", "Book a taxi or a ride", success_examples=("get me a cab to the station",)),
        ToolSpec("web_search", "Search the web for anything else"),
    ]
    r = Router([], tools, encoder=encoder, policy=Policy(fallback_tool="web_search"))
    belt = r.tools("who painted the ceiling of the sistine chapel")
    assert belt.no_tool and belt.names == ["web_search"] and belt.tools[0].reason.code == "fallback"
    assert [a.data for a in belt.alerts if a.kind == "no_tool"] == [{"fallback_tool": "web_search"}]
    ok = r.tools("will it rain in Lyon tomorrow")
    assert not ok.no_tool and "get_weather" in ok.names and all(t.reason.code != "fallback" for t in ok.tools)
    with pytest.raises(ConfigError, match="fallback_tool 'nope'"):
        Router([], tools, encoder=encoder, policy=Policy(fallback_tool="nope"))


def test_many_lessons_on_one_tool_count_once_and_a_ban_wins(tmp_path):
    r = router(memory=ExperienceMemory(tmp_path / "m.sqlite"), q=mix(a0=0.6, a3=0.55))
    r.record_lesson("q", "disk", use=True)
    once = r.tools("q", top_k=2).scores["disk"]
    for _ in range(3):
        r.record_lesson("q", "disk", use=True)
    assert r.tools("q", top_k=2).scores["disk"] == once  # the boost is not added four times
    r.record_lesson("q", "disk", use=False)
    r.record_lesson("q", "disk", use=True)  # a later "use it" does not lift a ban
    assert "disk" not in r.tools("q", top_k=2).names


def test_a_core_tool_scoring_best_is_no_candidate_of_the_floor():
    """The floor reads the best candidate: a core tool is offered anyway, and the reason names the
    candidate the floor read (it named the core tool, "0.9 < the floor 0.7")."""
    belt = router(manual(tool_threshold=0.7), q=mix(a6=0.8, a0=0.5)).tools("q")
    assert belt.names == ["ask_user"] and belt.no_tool
    assert belt.reason.message == "the best tool ha_get_logs 0.500 < the floor 0.700"
    assert belt.alerts[0].message.startswith("no candidate tool scored above the floor 0.700")
    offered = router(manual(tool_threshold=0.4), q=mix(a6=0.8, a0=0.5)).tools("q")
    assert "the best tool, ha_get_logs 0.500, >= the floor 0.400" in offered.reason.message


def test_a_bad_request_more_tools_argument_raises_and_counts_for_nothing():
    s = router(q=mix(a0=0.6, a1=0.4)).tool_session("q")
    for _ in range(4):
        with pytest.raises(InvalidArgumentError, match="query must be a str or None"):
            s.request_more_tools({"query": "restart"})  # type: ignore[arg-type]
    assert s.calls == 0 and "request_more_tools" in s.tool_names
    assert s.request_more_tools() != [] and s.calls == 1


def test_an_unknown_context_domain_is_not_applied_to_tool_scores_and_said():
    q = mix(a0=0.5, a3=0.52)
    plain, typo = router(q=q).tools("q"), router(q=q).tools("q", context_domains=["hha"])
    assert dict(typo.scores) == dict(plain.scores) and typo.names == plain.names
    (said,) = [a.message for a in typo.alerts if a.kind == "context_domain"]
    assert "'hha'" in said and "core, ha, system" in said and "lessons still read them" in said


def test_a_collision_with_a_tool_without_a_domain_says_so():
    tools = [ToolSpec("a", "t-ha-logs", domain="ha"), ToolSpec("b", "t-sys-logs")]
    r = Router(tools=tools, encoder=StubEncoder({**VEC, "q": mix(a0=0.5, a3=0.52)}), policy=manual())
    (alert,) = [a for a in r.tools("q").alerts if a.kind == "collision"]
    assert "'b' (no domain) and 'a' (domain 'ha')" in alert.message and "domain ''" not in alert.message


def test_an_overlay_list_field_must_be_a_list_of_strings():
    spec = {"name": "get_weather", "description": "Weather forecast"}
    with pytest.raises(ConfigError, match="safety_tags must be a list of strings, got 'rm'"):
        Router(tools=[spec], encoder=StubEncoder(VEC), tool_overlay={"get_weather": {"safety_tags": "rm"}})
    with pytest.raises(ConfigError, match="safety_tags must be a list of strings, got 5"):
        Router(tools=[spec], encoder=StubEncoder(VEC), tool_overlay={"get_weather": {"safety_tags": 5}})
    with pytest.raises(ConfigError, match="an overlay is a mapping of tool names or a file, got list"):
        Router(tools=[spec], encoder=StubEncoder(VEC), tool_overlay=[spec])


def test_record_lesson_checks_its_arguments_and_stores_what_a_file_can_hold(tmp_path):
    mem = ExperienceMemory(str(tmp_path / "m.db"))
    r = router(memory=mem, q=mix(a0=0.6))
    with pytest.raises(InvalidArgumentError, match="use must be True or False"):
        r.record_lesson("q", "ha_get_logs", use="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="non-blank"):
        r.record_lesson(" ", "ha_get_logs", use=False)
    with pytest.raises(InvalidArgumentError, match=r"the context \(a domain name\) must be a str"):
        r.record_lesson("q", "ha_get_logs", use=False, context=None)  # type: ignore[arg-type]
    assert r.record_lesson("q\ud800", "ha_get_logs", use=False) >= 1  # the lone surrogate removed
    assert r.record_lesson("q", "ha_get_logs", use=False, context="ops\ud800") >= 1


def test_a_cache_key_reads_files_as_configs_are_read(tmp_path):
    from pathlib import Path

    from routecore.routers.config_cache import key

    cfg = tmp_path / "c.yaml"
    cfg.write_text("tools: []\n", encoding="utf-8")
    assert key([cfg, None], "m") == key([cfg, None], "m") != key([cfg, cfg], "m")
    with pytest.raises(ConfigError, match="not a regular file"):
        key([cfg, Path("/dev/zero")], "m")  # an overlay of /dev/zero was read until the process died
