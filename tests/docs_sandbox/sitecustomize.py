"""Loaded by every Python process a docs block starts (tests/test_docs.py puts this folder on
PYTHONPATH): an audit hook refuses writes outside ``$ROUTECORE_DOCS_SANDBOX`` and connections to
anything but loopback, and a process that tried either exits with status 97 whatever it caught.

Native code (ONNX Runtime, SQLite's own file writes, Rust) does not pass through audit hooks;
tests/test_privacy.py watches those under strace."""

from __future__ import annotations

import atexit
import os
import socket
import sys

SANDBOX = os.path.realpath(os.environ["ROUTECORE_DOCS_SANDBOX"])
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
LOOPBACK = {"127.0.0.1", "::1", "localhost", "", None}
PATH_EVENTS = {
    "os.mkdir": (0,),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.rename": (0, 1),
    "os.replace": (0, 1),
    "os.symlink": (1,),
    "os.link": (1,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
    "shutil.move": (0, 1),
    "shutil.copyfile": (1,),
}
violations: list[str] = []


def _inside(path: object) -> bool:
    if isinstance(path, int) or path is None:
        return True  # a file descriptor already opened
    p = os.path.realpath(os.fsdecode(path))  # type: ignore[arg-type]
    return p == SANDBOX or p.startswith(SANDBOX + os.sep) or p.startswith("/dev/") or p.startswith("/proc/")


def _refuse(what: str) -> None:
    violations.append(what)
    sys.stderr.write(f"docs sandbox: {what}\n")
    raise PermissionError(f"docs sandbox: {what}")


def _hook(event: str, args: tuple) -> None:
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & WRITE_FLAGS
        )
        if writes and not _inside(path):
            _refuse(f"write outside the sandbox: {path!r}")
    elif event in PATH_EVENTS:
        for i in PATH_EVENTS[event]:
            if i < len(args) and not _inside(args[i]):
                _refuse(f"{event} outside the sandbox: {args[i]!r}")
    elif event == "sqlite3.connect":
        db = args[0]
        if os.fsdecode(db) not in (":memory:", "") and not os.fsdecode(db).startswith("file::memory:"):
            if not _inside(db):
                _refuse(f"SQLite database outside the sandbox: {db!r}")
    elif event == "socket.connect":
        sock, address = args
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOOPBACK:
            _refuse(f"connection to {address!r}")
    elif event == "socket.getaddrinfo":
        host = args[0]
        if isinstance(host, bytes):
            host = host.decode()
        if host not in LOOPBACK:
            _refuse(f"name lookup of {host!r}")


@atexit.register
def _status() -> None:
    if violations:
        sys.stderr.flush()
        os._exit(97)


sys.addaudithook(_hook)
