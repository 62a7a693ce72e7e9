"""Experience memory: lessons learnt from corrections, in SQLite (the default)
or in PostgreSQL.

A lesson says "for queries like X (in context C), do not use / use tool T".
SQLite in WAL mode gives atomic writes (a crash mid-write loses at most that
write), survives restarts and lets several processes write with a busy timeout.
A ``postgresql://`` (or ``postgres://``) URL selects
:class:`routecore.memory_pg.PostgresMemory` instead: the same interface and
semantics on a server that every replica shares (psycopg 3, the ``postgres``
extra; imported only then).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from routecore.errors import MemoryStoreError
from routecore.models import HOME_ENV

#: ``ExperienceMemory.matrix()``: (embeddings [n, d], tools, use flags, contexts).
#: (A module-level alias: inside the class, ``list`` is the method ``ExperienceMemory.list``.)
LessonMatrix = tuple[np.ndarray, list[str], np.ndarray, list[str]]

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


#: How embeddings are stored, by both stores: float32, little-endian.
EMBEDDING_DTYPE = np.dtype("<f4")


def lesson_vector(embedding: np.ndarray) -> np.ndarray:
    """``embedding`` as the flat float32 vector a store keeps; rejects an empty or non-finite one."""
    v = np.ascontiguousarray(embedding, dtype=EMBEDDING_DTYPE).ravel()
    if not v.size or not np.isfinite(v).all():
        raise MemoryStoreError("a lesson needs a non-empty, finite embedding")
    return v


def lesson_matrix(rows: list[Any], dim: int | None) -> tuple[LessonMatrix, int]:
    """The matrix of ``(embedding bytes, tool, use, context)`` rows, and how many were skipped:
    rows not ``dim`` wide (any width agreeing with the first row when ``dim`` is None)."""
    width = dim if dim is not None else (len(rows[0][0]) // 4 if rows else 0)
    good = [r for r in rows if isinstance(r[0], bytes) and len(r[0]) == 4 * width]
    emb = (
        np.stack([np.frombuffer(r[0], dtype=EMBEDDING_DTYPE) for r in good]).astype(np.float32, copy=False)
        if good
        else np.zeros((0, width), dtype=np.float32)
    )
    return (emb, [r[1] for r in good], np.array([r[2] for r in good], dtype=bool), [r[3] for r in good]), len(
        rows
    ) - len(good)


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
    makes a :class:`routecore.memory_pg.PostgresMemory` (a subclass) instead."""

    def __new__(cls, path: str | Path | None = None, *, timeout: float = 5.0) -> ExperienceMemory:
        if cls is ExperienceMemory and is_postgres_url(path):
            from routecore.memory_pg import PostgresMemory

            return super().__new__(PostgresMemory)
        return super().__new__(cls)

    def __init__(self, path: str | Path | None = None, *, timeout: float = 5.0):
        if path is None:
            path = default_path()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise MemoryStoreError(f"cannot create {path.parent} for the memory store: {e}") from None
        self.path = str(path)
        self._lock = threading.Lock()
        self._cache: tuple[tuple[Any, ...], str, LessonMatrix] | None = None
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
                f"a lesson embedding for {model_id} is {v.size} wide, but that model's lessons are {width[0][0]} wide"
            )
        rows = self._run(
            "INSERT INTO lessons (query, context, tool, use, model_id, embedding, created) VALUES (?,?,?,?,?,?,?) RETURNING id",
            (query, context, tool, int(use), model_id, v.tobytes(), time.time()),
        )
        return int(rows[0][0])

    def list(self) -> list[Lesson]:
        rows = self._run("SELECT id, query, context, tool, use, model_id, created FROM lessons ORDER BY id")
        return [Lesson(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in rows]

    def delete(self, lesson_id: int) -> bool:
        """Delete one lesson; False when it did not exist."""
        return bool(self._run("DELETE FROM lessons WHERE id = ? RETURNING id", (lesson_id,)))

    def matrix(self, model_id: str, dim: int | None = None) -> LessonMatrix:
        """(embeddings [n, d], tools, use flags, contexts) of lessons for ``model_id``,
        re-read only when the database changed (also by other processes).

        Rows whose embedding is not ``dim`` wide (any width agreeing with the first
        row when ``dim`` is None) are skipped; ``skipped`` counts them."""
        with self._lock:
            try:
                version = self._db.execute("PRAGMA data_version").fetchone()[0]
                count = self._db.execute("SELECT count(*), coalesce(max(id), 0) FROM lessons").fetchone()
            except sqlite3.Error as e:
                raise MemoryStoreError(f"memory store {self.path}: {e}") from None
        key = (version, count, dim)
        if self._cache and self._cache[0] == key and self._cache[1] == model_id:
            return self._cache[2]
        rows = self._run(
            "SELECT embedding, tool, use, context FROM lessons WHERE model_id = ? ORDER BY id", (model_id,)
        )
        out, self.skipped = lesson_matrix(rows, dim)
        self._cache = (key, model_id, out)
        return out

    def close(self) -> None:
        self._db.close()
