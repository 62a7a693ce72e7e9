"""``routecore.serve.connections`` (issue 36 §4): slow and idle clients and the connection cap,
against a real ``routecore serve`` on 127.0.0.1 with each of uvicorn's HTTP parsers."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from routecore.examples import IT_OPS_ROUTES
from serve_process import ServeProcess, connect, read_until_closed

HEAD_START = b"POST /v1/route HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


class Dribble:
    """A client that sends one more header line every 0.2 s and never finishes its head."""

    def __init__(self, s: socket.socket):
        self.s, self.sent, self.stop = s, 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.s.sendall(HEAD_START)
        while not self.stop.wait(0.2):
            try:
                self.s.sendall(b"X-Slow-%d: 1\r\n" % self.sent)
                self.sent += 1
            except OSError:
                return


def still_open(s: socket.socket) -> bool:
    """Whether the server has neither sent anything nor closed ``s`` yet."""
    s.setblocking(False)
    try:
        s.recv(1, socket.MSG_PEEK)  # data or end of stream
    except BlockingIOError:
        return True
    else:
        return False
    finally:
        s.setblocking(True)


@pytest.mark.parametrize("http", ["h11", "httptools"])
def test_slow_heads_time_out_and_connections_are_capped(http):
    args = [
        "--config",
        str(IT_OPS_ROUTES),
        "--reload-poll",
        "0",
        "--http",
        http,
        "--header-timeout",
        "2",
        "--body-timeout",
        "2",
        "--max-connections",
        "4",
    ]
    with ServeProcess(*args) as srv:
        time.sleep(0.3)  # the readiness probe's connection is closed
        held = [connect(srv.port) for _ in range(4)]
        held[0].sendall(HEAD_START)  # half a head, then silence
        slow = Dribble(held[1])  # a head that grows by a line every 0.2 s, forever
        held[2].sendall(b"G")  # one byte
        time.sleep(0.3)
        assert all(still_open(s) for s in held)
        extra = connect(srv.port)
        refused = read_until_closed(extra)  # the fifth: answered at once, and closed
        assert refused.startswith(b"HTTP/1.1 503") and b"--max-connections" in refused, refused
        for s in held:  # 408 for each, the dribbling one included, and closed
            answer = read_until_closed(s)
            assert answer.startswith(b"HTTP/1.1 408") and b"--header-timeout" in answer, answer
        slow.stop.set()
        assert slow.sent >= 3  # it was still sending when it was cut off
        # the slots are free again, and a client that sends its request promptly is served
        r = httpx.post(f"{srv.url}/v1/route", json={"query": "the production server is down"}, timeout=30)
        assert r.status_code == 200 and r.json()["route"] == "INCIDENT"
        # a keep-alive connection: each request's head has its own deadline, counted from the last response
        with httpx.Client(base_url=srv.url, timeout=30) as c:
            for _ in range(3):
                assert c.get("/healthz").status_code == 200
                time.sleep(0.5)
        # a body that never arrives whole: the app answers 408 and closes
        s = connect(srv.port)
        s.sendall(HEAD_START + b"Content-Length: 100\r\n\r\n" + b'{"query": ')
        answer = read_until_closed(s)
        assert (
            answer.startswith(b"HTTP/1.1 408") and b"BodyTimeout" in answer and b"--body-timeout" in answer
        ), answer
    assert "Traceback" not in srv.log, srv.log
