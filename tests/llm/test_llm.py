"""LLM fallback against a real OpenAI-compatible HTTP server on 127.0.0.1: the
stdlib client (kept-alive connections, deadline, cap, proxies). The async client
is in test_llm_async.py, the ``llm:`` config section in test_llm_config.py."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from routecore.config.specs import RouteSpec
from routecore.errors import LLMError
from routecore.llm import llm_http
from routecore.llm.llm import LLMRequest, OpenAICompatibleRouter, parse_tool_call
from routecore.routers.router import Router
from stubs import StubEncoder, manual, mix, unit

ROUTES = [
    RouteSpec("INCIDENT", ("e0",), "outages"),
    RouteSpec("RAG", ("e1",), "documentation"),
    RouteSpec("GENERAL", ("e2",), "small talk"),
]


class ChatServer:
    """Answers /v1/chat/completions with a behaviour chosen per test, on kept-alive
    HTTP/1.1 connections; counts the connections it accepts."""

    def __init__(self):
        self.mode = "ok:RAG"
        self.requests: list[dict] = []
        self.seen: list[tuple[str, str, dict]] = []  # (method, path, headers) of every request
        self.connections = 0
        self.open: set[socket.socket] = set()
        self.lock = threading.Lock()
        #: The kinds of answer ("drip", "slowheaders", "huge", ...) the client hung up on before
        #: the whole of it was sent: what a deadline or a cap must do, seen from the server.
        self.hung_up: list[str] = []
        self.hangup = threading.Condition(self.lock)
        srv = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def setup(self):
                super().setup()
                with srv.lock:
                    srv.connections += 1
                    srv.open.add(self.connection)

            def finish(self):
                with srv.lock:
                    srv.open.discard(self.connection)
                super().finish()

            def do_CONNECT(self):  # a proxy that refuses every tunnel
                srv.seen.append(("CONNECT", self.path, dict(self.headers)))
                self.send_error(502)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                srv.requests.append(body)
                srv.seen.append(("POST", self.path, dict(self.headers)))
                kind, _, arg = srv.mode.partition(":")
                if kind == "slow":
                    time.sleep(float(arg))
                    arg = "RAG"
                if kind == "http500":
                    self.send_error(500)
                    return
                if kind == "slowheaders":  # headers a byte at a time: each read is quick, the whole is not
                    try:
                        for b in b"HTTP/1.1 200 OK\r\nX-Pad: " + b"x" * 100:
                            self.wfile.write(bytes([b]))
                            self.wfile.flush()
                            time.sleep(0.05)
                    except (BrokenPipeError, ConnectionResetError):
                        srv.hung_up_on(kind)
                    self.close_connection = True
                    return
                if kind == "garbage":
                    out = b"this is not json"
                elif kind == "deep":  # 200,000 nested arrays: past Python's recursion limit (issue 36 §8)
                    out = b'{"choices": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
                elif kind == "huge":  # an endless body: 64 MB of spaces, sent until the client hangs up
                    out = b" " * (64 << 20)
                elif kind == "two":
                    out = json.dumps(
                        {
                            "choices": [
                                {
                                    "message": {
                                        "tool_calls": [
                                            {"function": {"name": "RAG"}},
                                            {"function": {"name": "GENERAL"}},
                                        ]
                                    }
                                }
                            ]
                        }
                    ).encode()
                else:
                    out = json.dumps(
                        {
                            "choices": [
                                {
                                    "message": {
                                        "role": "assistant",
                                        "tool_calls": [
                                            {
                                                "id": "c1",
                                                "type": "function",
                                                "function": {"name": arg, "arguments": "{}"},
                                            }
                                        ],
                                    }
                                }
                            ]
                        }
                    ).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    if kind == "close":  # says so, and closes
                        self.send_header("Connection", "close")
                    self.end_headers()
                    if kind == "drip":  # a byte at a time: each read is quick, the whole answer is not
                        for i in range(len(out)):
                            self.wfile.write(out[i : i + 1])
                            self.wfile.flush()
                            time.sleep(0.05)
                    else:
                        self.wfile.write(out)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client timed out first (the slow cases)
                    srv.hung_up_on(kind)
                if kind in ("close", "drop"):  # drop: keep-alive promised, the connection closed anyway
                    self.close_connection = True

        class Server(http.server.ThreadingHTTPServer):
            request_queue_size = 256  # 100 clients connect at once

        self.httpd = Server(("127.0.0.1", 0), H)
        self.root = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.url = f"{self.root}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def hung_up_on(self, kind: str) -> None:
        with self.hangup:
            self.hung_up.append(kind)
            self.hangup.notify_all()

    def saw_hang_up(self, kind: str) -> bool:
        """Whether the client hangs up on a ``kind`` answer before all of it is sent (waits for the
        server's thread to see it: a closed socket fails the write after the next one)."""
        with self.hangup:
            return self.hangup.wait_for(lambda: kind in self.hung_up, timeout=30)

    def drop_idle(self):
        """Close every open connection from the server's side (as an idle timeout does)."""
        with self.lock:
            socks = list(self.open)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        time.sleep(0.05)


@pytest.fixture(scope="module")
def server():
    s = ChatServer()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def make(server, timeout=2.0):
    # medium-tier query (no bias rule fires between INCIDENT and RAG at this gap? use distinct gap)
    enc = StubEncoder(
        {"e0": unit(0), "e1": unit(1), "e2": unit(2), "q": mix(a0=0.6, a1=0.52), "sure": unit(0)}
    )
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
    assert (
        "previous turn was routed to RAG" in system
        and "INCIDENT=" in system
        and req["tool_choice"] == "required"
    )
    assert d.timings.llm > 0


def test_the_llm_routes_numbers_are_its_routes_and_its_case_is_folded(server):
    server.mode = "ok:rag"  # the LLM answered the name in lower case: RAG, the one route it can name
    r, _ = make(server)
    d = r.route("q")
    assert (d.action, d.route, d.used_llm, d.reason.code) == ("route", "RAG", True, "llm")
    assert d.confidence == pytest.approx(d.probabilities["RAG"])  # not the semantic best's, INCIDENT's
    assert d.confidence < d.probabilities["INCIDENT"] and d.margin < 0
    assert d.reason.message.startswith("the LLM chose RAG (the semantic best, INCIDENT 0.")


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


@pytest.mark.parametrize("mode", ["garbage", "deep", "two", "ok:UNKNOWN", "http500", "slow:1.5"])
def test_llm_failures_fall_back_to_best_semantic_route(server, mode):
    server.mode = mode
    r, _ = make(server, timeout=0.5)
    d = r.route("q")
    assert d.route == "INCIDENT" and d.action == "route" and d.fallback and "llm failed" in d.fallback
    assert any(a.kind == "fallback" for a in d.alerts)


def test_timeout_bounds_the_whole_call(server):
    server.mode = "drip:RAG"  # about 100 bytes at 20 per second: each read is quick, the whole is not
    server.hung_up.clear()
    r, _ = make(server, timeout=0.5)
    d = r.route("q")
    assert d.route == "INCIDENT" and "too slow" in d.fallback
    assert server.saw_hang_up("drip")  # the client left before the whole answer was sent


def test_an_endless_answer_is_cut_and_falls_back(server):
    server.mode = "huge"
    r, _ = make(server, timeout=5.0)
    d = r.route("q")
    assert d.route == "INCIDENT" and "larger than" in d.fallback


def test_unreachable_llm_falls_back():
    r = Router(
        ROUTES,
        encoder=StubEncoder({"e0": unit(0), "e1": unit(1), "e2": unit(2), "q": mix(a0=0.6, a1=0.52)}),
        llm=OpenAICompatibleRouter("http://127.0.0.1:9/v1", "m", timeout=0.5),
        policy=manual(bias_rules=(), three_way_within=0.0),
    )
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
    assert (
        parse_tool_call('{"choices": [{"message": {"tool_calls": [{"function": {"name": "A"}}]}}]}', {"A"})
        == "A"
    )
    with pytest.raises(LLMError, match="nested too deep"):  # was a RecursionError (issue 36 §8)
        parse_tool_call('{"choices": ' + "[" * 200_000 + "]" * 200_000 + "}", {"A"})
    assert (
        "ambiguous"
        in OpenAICompatibleRouter("http://x", "m").payload(LLMRequest("q", [("A", "a")]))["messages"][0][
            "content"
        ]
    )


# -- kept-alive connections (sync client) ---------------------------------------------------
REQ = LLMRequest("q", [("INCIDENT", "outages"), ("RAG", "documentation"), ("GENERAL", "small talk")])


def test_consecutive_calls_share_one_connection(server):
    server.mode = "ok:RAG"
    with OpenAICompatibleRouter(server.url, "m", timeout=2.0) as llm:
        n = server.connections
        assert [llm.choose(REQ).route for _ in range(3)] == ["RAG"] * 3
        assert server.connections - n == 1


@pytest.mark.parametrize("mode", ["close:RAG", "drop:RAG"])
def test_a_server_that_closes_after_each_answer_still_works(server, mode):
    server.mode = mode  # close: says "Connection: close"; drop: promises keep-alive, closes anyway
    with OpenAICompatibleRouter(server.url, "m", timeout=2.0) as llm:
        n = server.connections
        assert [llm.choose(REQ).route for _ in range(3)] == ["RAG"] * 3
        assert server.connections - n == 3


@pytest.mark.parametrize("check_idle", [True, False])
def test_a_connection_closed_while_idle_is_replaced(server, monkeypatch, check_idle):
    server.mode = "ok:RAG"
    with OpenAICompatibleRouter(server.url, "m", timeout=2.0) as llm:
        assert llm.choose(REQ).route == "RAG"
        server.drop_idle()
        if not check_idle:  # the server closes it between the check and the request: sent once more
            monkeypatch.setattr(llm_http, "_dropped", lambda sock: False)
        stale: list[BaseException] = []
        exchange = llm_http._exchange

        def spy(conn, *a):
            try:
                return exchange(conn, *a)
            except llm_http._STALE as e:
                stale.append(e)
                raise

        monkeypatch.setattr(llm_http, "_exchange", spy)
        n, c = len(server.requests), server.connections
        assert llm.choose(REQ).route == "RAG" and llm.choose(REQ).route == "RAG"
        assert (
            len(server.requests) == n + 2 and server.connections == c + 1
        )  # each question reached the server once
        assert len(stale) == (0 if check_idle else 1)


def test_sixteen_threads_at_once_all_get_answers(server):
    server.mode = "ok:GENERAL"
    with OpenAICompatibleRouter(server.url, "m", timeout=5.0, max_idle=4) as llm:
        n = server.connections
        barrier = threading.Barrier(16)

        def call(_):
            barrier.wait()
            return [llm.choose(REQ).route for _ in range(5)]

        with ThreadPoolExecutor(16) as ex:
            out = list(ex.map(call, range(16)))
        assert out == [["GENERAL"] * 5] * 16
        assert 1 <= server.connections - n <= 16 * 5 and len(llm._pool._idle) <= 4


def test_headers_trickled_past_the_deadline_fail(server):
    server.mode = "slowheaders"  # the headers would take about 6 s
    server.hung_up.clear()
    llm = OpenAICompatibleRouter(server.url, "m", timeout=0.5)
    with pytest.raises(LLMError, match="too slow"):
        llm.choose(REQ)
    assert server.saw_hang_up("slowheaders")  # the client left before the headers were all sent


def test_http_errors_name_the_status_and_the_connection_is_not_reused(server):
    server.mode = "http500"
    with OpenAICompatibleRouter(server.url, "m", timeout=2.0) as llm:
        with pytest.raises(LLMError, match=r"HTTP 500 at http://127\.0\.0\.1:\d+/v1/chat/completions"):
            llm.choose(REQ)
        server.mode = "ok:RAG"
        assert llm.choose(REQ).route == "RAG" and len(llm._pool._idle) == 1


def test_max_tokens_and_the_key_are_sent(server):
    server.mode = "ok:RAG"
    with OpenAICompatibleRouter(server.url, "m", api_key="sk-test", max_tokens=64, temperature=0.2) as llm:
        llm.choose(REQ)
        assert server.requests[-1]["max_tokens"] == 64 and server.requests[-1]["temperature"] == 0.2
        assert server.seen[-1][2]["Authorization"] == "Bearer sk-test"
        assert "sk-test" not in repr(llm)
    with OpenAICompatibleRouter(server.url, "m") as llm:
        llm.choose(REQ)
        assert "max_tokens" not in server.requests[-1] and "Authorization" not in server.seen[-1][2]


def test_a_closed_router_refuses_calls(server):
    server.mode = "ok:RAG"
    llm = OpenAICompatibleRouter(server.url, "m")
    llm.choose(REQ)
    llm.close()
    assert llm._pool._idle == []
    with pytest.raises(LLMError, match="closed"):
        llm.choose(REQ)


def test_http_proxy_from_the_environment(server, monkeypatch):
    for k in (
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "no_proxy",
        "NO_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("http_proxy", server.root)
    monkeypatch.setenv("https_proxy", server.root.replace("://", "://user:p%40ss@"))
    server.mode = "ok:RAG"
    with OpenAICompatibleRouter(
        "http://llm.example.invalid/v1", "m", timeout=2.0
    ) as llm:  # the proxy forwards it
        assert llm.choose(REQ).route == "RAG"
        assert server.seen[-1][:2] == ("POST", "http://llm.example.invalid/v1/chat/completions")
    with OpenAICompatibleRouter(
        "https://llm.example.invalid:8443/v1", "m", timeout=2.0
    ) as llm:  # tunnelled: CONNECT
        with pytest.raises(LLMError, match="unreachable"):
            llm.choose(REQ)
        method, target, headers = server.seen[-1]
        assert (method, target, headers["Proxy-Authorization"]) == (
            "CONNECT",
            "llm.example.invalid:8443",
            "Basic dXNlcjpwQHNz",
        )
    monkeypatch.setenv("no_proxy", "llm.example.invalid")
    ep = OpenAICompatibleRouter("http://llm.example.invalid/v1", "m")._pool.endpoint
    assert (ep.host, ep.port, ep.target) == ("llm.example.invalid", 80, "/v1/chat/completions")


def test_bad_urls_and_timeouts_are_config_errors():
    from routecore.errors import ConfigError

    for url in ("ftp://x/v1", "localhost:8080/v1", "http:///v1"):
        with pytest.raises(ConfigError, match="http"):
            OpenAICompatibleRouter(url, "m")
    for t in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ConfigError, match="timeout"):
            OpenAICompatibleRouter("http://x/v1", "m", timeout=t)
