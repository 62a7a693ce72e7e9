"""A throwaway PostgreSQL server for the tests (issue 18): ``initdb`` into a
temporary folder, ``pg_ctl start`` on a free 127.0.0.1 port (no unix socket),
``pg_ctl stop`` and the folder removed at the end.

The server binaries (``initdb``, ``pg_ctl``, ``postgres``) are looked up in
order: ``$ROUTECORE_PG_BIN`` (a folder), ``PATH``, Debian's
``/usr/lib/postgresql/<major>/bin`` (the ``postgresql`` package puts them
there, off ``PATH``; the newest major wins) and the ``pgserver`` wheel's
``pginstall/bin``. ``.ci/run`` installs Debian's package when none is found.

PostgreSQL refuses to run as root: as root, ``initdb``, ``pg_ctl`` and so the
server run as an unprivileged user (``postgres`` when it exists, as Debian's
package makes it, else ``nobody``), switched to by ``subprocess``'s
``user=``/``group=``; the temporary folder is handed to that user.

The server trades durability for speed (``fsync``, ``synchronous_commit`` and
``full_page_writes`` off): it lives for one test run.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import Any, Optional

BIN_ENV = "ROUTECORE_PG_BIN"
TOOLS = ("initdb", "pg_ctl", "postgres")


def _complete(d: Path) -> bool:
    return all(os.access(d / t, os.X_OK) for t in TOOLS)


def _major(d: str) -> tuple[int, ...]:
    m = re.search(r"/postgresql/(\d+)(?:\.(\d+))?/bin$", d)
    return tuple(int(x) for x in m.groups() if x) if m else (0,)


def find_bin_dir() -> Optional[Path]:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``, or None."""
    if os.environ.get(BIN_ENV):
        d = Path(os.environ[BIN_ENV])
        if not _complete(d):
            raise RuntimeError(f"${BIN_ENV}={d} does not hold {', '.join(TOOLS)}")
        return d
    found = shutil.which("pg_ctl")
    if found:  # /usr/local/bin/pg_ctl may be a symlink into /usr/lib/postgresql/NN/bin
        d = Path(os.path.realpath(found)).parent
        if _complete(d):
            return d
        if _complete(Path(found).parent):
            return Path(found).parent
    for d in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_major, reverse=True):
        if _complete(Path(d)):
            return Path(d)
    spec = importlib.util.find_spec("pgserver")  # located, not imported
    if spec and spec.submodule_search_locations:
        d = Path(list(spec.submodule_search_locations)[0]) / "pginstall" / "bin"
        if _complete(d):
            return d
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_user() -> Optional[pwd.struct_passwd]:
    """The user the server runs as when we are root; None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    raise RuntimeError(
        "running as root and there is neither a 'postgres' nor a 'nobody' user to run PostgreSQL as"
    )


CONF = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = ''
max_connections = 60
shared_buffers = 16MB
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
"""


def _cleanup(base: str, pg_ctl: str, data: str, run: Any) -> None:
    if os.path.exists(os.path.join(data, "postmaster.pid")):
        subprocess.run(
            [pg_ctl, "-D", data, "-m", "immediate", "-w", "-t", "20", "stop"], capture_output=True, **run
        )
    shutil.rmtree(base, ignore_errors=True)


class PgServer:
    """One throwaway server; :meth:`url` gives a connection URL (user ``postgres``, trust auth)."""

    def __init__(self, bin_dir: Optional[Path] = None):
        self.bin = bin_dir or find_bin_dir()
        if self.bin is None:
            raise RuntimeError(
                "no PostgreSQL server binaries (initdb, pg_ctl, postgres): install Debian's 'postgresql' "
                f"package, put them on PATH or set ${BIN_ENV}"
            )
        self.base = Path(tempfile.mkdtemp(prefix="routecore-pg-"))
        self.data = self.base / "data"
        self.log = self.base / "server.log"
        self.port = free_port()
        user = _server_user()
        self._run: dict[str, Any] = {
            "cwd": str(self.base),
            "env": {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"},
        }
        if user is not None:
            os.chown(self.base, user.pw_uid, user.pw_gid)
            self._run.update(user=user.pw_uid, group=user.pw_gid, extra_groups=[])
            self._run["env"]["HOME"] = str(self.base)
            self.run_as = user.pw_name
        else:
            self.run_as = pwd.getpwuid(os.getuid()).pw_name
        self._finalizer = weakref.finalize(
            self, _cleanup, str(self.base), str(self.bin / "pg_ctl"), str(self.data), self._run
        )
        self._pg(
            [
                "initdb",
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        )
        with open(self.data / "postgresql.conf", "a") as f:
            f.write(CONF.format(port=self.port))
        self.start()

    def _pg(self, args: list[str], timeout: float = 60) -> str:
        r = subprocess.run(
            [str(self.bin / args[0]), *args[1:]], capture_output=True, text=True, timeout=timeout, **self._run
        )
        if r.returncode:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{' '.join(args[:3])} failed ({r.returncode}) as {self.run_as}: "
                f"{r.stderr or r.stdout}\n{log}"
            )
        return r.stdout

    @property
    def version(self) -> str:
        return self._pg(["postgres", "--version"]).strip()

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def start(self) -> None:
        """Start (again, on the same port and data)."""
        self._pg(["pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "30", "start"])

    def stop(self, mode: str = "fast") -> None:
        """``fast``: connections are ended, as when an operator stops the server;
        ``immediate``: as a crash (recovery on the next start)."""
        self._pg(["pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop"])

    def create_database(self, name: str) -> str:
        """A fresh database; returns its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True, connect_timeout=5) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> "PgServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
