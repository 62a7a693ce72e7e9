"""The LLM tool router against a real loopback HTTP server: good answers, unknown
names, garbage, timeouts and HTTP errors."""

from __future__ import annotations

import http.server
import json
import select
import socket
import threading

import pytest
import yaml

from routecore.decision import Alert
from routecore.errors import ConfigError, DimensionMismatchError, LLMError
from routecore.routers.llm_tools import LLMToolRouter, parse_selection
from routecore.routers.tool_routing import ToolRouting

GOOD = {
    "selected_tools": ["restart_service", "get_system_logs"],
    "complexity": "medium",
    "execution_strategy": "iterative",
    "reasoning": "restart, then check the logs",
    "confidence": 0.8,
}


class ToolLLM:
    """Answers chat completions with ``self.answer`` (a string, or a callable of the request).
    ``stall``: answers nothing until the client hangs up, then sets ``hung_up``."""

    def __init__(self):
        self.answer: object = f"<tool_selection>{json.dumps(GOOD)}</tool_selection>"
        self.status, self.stall, self.requests = 200, False, []
        self.hung_up = threading.Event()
        srv = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                srv.requests.append(body)
                if srv.stall:  # wait (30 s at most) for the client to close its end: EOF on the socket
                    readable, _, _ = select.select([self.connection], [], [], 30)
                    if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                        srv.hung_up.set()
                    self.close_connection = True
                    return
                if srv.status != 200:
                    self.send_error(srv.status)
                    return
                a = srv.answer(body) if callable(srv.answer) else srv.answer
                raw = isinstance(a, str) and a.startswith("RAW:")  # not a chat completion at all
                out = (
                    a[4:].encode()
                    if raw
                    else json.dumps({"choices": [{"message": {"role": "assistant", "content": a}}]}).encode()
                )
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def llm():
    s = ToolLLM()
    yield s
    s.httpd.shutdown()


@pytest.fixture()
def server(llm):
    llm.answer, llm.status, llm.stall = f"<tool_selection>{json.dumps(GOOD)}</tool_selection>", 200, False
    llm.requests.clear()
    llm.hung_up.clear()
    return llm


QUERY = "the nginx service on web-3 keeps crashing, restart it and tell me why"


def test_the_callers_vectors_skip_the_encoder(tools_router, server, encoder):
    r = LLMToolRouter(tools_router, server.url, "m", mode="hybrid", hybrid_top=5)
    qs = [QUERY, "device logs"]
    V = encoder.encode(qs)
    alone = r.choose_tools_batch(qs)
    given = r.choose_tools_batch(qs, vectors=V)
    assert (
        [g.tools for g in given]
        == [a.tools for a in alone]
        == [r.choose_tools(q, vector=v).tools for q, v in zip(qs, V)]
    )
    with pytest.raises(DimensionMismatchError, match="expected 2 x"):  # as every router checks rows
        r.choose_tools_batch(qs, vectors=V[:1])


def test_good_answer_in_both_modes(tools_router, server):
    for mode in ("llm", "hybrid"):
        r = LLMToolRouter(tools_router, server.url, "m", mode=mode, hybrid_top=5)
        got = r.choose_tools(QUERY)
        assert (
            got.source == "llm"
            and got.fallback is None
            and got.tools == ("restart_service", "get_system_logs", "search_docs")  # and the core tool
        )
        assert got.reason.message.endswith("candidates, beside 1 core tool(s)")
        assert (got.complexity, got.execution_strategy, got.confidence) == ("medium", "iterative", 0.8)
        assert [s["function"]["name"] for s in got.schemas] == list(got.tools)
        assert got.schemas[0]["function"]["parameters"]["properties"]  # the full schema, not the summary
        prompt = server.requests[-1]["messages"][0]["content"]
        catalog = prompt.split("\n\n")[0].split("\n")[1:]  # one summary line per candidate
        ranked = tools_router.tools(
            QUERY, top_k=5, threshold=0.0
        ).names  # hybrid: the best 5 (and the core tools)
        assert len(catalog) == (len(tools_router.tool_specs) if mode == "llm" else len(ranked))
        assert "<tool_selection>" in prompt and "semantic search suggests" in prompt
        r.choose_tools("restrat the nginx servce")  # the belt repairs its typos; the LLM reads it as typed
        assert server.requests[-1]["messages"][1]["content"] == "restrat the nginx servce"
        r.close()


def test_unknown_names_are_dropped_and_reported(tools_router, server):
    r = LLMToolRouter(tools_router, server.url, "m", mode="llm")
    server.answer = (
        '<tool_selection>{"selected_tools": ["restart_service", "format_disk"], '
        '"complexity": "huge"}</tool_selection>'
    )
    got = r.choose_tools(QUERY)
    assert got.tools == ("restart_service", "search_docs") and got.dropped == ("format_disk",)
    assert got.source == "llm" and got.complexity is None
    assert [a.kind for a in got.alerts if "huge" in a.message] == ["llm_answer"] and any(
        "huge" in n for n in got.notes
    )
    assert not any("execution_strategy" in a.message for a in got.alerts)  # absent: nothing to say
    back = ToolRouting.from_dict(json.loads(got.to_json()))
    assert back.alerts == got.alerts
    old = {k: v for k, v in got.to_dict().items() if k != "alerts"}  # an earlier version's notes
    assert ToolRouting.from_dict({**old, "notes": ["x"]}).alerts == (Alert("note", "x"),)
    server.answer = '<tool_selection>{"selected_tools": ["format_disk"]}</tool_selection>'
    got = r.choose_tools(QUERY)
    assert got.source == "semantic" and "unknown" in got.fallback and got.dropped == ("format_disk",)
    assert got.tools == tuple(tools_router.tools(QUERY).names)


@pytest.mark.parametrize(
    "answer, why",
    [
        ("I think you should restart it.", "LLMError"),
        ("", "answered nothing"),
        ("RAW:this is not json", "not a chat completion"),
        ('<tool_selection>{"complexity": "simple"}</tool_selection>', "no selected_tools"),
        ("[" * 200_000 + "]" * 200_000, "no JSON object or list"),  # nested past the stack (issue 36 §8)
        ("RAW:" + '{"choices": ' + "[" * 200_000 + "]" * 200_000 + "}", "not a chat completion"),
    ],
)
def test_garbage_falls_back_to_the_semantic_belt(tools_router, server, answer, why):
    server.answer = answer
    got = LLMToolRouter(tools_router, server.url, "m").choose_tools(QUERY)
    assert got.source == "semantic" and why in got.fallback
    assert got.tools == tuple(tools_router.tools(QUERY).names) and got.belt is not None


def test_timeouts_and_http_errors_fall_back(tools_router, server):
    server.status = 503
    got = LLMToolRouter(tools_router, server.url, "m").choose_tools(QUERY)
    assert got.source == "semantic" and "HTTP 503" in got.fallback
    server.status, server.stall = 200, True  # no answer until the client gives up
    got = LLMToolRouter(tools_router, server.url, "m", timeout=0.2).choose_tools(QUERY)
    assert got.source == "semantic" and "too slow" in got.fallback
    assert server.hung_up.wait(30)  # the client hung up, with no answer sent


def test_semantic_mode_and_bad_settings(tools_router):
    got = LLMToolRouter(tools_router, mode="semantic").choose_tools(QUERY)
    assert (
        got.source == "semantic"
        and got.fallback is None
        and got.tools == tuple(tools_router.tools(QUERY).names)
    )
    # the active domains, as Router.tools reads them (one for all in the batch)
    semantic = LLMToolRouter(tools_router, mode="semantic")
    want = tuple(tools_router.tools("device logs", context_domains=["system"]).names)
    assert semantic.choose_tools("device logs", context_domains=["system"]).tools == want
    assert [
        g.tools for g in semantic.choose_tools_batch(["device logs", QUERY], context_domains=["system"])
    ] == [
        want,
        tuple(tools_router.tools(QUERY, context_domains=["system"]).names),
    ]
    assert want != tuple(tools_router.tools("device logs", context_domains=["home_automation"]).names)
    with pytest.raises(ConfigError, match="mode"):
        LLMToolRouter(tools_router, "http://127.0.0.1:9/v1", "m", mode="magic")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="base_url"):
        LLMToolRouter(tools_router, mode="llm")
    with pytest.raises(ConfigError, match="hybrid_top"):
        LLMToolRouter(tools_router, "http://127.0.0.1:9/v1", "m", hybrid_top=0)


def test_parser_is_tolerant():
    assert parse_selection('```json\n{"selected_tools": ["a"]}\n```') == {"selected_tools": ["a"]}
    assert parse_selection('Sure! <TOOL_SELECTION> {"selected_tools": []} </TOOL_SELECTION> done') == {
        "selected_tools": []
    }
    assert parse_selection('["a", "b"]') == {"selected_tools": ["a", "b"]}
    with pytest.raises(LLMError, match="no JSON"):
        parse_selection("{not json}")


def test_example_config_runs_against_a_loopback_server(server, encoder, tmp_path):
    from routecore.examples import LLM_TOOLS

    r = LLMToolRouter.from_config(LLM_TOOLS, encoder=encoder, llm_url=server.url, llm_model="local")
    assert (r.mode, r.hybrid_top, r.hint) == ("hybrid", 20, True)
    got = r.choose_tools(QUERY)
    assert got.source == "llm" and got.tools == ("restart_service", "get_system_logs")
    assert server.requests[-1]["model"] == "local"
    r.close()
    cfg = LLM_TOOLS.read_text(encoding="utf-8")
    semantic = tmp_path / "semantic.yaml"
    semantic.write_text(cfg.replace("mode: hybrid", "mode: semantic"), encoding="utf-8")
    assert LLMToolRouter.from_config(semantic, encoder=encoder).choose_tools(QUERY).source == "semantic"
    no_server = tmp_path / "no_server.yaml"
    data = yaml.safe_load(cfg)
    del data["llm"]
    no_server.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="needs an 'llm:' section"):
        LLMToolRouter.from_config(no_server, encoder=encoder)
    bad = tmp_path / "bad.yaml"
    bad.write_text(cfg.replace("hybrid_top: 20", "hybrid_top: 0"), encoding="utf-8")
    with pytest.raises(ConfigError, match="hybrid_top"):
        LLMToolRouter.from_config(bad, encoder=encoder, llm_url=server.url)
