"""A Hugging Face-shaped hub on 127.0.0.1 for the `models pull` tests (never the internet).

Serves ``/api/models/{repo}/tree/{revision}/{folder}`` (the listing) and
``/{repo}/resolve/{revision}/{path}`` (the files), with ``Range`` support, and can be
told to misbehave per request: see :data:`FAULTS`. :func:`hf_cache` lays files out
the way ``huggingface_hub`` caches them.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Optional

#: Faults a request can meet, one taken from ``Hub.faults[key]`` per request (the key
#: is a file's repository path, or ``tree:FOLDER`` for a listing): "500", "404", "416":
#: that status; "429": that status with ``Retry-After: 1``; "reset": close without
#: answering; "drop": send the full Content-Length, half the body, then close; "short":
#: a truncated body with an honest Content-Length; "long": a Content-Length 10 bytes
#: above the body's size; "flip": the last byte flipped; "slow": wait ``Hub.delay``
#: seconds first; "trickle": send the body ``Hub.piece`` bytes at a time, ``Hub.delay``
#: seconds apart; "pause": send half the body, wait ``Hub.delay`` seconds, send the rest;
#: "norange": ignore Range; "ok": serve normally.
FAULTS = (
    "500",
    "404",
    "416",
    "429",
    "reset",
    "drop",
    "short",
    "long",
    "flip",
    "slow",
    "trickle",
    "pause",
    "norange",
    "ok",
)


def git_blob_id(b: bytes) -> str:
    """The id git gives a blob, which the hub lists as ``oid`` for a non-LFS file."""
    return hashlib.sha1(b"blob %d\0" % len(b) + b).hexdigest()


def default_lfs(path: str) -> bool:
    """Like a hub: model weights are in LFS, JSON files are plain git blobs."""
    return not path.endswith(".json")


class _QuietServer(http.server.ThreadingHTTPServer):
    """A server whose handlers may meet closed sockets (clients that gave up) without a traceback
    on stderr, which would land in a later test's captured output."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class Hub:
    """Serves ``files`` (name -> bytes) of ``repo``; a name without ``/`` lives in ``subdir``.

    ``listing`` replaces the tree answer for the folders it names;
    ``served`` replaces the bytes sent for a path while the listing still describes
    ``files``; ``token`` makes every request to the hub (not to its CDN) need
    ``Authorization: Bearer {token}``; ``cdn`` redirects LFS downloads to a second
    server on another port. ``revision`` is the only one served. ``requests`` records
    ``(server, path, headers)``.
    """

    def __init__(
        self,
        files: dict[str, bytes],
        repo: str,
        subdir: str = "",
        *,
        lfs: Callable[[str], bool] = default_lfs,
        listing: Optional[dict[str, bytes]] = None,
        served: Optional[dict[str, bytes]] = None,
        faults: Optional[dict[str, list[str]]] = None,
        token: Optional[str] = None,
        cdn: bool = False,
        delay: float = 0.0,
        piece: int = 1024,
        revision: str = "main",
    ):
        self.repo, self.lfs, self.listing, self.token, self.delay = repo, lfs, listing or {}, token, delay
        self.piece, self.revision = piece, revision
        self.files = {self.path(n, subdir): b for n, b in files.items()}
        self.served = {self.path(n, subdir): b for n, b in (served or {}).items()}
        self.faults = {
            (n if n.startswith("tree:") else self.path(n, subdir)): list(f) for n, f in (faults or {}).items()
        }
        self.listed: list[str] = []
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.lock = threading.Lock()
        self.servers = [self._serve("hub")]
        if cdn:
            self.servers.append(self._serve("cdn"))
        self.url = self.base(0)

    @staticmethod
    def path(name: str, subdir: str) -> str:
        return name if "/" in name else f"{subdir}/{name}".lstrip("/")

    def base(self, i: int) -> str:
        return f"http://127.0.0.1:{self.servers[i].server_address[1]}"

    def gets(self, path: str, server: str = "hub") -> list[dict[str, str]]:
        """Headers of each GET of file ``path`` (its repository path) on ``server``."""
        return [
            h for s, p, h in self.requests if s == server and p.endswith(f"/resolve/{self.revision}/{path}")
        ]

    def tree(self, folder: str) -> bytes:
        if folder in self.listing:
            return self.listing[folder]
        rows = []
        for p, b in self.files.items():
            if p.rpartition("/")[0] != folder:
                continue
            row: dict = {"type": "file", "path": p, "size": len(b)}
            if self.lfs(p):
                row.update(
                    oid=hashlib.sha1(b"pointer " + p.encode()).hexdigest(),
                    lfs={"oid": hashlib.sha256(b).hexdigest(), "size": len(b), "pointerSize": 134},
                )
            else:
                row["oid"] = git_blob_id(b)
            rows.append(row)
        return json.dumps(rows).encode()

    def _serve(self, role: str) -> http.server.ThreadingHTTPServer:
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                with hub.lock:
                    hub.requests.append((role, self.path, dict(self.headers)))
                if role == "hub" and hub.token and self.headers.get("Authorization") != f"Bearer {hub.token}":
                    return self.answer(401, b"")
                tree = f"/api/models/{hub.repo}/tree/{hub.revision}"
                if role == "hub" and (self.path == tree or self.path.startswith(tree + "/")):
                    folder = self.path[len(tree) + 1 :]
                    hub.listed.append(folder)
                    return hub.respond(self, f"tree:{folder}", hub.tree(folder))
                prefix = f"/{hub.repo}/resolve/{hub.revision}/"
                path = self.path[len(prefix) :] if self.path.startswith(prefix) else None
                if path not in hub.files:
                    return self.answer(404, b"")
                if role == "hub" and len(hub.servers) > 1 and hub.lfs(path):
                    self.send_response(302)
                    self.send_header("Location", hub.base(1) + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                hub.respond(self, path, hub.served.get(path, hub.files[path]))

            def answer(
                self,
                code: int,
                body: bytes,
                headers: Optional[dict[str, str]] = None,
                length: Optional[int] = None,
            ):
                self.send_response(code)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                self.wfile.write(body)

        server = _QuietServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return server

    def respond(self, h, key: str, body: bytes) -> None:
        """Answer a GET on handler ``h`` with ``body``, applying the next fault queued for ``key``."""
        with self.lock:
            queue = self.faults.get(key)
            fault = queue.pop(0) if queue else "ok"
        assert fault in FAULTS, fault
        if fault == "slow":
            time.sleep(self.delay)
        if fault in ("500", "404", "416", "429"):
            return h.answer(int(fault), b"", {"Retry-After": "1"} if fault == "429" else {})
        if fault == "reset":
            h.close_connection = True
            return
        if fault == "short":
            body = body[: len(body) // 2]
        if fault == "flip":
            body = body[:-1] + bytes([body[-1] ^ 1])
        rng = h.headers.get("Range")
        if rng and fault != "norange":
            start = int(rng.removeprefix("bytes=").rstrip("-"))
            if start >= len(body):
                return h.answer(416, b"", {"Content-Range": f"bytes */{len(body)}"})
            headers = {"Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}"}
            return self.send_body(h, 206, body[start:], fault, headers)
        self.send_body(h, 200, body, fault, {})

    def send_body(self, h, code: int, body: bytes, fault: str, headers: dict[str, str]) -> None:
        if fault in ("trickle", "pause"):
            h.answer(code, b"", headers, length=len(body))
            h.close_connection = True
            if fault == "trickle":
                parts = [body[i : i + self.piece] for i in range(0, len(body), self.piece)]
            else:
                parts = [body[: len(body) // 2], body[len(body) // 2 :]]
            for i, part in enumerate(parts):
                if i:
                    time.sleep(self.delay)
                h.wfile.write(part)
        elif fault == "drop":
            h.answer(code, body[: len(body) // 2], headers, length=len(body))
            h.close_connection = True
        elif fault == "long":
            h.answer(code, body, headers, length=len(body) + 10)
            h.close_connection = True
        else:
            h.answer(code, body, headers)

    def close(self) -> None:
        for s in self.servers:
            s.shutdown()
            s.server_close()


def hf_cache(
    root: Path,
    repo: str,
    files: dict[str, bytes],
    commit: str,
    *,
    refs: Iterable[str] = ("main",),
    links: bool = True,
    lfs: Callable[[str], bool] = default_lfs,
) -> Path:
    """Lay ``files`` (repository path -> bytes) out under ``root`` as ``huggingface_hub`` caches
    them at ``commit``: blobs named by SHA-256 (LFS) or git blob id, snapshot entries that
    link to them (copies if not ``links``), and ``refs``; returns the repository's folder."""
    folder = root / ("models--" + repo.replace("/", "--"))
    for path, b in files.items():
        blob = folder / "blobs" / (hashlib.sha256(b).hexdigest() if lfs(path) else git_blob_id(b))
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(b)
        entry = folder / "snapshots" / commit / path
        entry.parent.mkdir(parents=True, exist_ok=True)
        if links:
            entry.symlink_to(os.path.relpath(blob, entry.parent))
        else:
            entry.write_bytes(b)
    for ref in refs:
        (folder / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (folder / "refs" / ref).write_text(commit)
    return folder


def isolate(tmp_path, monkeypatch):
    """A fresh ``$ROUTECORE_HOME`` under ``tmp_path``, an empty Hugging Face cache ``tmp_path/hf``
    (never the user's), no other ``HF_*`` variables, fast retries; returns the home."""
    from routecore.hub import hf_cache, hub_http, models, models_pull

    monkeypatch.setenv(models.HOME_ENV, str(tmp_path / "home"))
    monkeypatch.setenv(hf_cache.HUB_CACHE_ENVS[0], str(tmp_path / "hf"))
    hf_vars = (
        models_pull.ENDPOINT_ENV,
        models_pull.TOKEN_ENV,
        models_pull.OFFLINE_ENV,
        *hf_cache.HUB_CACHE_ENVS[1:],
        hf_cache.HOME_ENV,
    )
    for var in (models.HUB_ENV, *hf_vars):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(hub_http, "BACKOFF_S", 0.01)
    return tmp_path / "home"
