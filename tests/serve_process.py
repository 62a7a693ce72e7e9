"""A real ``routecore serve`` subprocess on 127.0.0.1 for the sidecar's tests (not a test module)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Any

import httpx

from conftest import ROOT


def free_port() -> int:
    """A TCP port nothing listens on at the moment."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServeProcess:
    """``python -m routecore.serve.cli ARGS --port P`` until the block ends; ready on entry.

    ``log`` holds the process's stderr once it has exited."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, headers: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [sys.executable, "-m", "routecore.serve.cli", *args, "--port", str(self.port)]
        self.env, self.headers = env, headers
        self.proc: subprocess.Popen[str] | None = None
        self.log = ""

    def __enter__(self) -> ServeProcess:
        self.proc = subprocess.Popen(self.args, cwd=ROOT, env=self.env, stderr=subprocess.PIPE, text=True)
        self.wait_ready()
        return self

    def wait_ready(self, generation: int = 1, timeout: float = 120.0) -> dict[str, Any]:
        """``/readyz`` once it reports ``generation`` (or a later one)."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.proc is not None and self.proc.poll() is None, (
                f"the server exited: {self.proc and self.proc.stderr.read()}"
            )
            try:
                r = httpx.get(f"{self.url}/readyz", timeout=5, headers=self.headers)
                if r.status_code == 200 and r.json()["generation"] >= generation:
                    return dict(r.json())
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"not ready (generation {generation}) after {timeout} s"
            time.sleep(0.05)

    def __exit__(self, *exc: Any) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log = self.proc.stderr.read() if self.proc.stderr else ""


def connect(port: int, timeout: float = 30.0) -> socket.socket:
    """A raw TCP connection to the server (for clients that do not speak HTTP properly)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s


def read_until_closed(s: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as closed);
    ``socket.timeout`` if it keeps the connection open past the socket's timeout."""
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            return out
        if not chunk:
            return out
        out += chunk
