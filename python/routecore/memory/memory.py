"""Experience memory: lessons learnt from corrections, in SQLite (the default)
or in PostgreSQL.

A lesson says "for queries like X (in context C), do not use / use tool T".
SQLite in WAL mode gives atomic writes (a crash mid-write loses at most that
write), survives restarts and lets several processes write with a busy timeout.
A ``postgresql://`` (or ``postgres://``) URL selects
:class:`routecore.memory.memory_pg.PostgresMemory` instead: the same interface and
semantics on a server that every replica shares (psycopg 3, the ``postgres``
extra; imported only then). That subclass declares its URL schemes to this class
(``url_schemes``), so this module does not import it.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from routecore.errors import MemoryStoreError
from routecore.hub.models import HOME_ENV
from routecore.memory.lesson_cache import EMBEDDING_DTYPE, LessonCache, LessonMatrix, Row, key_and_legacy

SCHEMA = """
CREATE TABLE IF NOT EXISTS lessons (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    query TEXT NOT NULL,
    context TEXT NOT NULL DEFAULT '',
    tool TEXT NOT NULL,
    use INTEGER NOT NULL,
    model_id TEXT NOT NULL,
    embedding BLOB NOT NULL,
    created REAL NOT NULL
);
-- A narrow index: counting lessons (what a reader checks after each write) reads it, not the rows and their
-- 1.5 KB embeddings (1.8 -> 0.2 ms at 3,000 lessons).
CREATE INDEX IF NOT EXISTS lessons_created ON lessons (created);
CREATE TABLE IF NOT EXISTS learned (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    route TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    model_id TEXT NOT NULL,
    embedding BLOB NOT NULL,
    created REAL NOT NULL
);
"""


@dataclass(frozen=True)
class Lesson:
    id: int
    query: str
    context: str
    tool: str
    use: bool
    model_id: str
    created: float


@dataclass(frozen=True)
class StoredExemplar:
    """A learned exemplar (routecore.updates.learning) as a store keeps it: with its embedding, so
    that a restart or another replica does not embed it again."""

    id: int
    route: str
    text: str
    source: str
    created: float
    embedding: np.ndarray


def lesson_vector(embedding: np.ndarray) -> np.ndarray:
    """``embedding`` as the flat float32 vector a store keeps; rejects an empty or non-finite one."""
    v = np.ascontiguousarray(embedding, dtype=EMBEDDING_DTYPE).ravel()
    if not v.size or not np.isfinite(v).all():
        raise MemoryStoreError("a lesson needs a non-empty, finite embedding")
    return v


#: URL schemes that select the PostgreSQL store.
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(path: object) -> bool:
    """Whether ``path`` is a PostgreSQL connection URL (only a ``str``: a ``Path`` is a file)."""
    return isinstance(path, str) and path[:13].lower().startswith(POSTGRES_SCHEMES)


def default_path() -> Path:
    """Where lessons persist by default: ``$ROUTECORE_HOME/lessons.sqlite`` when
    that is set, else ``$XDG_DATA_HOME/routecore/lessons.sqlite`` (``~/.local/share``)."""
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]) / "lessons.sqlite"
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "routecore" / "lessons.sqlite"


class ExperienceMemory:
    """Lessons in an SQLite file: :func:`default_path` unless ``path`` is given
    (``":memory:"`` for a throwaway store); a ``postgresql://user@host/db`` URL
    makes a :class:`routecore.memory.memory_pg.PostgresMemory` (a subclass) instead.

    A store on a server declares the URL schemes it serves, ``class X(ExperienceMemory,
    url_schemes=(...))``: a URL with one of them makes an ``X``. This module imports no such
    subclass; ``routecore.memory`` imports them, so they are declared before any store is made."""

    #: The subclass for each URL scheme (``"postgresql://"``), as subclasses declare them.
    _url_stores: dict[str, type[ExperienceMemory]] = {}

    def __init_subclass__(cls, url_schemes: Sequence[str] = (), **kw: Any) -> None:
        super().__init_subclass__(**kw)
        for scheme in url_schemes:
            ExperienceMemory._url_stores[scheme.lower()] = cls

    def __new__(cls, path: str | Path | None = None, *, timeout: float = 5.0) -> ExperienceMemory:
        store = cls._store_for(path) if cls is ExperienceMemory else None
        return super().__new__(store or cls)

    @staticmethod
    def _store_for(path: object) -> type[ExperienceMemory] | None:
        """The subclass a URL ``path`` selects (only a ``str``: a ``Path`` is a file), else ``None``."""
        if not isinstance(path, str) or "://" not in path[:32]:
            return None
        scheme = path[: path.index("://") + 3].lower()
        return ExperienceMemory._url_stores.get(scheme)

    def __init__(self, path: str | Path | None = None, *, timeout: float = 5.0):
        if path is None:
            path = default_path()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise MemoryStoreError(f"cannot create {path.parent} for the memory store: {e}") from None
        self.path = str(path)
        self._lock = threading.Lock()
        self._lessons: LessonCache | None = None  # matrix(): grown as lessons are added
        self._writes = 0  # this connection's writes (SQLite's data_version counts only others')
        self._seen: tuple[tuple[int, int], LessonCache | None] = ((-1, -1), None)
        #: Lessons the last matrix() left out because of their embedding's width.
        self.skipped = 0
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout, check_same_thread=False, isolation_level=None
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            self._db.execute("SELECT count(*) FROM lessons").fetchone()
        except sqlite3.DatabaseError as e:
            raise MemoryStoreError(f"memory store {self.path} is unusable (locked or corrupt): {e}") from None

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            try:
                with self._db:  # one transaction: all or nothing
                    self._db.execute("BEGIN IMMEDIATE")
                    return self._db.execute(sql, args).fetchall()
            except sqlite3.OperationalError as e:
                raise MemoryStoreError(f"memory store {self.path}: {e}") from None
            except sqlite3.Error as e:
                raise MemoryStoreError(f"memory store {self.path} is corrupt or closed: {e}") from None

    def record(
        self, query: str, tool: str, *, use: bool, embedding: np.ndarray, model_id: str, context: str = ""
    ) -> int:
        """Store a lesson; returns its id."""
        v = lesson_vector(embedding)
        width = self._run("SELECT length(embedding) / 4 FROM lessons WHERE model_id = ? LIMIT 1", (model_id,))
        if width and width[0][0] != v.size:
            raise MemoryStoreError(
                f"a lesson embedding for {model_id} is {v.size} wide, "
                f"but that model's lessons are {width[0][0]} wide"
            )
        rows = self._run(
            "INSERT INTO lessons (query, context, tool, use, model_id, embedding, created) "
            "VALUES (?,?,?,?,?,?,?) RETURNING id",
            (query, context, tool, int(use), model_id, v.tobytes(), time.time()),
        )
        self._writes += 1  # after the commit: a reader in between sees the change at its next call
        return int(rows[0][0])

    def list(self) -> list[Lesson]:
        rows = self._run("SELECT id, query, context, tool, use, model_id, created FROM lessons ORDER BY id")
        return [Lesson(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in rows]

    def delete(self, lesson_id: int) -> bool:
        """Delete one lesson; False when it did not exist."""
        gone = bool(self._run("DELETE FROM lessons WHERE id = ? RETURNING id", (lesson_id,)))
        self._writes += 1
        return gone

    # -- learned exemplars (routecore.updates.learning) ---------------------------------------
    def add_learned(
        self, route: str, text: str, source: str, *, embedding: np.ndarray, model_id: str, created: float
    ) -> int:
        """Store a learned exemplar of ``route``; returns its id (unique in the store)."""
        rows = self._run(
            "INSERT INTO learned (route, text, source, model_id, embedding, created) VALUES (?,?,?,?,?,?) "
            "RETURNING id",
            (route, text, source, model_id, lesson_vector(embedding).tobytes(), created),
        )
        self._writes += 1
        return int(rows[0][0])

    def learned_exemplars(self, model_id: str) -> builtins.list[StoredExemplar]:
        """The learned exemplars stored for ``model_id``, oldest first."""
        rows: Sequence[Any] = self._read(
            "SELECT id, route, text, source, created, embedding FROM learned "
            "WHERE model_id IN (?, ?) ORDER BY id",
            key_and_legacy(model_id),
        )
        return [
            StoredExemplar(r[0], r[1], r[2], r[3], r[4], np.frombuffer(r[5], EMBEDDING_DTYPE)) for r in rows
        ]

    def remove_learned(self, ids: Sequence[int]) -> int:
        """Remove learned exemplars by id; returns how many there were."""
        n = 0
        for i in ids:
            n += len(self._run("DELETE FROM learned WHERE id = ? RETURNING id", (int(i),)))
        self._writes += 1
        return n

    def matrix(self, model_id: str, dim: int | None = None) -> LessonMatrix:
        """(embeddings [n, d], tools, use flags, contexts) of lessons for ``model_id``: read
        again only past the last lesson read when lessons were only added since (also by other
        processes), in full when any was deleted (:mod:`routecore.memory.lesson_cache`).

        Rows whose embedding is not ``dim`` wide (any width agreeing with the first
        row when ``dim`` is None) are skipped; ``skipped`` counts them."""
        cache = self._lessons
        if cache is None or cache.model_id != model_id or cache.dim != dim and dim is not None:
            cache = self._lessons = LessonCache(model_id, dim)
        # A count over the table costs a scan (1.8 ms at 3,000 lessons): only when a write may have
        # happened, this connection's (its own counter) or another's (SQLite's data_version).
        seen = (self._read("PRAGMA data_version")[0][0], self._writes)
        if seen == self._seen[0] and self._seen[1] is cache and cache.head is not None and cache.head[0] >= 0:
            head = cache.head
        else:
            row = self._read("SELECT count(*), coalesce(max(id), 0) FROM lessons")[0]
            head = (int(row[0]), int(row[1]))
            self._seen = (seen, cache)
        out = cache.matrix(
            head,
            lambda lo, hi: self._read(
                "SELECT id, model_id, embedding, tool, use, context FROM lessons WHERE id > ? AND id <= ? "
                "ORDER BY id",
                (lo, hi),
            ),
        )
        self.skipped = cache.skipped
        return out

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> Sequence[Row]:
        """A read (no write lock: readers do not queue behind a writer's transaction)."""
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except sqlite3.Error as e:
                raise MemoryStoreError(f"memory store {self.path}: {e}") from None

    def close(self) -> None:
        self._db.close()
