"""LLM fallback against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest
from stubs import StubEncoder, mix, unit, manual

from routecore.errors import LLMError
from routecore.llm import LLMRequest, OpenAICompatibleRouter, parse_tool_call
from routecore.router import Router
from routecore.specs import RouteSpec

ROUTES = [RouteSpec("INCIDENT", ("e0",), "outages"), RouteSpec("RAG", ("e1",), "documentation"), RouteSpec("GENERAL", ("e2",), "small talk")]


class ChatServer:
    """Answers /v1/chat/completions with a behaviour chosen per test."""

    def __init__(self):
        self.mode = "ok:RAG"
        self.requests: list[dict] = []
        srv = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                srv.requests.append(body)
                kind, _, arg = srv.mode.partition(":")
                if kind == "slow":
                    time.sleep(float(arg))
                    arg = "RAG"
                if kind == "http500":
                    self.send_error(500)
                    return
                if kind == "garbage":
                    out = b"this is not json"
                elif kind == "huge":  # an endless body: 64 MB of spaces, sent until the client hangs up
                    out = b" " * (64 << 20)
                elif kind == "two":
                    out = json.dumps({"choices": [{"message": {"tool_calls": [{"function": {"name": "RAG"}}, {"function": {"name": "GENERAL"}}]}}]}).encode()
                else:
                    out = json.dumps({"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": arg, "arguments": "{}"}}]}}]}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    if kind == "drip":  # a byte at a time: each read is quick, the whole answer is not
                        for i in range(len(out)):
                            self.wfile.write(out[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.05)
                    else:
                        self.wfile.write(out)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out first (the slow cases)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def server():
    s = ChatServer()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def make(server, timeout=2.0):
    # medium-tier query (no bias rule fires between INCIDENT and RAG at this gap? use distinct gap)
    enc = StubEncoder({"e0": unit(0), "e1": unit(1), "e2": unit(2), "q": mix(a0=0.6, a1=0.52), "sure": unit(0)})
    llm = OpenAICompatibleRouter(server.url, "test-model", timeout=timeout)
    return Router(ROUTES, encoder=enc, llm=llm, policy=manual(bias_rules=(), three_way_within=0.0)), enc


def test_llm_picks_route_with_one_prompt(server):
    server.mode = "ok:RAG"
    r, _ = make(server)
    d = r.route("q", previous="RAG")
    assert d.used_llm and d.route == "RAG" and d.action == "route" and d.fallback is None
    req = server.requests[-1]
    names = [t["function"]["name"] for t in req["tools"]]
    assert names == ["INCIDENT", "RAG", "GENERAL", "CLARIFY"]
    system = req["messages"][0]["content"]
    assert "previous turn was routed to RAG" in system and "INCIDENT=" in system and req["tool_choice"] == "required"
    assert d.timings.llm > 0


def test_high_confidence_does_not_call_llm(server):
    server.mode = "ok:RAG"
    r, _ = make(server)
    n = len(server.requests)
    assert r.route("sure").route == "INCIDENT" and len(server.requests) == n


def test_llm_can_ask_to_clarify(server):
    server.mode = "ok:CLARIFY"
    r, _ = make(server)
    d = r.route("q")
    assert d.action == "clarify" and d.used_llm and d.question


@pytest.mark.parametrize("mode", ["garbage", "two", "ok:UNKNOWN", "http500", "slow:1.5"])
def test_llm_failures_fall_back_to_best_semantic_route(server, mode):
    server.mode = mode
    r, _ = make(server, timeout=0.5)
    d = r.route("q")
    assert d.route == "INCIDENT" and d.action == "route" and d.fallback and "llm failed" in d.fallback
    assert any(a.kind == "fallback" for a in d.alerts)


def test_timeout_bounds_the_whole_call(server):
    server.mode = "drip:RAG"  # about 100 bytes at 20 per second
    r, _ = make(server, timeout=0.5)
    t = time.perf_counter()
    d = r.route("q")
    assert time.perf_counter() - t < 3.0  # the whole answer would take about 7 s
    assert d.route == "INCIDENT" and "too slow" in d.fallback


def test_an_endless_answer_is_cut_and_falls_back(server):
    server.mode = "huge"
    r, _ = make(server, timeout=5.0)
    d = r.route("q")
    assert d.route == "INCIDENT" and "larger than" in d.fallback


def test_unreachable_llm_falls_back():
    r = Router(ROUTES, encoder=StubEncoder({"e0": unit(0), "e1": unit(1), "e2": unit(2), "q": mix(a0=0.6, a1=0.52)}),
               llm=OpenAICompatibleRouter("http://127.0.0.1:9/v1", "m", timeout=0.5), policy=manual(bias_rules=(), three_way_within=0.0))
    d = r.route("q")
    assert d.route == "INCIDENT" and "unreachable" in d.fallback


def test_encoder_failure_goes_to_llm_then_error(server):
    server.mode = "ok:GENERAL"
    r, enc = make(server)
    enc.fail = True
    d = r.route("hello")
    assert d.route == "GENERAL" and d.used_llm and "encoder failed" in d.fallback
    server.mode = "garbage"
    d = r.route("hello")
    assert d.action == "error" and {a.kind for a in d.alerts} == {"encoder_error", "llm_error"}


def test_parse_tool_call_errors():
    with pytest.raises(LLMError):
        parse_tool_call('{"choices": []}', {"A"})
    with pytest.raises(LLMError):
        parse_tool_call('{"choices": [{"message": {"content": "A"}}]}', {"A"})
    assert parse_tool_call('{"choices": [{"message": {"tool_calls": [{"function": {"name": "A"}}]}}]}', {"A"}) == "A"
    assert "ambiguous" in OpenAICompatibleRouter("http://x", "m").payload(LLMRequest("q", [("A", "a")]))["messages"][0]["content"]
