"""Experience memory on PostgreSQL (psycopg 3): one lesson store shared by
every replica, chosen by ``ExperienceMemory("postgresql://user@host/db")``.

Same interface and semantics as the SQLite store (:mod:`routecore.memory.memory`):
``record``, ``list``, ``delete``, ``lessons`` (cached until the table changes,
also by other processes and hosts), ``skipped``, ``close``; every failure is a
:class:`~routecore.errors.MemoryStoreError`, never a psycopg exception.

* Tables ``routecore_lessons`` and ``routecore_meta`` (``schema_version``),
  created on first connection under a transaction-scoped advisory lock, so
  that several processes starting at once do not race; a store of a newer
  schema version is refused, naming both versions.
* Embeddings are ``bytea``, float32 little-endian: the very bytes SQLite keeps,
  read back with one ``np.frombuffer`` per row (no per-element parsing as
  ``real[]`` would need) and fetched in binary format; their width is
  ``octet_length / 4``, as in SQLite.
* Nothing waits unbounded: ``connect_timeout`` and the session's
  ``statement_timeout``, ``lock_timeout`` and
  ``idle_in_transaction_session_timeout`` come from ``timeout`` (unless the URL
  sets them), TCP keepalives and ``tcp_user_timeout`` end a connection to a
  host that vanished, and a watchdog thread cuts a call that got no answer
  after ``2 * timeout`` (a hung server, which none of those notice). A lost connection is
  dropped; the next call reconnects
  (a connection that went stale between calls is retried once at once), and
  after a failed connection attempt calls fail fast for ``retry_after`` seconds
  instead of each waiting for the connect timeout.
* psycopg is imported only by :mod:`routecore.memory.pg_connection` (with the schema, URL redaction and
  the watchdog), and only for a PostgreSQL URL. This module declares the URL schemes it serves to
  :class:`~routecore.memory.memory.ExperienceMemory`; ``routecore.memory`` imports it for that.
"""

from __future__ import annotations

import builtins
import math
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

import numpy as np

from routecore.errors import MemoryStoreError
from routecore.memory.lesson_cache import EMBEDDING_DTYPE, LessonCache, Lessons, key_and_legacy
from routecore.memory.memory import POSTGRES_SCHEMES, ExperienceMemory, Lesson, StoredExemplar, lesson_vector
from routecore.memory.pg_connection import (
    LEARNED_SCHEMA,
    MODEL_LOCK_NS,
    SCHEMA,
    SCHEMA_LOCK,
    SCHEMA_VERSION,
    Stale,
    Watchdog,
    load_psycopg,
    one_line,
    redacted,
)

if TYPE_CHECKING:
    from pathlib import Path

    import psycopg

T = TypeVar("T")


class PostgresMemory(ExperienceMemory, url_schemes=POSTGRES_SCHEMES):
    """Lessons in a PostgreSQL database (``ExperienceMemory("postgresql://...")``).

    ``timeout`` (seconds) bounds connecting (at least 2 s: libpq's floor) and
    each statement, lock wait and transaction on the server; a call that got no
    answer after twice that (a hung server) is ended by a watchdog."""

    #: Seconds during which calls fail at once after a failed connection attempt.
    retry_after = 1.0

    def __init__(self, path: str | Path | None = None, *, timeout: float = 5.0):
        if not isinstance(path, str):
            raise MemoryStoreError(f"not a PostgreSQL URL: {path!r}")
        cut = path.find("://")
        self._url = path[:cut].lower() + path[cut:] if cut > 0 else path  # libpq wants the scheme lower-case
        self.path = redacted(path)
        self._timeout = float(timeout)
        self._lock = threading.Lock()
        self._lessons: LessonCache | None = None  # lessons(): grown as lessons are added
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._closed = False
        self._down_until = 0.0
        self._down_why = ""
        self._fired = 0
        #: Lessons the last lessons() left out because of their embedding's width.
        self.skipped = 0
        self._watchdog = Watchdog()
        weakref.finalize(self, self._watchdog.stop)
        with self._lock:  # reachable, and the schema is there and ours
            try:
                self._connection()
            finally:
                self._watchdog.disarm()

    # -- connection -----------------------------------------------------------------------------

    def _error(self, e: BaseException) -> MemoryStoreError:
        if self._watchdog.fired != self._fired:
            return MemoryStoreError(
                f"memory store {self.path}: no answer within {2 * self._timeout:g} s (connection closed)"
            )
        return MemoryStoreError(f"memory store {self.path}: {one_line(e)}")

    def _arm(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        self._fired = self._watchdog.fired
        self._watchdog.arm(conn.pgconn.socket, 2 * self._timeout)

    def _connection(self) -> tuple[psycopg.Connection[tuple[Any, ...]], bool]:
        """The open connection, or a new one (then ``True``): schema checked or created."""
        if self._closed:
            raise MemoryStoreError(f"memory store {self.path} is closed")
        if self._conn is not None and not self._conn.closed:
            return self._conn, False
        self._conn = None
        wait = self._down_until - time.monotonic()
        if wait > 0:
            raise MemoryStoreError(
                f"memory store {self.path} is unreachable ({self._down_why}); next try in {wait:.1f} s"
            )
        pg = load_psycopg()
        ms = str(max(1, int(self._timeout * 1000)))
        extra = {
            "connect_timeout": str(max(2, math.ceil(self._timeout))),
            "application_name": "routecore",
            "keepalives": "1",
            "keepalives_idle": "5",
            "keepalives_interval": "2",
            "keepalives_count": "3",
            "tcp_user_timeout": ms,
        }
        conn = None
        self._fired = self._watchdog.fired
        try:
            given = pg.conninfo.conninfo_to_dict(self._url)  # a malformed URL is a pg.Error too
            conn = pg.connect(
                self._url,
                autocommit=True,
                prepare_threshold=None,
                **{k: v for k, v in extra.items() if k not in given},
            )
            self._arm(conn)
            limits = {
                "statement_timeout": ms,
                "lock_timeout": ms,
                "idle_in_transaction_session_timeout": str(max(1000, 2 * int(ms))),
            }
            limits = {k: v for k, v in limits.items() if k not in given.get("options", "")}
            if limits:
                conn.execute(
                    "SELECT " + ", ".join(["set_config(%s, %s, false)"] * len(limits)),
                    tuple(x for kv in limits.items() for x in kv),
                )
            self._ensure_schema(conn)
        except (pg.Error, MemoryStoreError, OSError) as e:
            self._watchdog.disarm()
            if conn is not None:
                conn.close()
            self._down_until = time.monotonic() + self.retry_after
            self._down_why = one_line(e)
            raise (e if isinstance(e, MemoryStoreError) else self._error(e)) from None
        self._conn = conn
        self._down_until = 0.0
        return conn, True

    def _ensure_schema(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            version = None
            row = conn.execute("SELECT to_regclass('routecore_meta') IS NOT NULL").fetchone()
            if row and row[0]:
                got = conn.execute("SELECT value FROM routecore_meta WHERE key = 'schema_version'").fetchone()
                version = got[0] if got else None
            if version is not None:
                try:
                    v = int(version)
                except ValueError:
                    raise MemoryStoreError(
                        f"memory store {self.path}: schema version {version!r} is not understood "
                        f"(this routecore reads version {SCHEMA_VERSION})"
                    ) from None
                if v > SCHEMA_VERSION:
                    raise MemoryStoreError(
                        f"memory store {self.path} has schema version {v}, "
                        f"newer than version {SCHEMA_VERSION} "
                        "that this routecore reads: upgrade routecore"
                    )
                if v < SCHEMA_VERSION:  # no older version exists yet: a migration would go here
                    raise MemoryStoreError(
                        f"memory store {self.path} has schema version {v}, "
                        f"older than version {SCHEMA_VERSION} "
                        "and no migration is known"
                    )
                for statement in LEARNED_SCHEMA:
                    conn.execute(statement)
                return
            for statement in SCHEMA + LEARNED_SCHEMA:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO routecore_meta (key, value) VALUES ('schema_version', %s) "
                "ON CONFLICT (key) DO NOTHING",
                (str(SCHEMA_VERSION),),
            )

    def _drop(self) -> None:
        self._watchdog.disarm()  # before the socket is closed: its number may be reused
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
        self._conn = None

    def _attempts(self, body: Callable[[psycopg.Connection[tuple[Any, ...]]], T]) -> T:
        """``body(conn)`` under the lock, psycopg errors turned into MemoryStoreError.
        A connection that went stale since the last call (the server restarted)
        fails at its first statement, before anything was written: then once
        more on a new connection."""
        with self._lock:
            try:
                return self._attempt_twice(body)
            finally:
                self._watchdog.disarm()

    def _attempt_twice(self, body: Callable[[psycopg.Connection[tuple[Any, ...]]], T]) -> T:
        pg = load_psycopg()
        for attempt in (0, 1):
            conn, fresh = self._connection()
            self._arm(conn)
            try:
                return body(conn)
            except Stale as e:
                self._drop()
                if fresh or attempt or self._watchdog.fired != self._fired:
                    raise self._error(e.__cause__ or e) from None
            except pg.Error as e:
                if conn.closed or conn.broken:
                    self._drop()
                raise self._error(e) from None
        raise AssertionError("unreachable")

    def _first(
        self,
        conn: psycopg.Connection[tuple[Any, ...]],
        sql: str,
        args: tuple[Any, ...] = (),
        binary: bool = False,
    ) -> list[tuple[Any, ...]]:
        """The first statement on ``conn`` in a call: a lost connection raises :class:`Stale`."""
        pg = load_psycopg()
        try:
            cur = conn.execute(sql, args, binary=binary)
        except pg.OperationalError as e:
            if conn.closed or conn.broken:
                raise Stale() from e
            raise
        return cur.fetchall() if cur.description else []

    def _query(self, sql: str, args: tuple[Any, ...] = (), binary: bool = False) -> list[tuple[Any, ...]]:
        """One statement (atomic by itself, one round trip)."""
        return self._attempts(lambda conn: self._first(conn, sql, args, binary))

    def _transact(self, fn: Callable[[psycopg.Connection[tuple[Any, ...]]], T]) -> T:
        """``fn(conn)`` in one transaction: all or nothing."""
        pg = load_psycopg()

        def body(conn: psycopg.Connection[tuple[Any, ...]]) -> T:
            self._first(conn, "BEGIN")
            try:
                out = fn(conn)
                conn.execute("COMMIT")
                return out
            except BaseException:
                if not (conn.closed or conn.broken):
                    try:
                        conn.execute("ROLLBACK")
                    except pg.Error:
                        self._drop()
                raise

        return self._attempts(body)

    # -- the ExperienceMemory interface -----------------------------------------------------------

    def record(
        self, query: str, tool: str, *, use: bool, embedding: np.ndarray, model_id: str, context: str = ""
    ) -> int:
        """Store a lesson; returns its id."""
        v = lesson_vector(embedding)

        def write(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
            # One writer per model at a time: the width check and the insert agree across processes.
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (MODEL_LOCK_NS, model_id))
            width = conn.execute(
                "SELECT octet_length(embedding) / 4 FROM routecore_lessons WHERE model_id = %s LIMIT 1",
                (model_id,),
            ).fetchone()
            if width and width[0] != v.size:
                raise MemoryStoreError(
                    f"a lesson embedding for {model_id} is {v.size} wide, "
                    f"but that model's lessons are {width[0]} wide"
                )
            row = conn.execute(
                "INSERT INTO routecore_lessons (query, context, tool, use, model_id, embedding, created) "
                "VALUES (%s, %s, %s, %s, %s, %b, %s) RETURNING id",
                (query, context, tool, bool(use), model_id, v.tobytes(), time.time()),
            ).fetchone()
            assert row is not None
            return int(row[0])

        return self._transact(write)

    def list(self) -> list[Lesson]:
        rows = self._query(
            "SELECT id, query, context, tool, use, model_id, created FROM routecore_lessons ORDER BY id"
        )
        return [Lesson(int(r[0]), r[1], r[2], r[3], bool(r[4]), r[5], float(r[6])) for r in rows]

    def delete(self, lesson_id: int) -> bool:
        """Delete one lesson; False when it did not exist."""
        return bool(
            self._query("DELETE FROM routecore_lessons WHERE id = %s RETURNING id", (int(lesson_id),))
        )

    def add_learned(
        self, route: str, text: str, source: str, *, embedding: np.ndarray, model_id: str, created: float
    ) -> int:
        """Store a learned exemplar of ``route``; returns its id (unique for every replica)."""
        rows = self._query(
            "INSERT INTO routecore_learned (route, text, source, model_id, embedding, created) "
            "VALUES (%s, %s, %s, %s, %b, %s) RETURNING id",
            (route, text, source, model_id, lesson_vector(embedding).tobytes(), created),
        )
        return int(rows[0][0])

    def learned_exemplars(self, model_id: str) -> builtins.list[StoredExemplar]:
        """The learned exemplars stored for ``model_id``, oldest first."""
        rows = self._query(
            "SELECT id, route, text, source, created, embedding FROM routecore_learned "
            "WHERE model_id IN (%s, %s) ORDER BY id",
            key_and_legacy(model_id),
            binary=True,
        )
        return [
            StoredExemplar(
                int(r[0]), r[1], r[2], r[3], float(r[4]), np.frombuffer(bytes(r[5]), EMBEDDING_DTYPE)
            )
            for r in rows
        ]

    def remove_learned(self, ids: Sequence[int]) -> int:
        """Remove learned exemplars by id; returns how many there were."""
        rows = self._query(
            "DELETE FROM routecore_learned WHERE id = ANY(%s) RETURNING id", ([int(i) for i in ids],)
        )
        return len(rows)

    def lessons(self, model_id: str, dim: int | None = None) -> Lessons:
        """The lessons for ``model_id`` as ``tools()`` scores them: one round trip when nothing
        changed, the new rows only when lessons were only added (also by other replicas),
        everything when any was deleted (:mod:`routecore.memory.lesson_cache`).

        Rows whose embedding is not ``dim`` wide (any width agreeing with the first
        row when ``dim`` is None) are skipped; ``skipped`` counts them."""
        head = self._query("SELECT count(*), coalesce(max(id), 0) FROM routecore_lessons")
        cache = self._lessons
        if cache is None or cache.model_id != model_id or cache.dim != dim and dim is not None:
            cache = self._lessons = LessonCache(model_id, dim)
        out = cache.lessons(
            (int(head[0][0]), int(head[0][1])),
            lambda lo, hi: [
                (int(r[0]), r[1], bytes(r[2]), r[3], r[4], r[5])
                for r in self._query(
                    "SELECT id, model_id, embedding, tool, use, context FROM routecore_lessons "
                    "WHERE id > %s AND id <= %s ORDER BY id",
                    (lo, hi),
                    binary=True,
                )
            ],
        )
        self.skipped = cache.skipped
        return out

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._drop()
