"""The lesson matrix a store hands to ``tools()``, grown in place as lessons are added (issue 36 §6).

Every ``tools()`` call reads the lessons of its model. Re-reading and re-stacking all of them
after each write made one thread recording lessons starve every reader (15 readers made
about 107k calls in 10 s alone, 8.7k beside one writer). Lesson ids only grow (SQLite
``AUTOINCREMENT``, a PostgreSQL identity) and lessons are never edited, so a store can tell
"rows were only added" from "rows were deleted": the count grew by exactly the number of rows
past the largest id it had read. Then only those rows are read and appended to buffers with
room to grow (amortised O(1) a row); anything else reloads everything.

A matrix handed out is never written to afterwards: appends go past its end, and a buffer that
must grow is copied, so a reader keeps a consistent snapshot without a lock.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

#: ``ExperienceMemory.matrix()``: (embeddings [n, d], tools, use flags, contexts).
LessonMatrix = tuple[np.ndarray, list[str], np.ndarray, list[str]]
#: How embeddings are stored, by both stores: float32, little-endian.
EMBEDDING_DTYPE = np.dtype("<f4")

#: ``(count, largest id)`` of a store's table, over every model.
Head = tuple[int, int]


def store_key(encoder: Any) -> str:
    """What a lesson store files an embedding under: the encoder's ``model_id`` (its ONNX file) and,
    when it has one, its ``files_id`` (tokenizer and config), so that an edited ``config.json`` or a
    swapped ``tokenizer.json`` never reads the lessons embedded before (issue 36)."""
    model_id = str(encoder.model_id)
    files_id = getattr(encoder, "files_id", None)
    return f"{model_id}+{files_id}" if files_id else model_id


def key_and_legacy(key: str) -> tuple[str, str]:
    """``key`` and the bare model id rows written before :func:`store_key` named the files carry
    (read as before: their tokenizer and config are unknown)."""
    return key, key.split("+", 1)[0]


#: A row as :class:`LessonCache` reads it: ``(id, model_id, embedding bytes, tool, use, context)``.
Row = tuple[int, str, bytes, str, Any, str]


class LessonCache:
    """The lessons of one ``model_id`` whose embeddings are ``dim`` wide (any width agreeing
    with the first row when ``dim`` is None), with ``skipped`` counting the others."""

    def __init__(self, model_id: str, dim: int | None) -> None:
        self.model_id, self.dim = model_id, dim
        self.skipped = 0
        self._n = 0
        self._emb = np.zeros((0, dim or 0), np.float32)
        self._use = np.zeros(0, bool)
        self._tools: list[str] = []
        self._contexts: list[str] = []
        #: The head last read and its matrix, swapped as one (readers take it without the lock).
        self._state: tuple[Head, LessonMatrix] | None = None
        self._lock = threading.Lock()  # one reader grows the buffers at a time

    @property
    def head(self) -> Head | None:
        """The head of the matrix last handed out."""
        state = self._state
        return state[0] if state is not None else None

    def matrix(self, head: Head, rows_between: Callable[[int, int], Sequence[Row]]) -> LessonMatrix:
        """The matrix at ``head`` (read in one statement); ``rows_between(lo, hi)`` reads every
        row (all models) with ``lo < id <= hi``, in id order."""
        state = self._state
        if state is not None and state[0] == head:
            return state[1]
        with self._lock:
            return self._grow(head, rows_between)

    def _grow(self, head: Head, rows_between: Callable[[int, int], Sequence[Row]]) -> LessonMatrix:
        if self._state is not None and self._state[0] == head:  # another reader got there first
            return self._state[1]
        old = self._state[0] if self._state is not None else None
        rows = rows_between(old[1], head[1]) if old is not None and head[1] >= old[1] else None
        if rows is None or old is None or old[0] + len(rows) != head[0]:  # not only additions: reload
            self._reset()
            rows = rows_between(0, head[1])
            if len(rows) != head[0]:  # a change between the head and the rows: read again next call
                head = (-1, -1)
        keys = key_and_legacy(self.model_id)
        self._append([r for r in rows if r[1] in keys])
        n = self._n
        view = (self._emb[:n], self._tools[:n], self._use[:n], self._contexts[:n])
        self._state = (head, view)
        return view

    def _reset(self) -> None:
        self._n, self.skipped = 0, 0
        self._emb = np.zeros((0, self.dim or 0), np.float32)
        self._use = np.zeros(0, bool)
        self._tools, self._contexts = [], []

    def _append(self, rows: list[Row]) -> None:
        if self.dim is None and self._n == 0 and rows:
            self.dim = len(rows[0][2]) // 4
        width = self.dim or 0
        good = [
            r for r in rows if isinstance(r[2], (bytes, bytearray, memoryview)) and len(r[2]) == 4 * width
        ]
        self.skipped += len(rows) - len(good)
        if not good:
            return
        need = self._n + len(good)
        if need > len(self._emb) or self._emb.shape[1] != width:
            cap = max(need, 2 * len(self._emb), 64)
            emb, use = np.zeros((cap, width), np.float32), np.zeros(cap, bool)
            if self._n:
                emb[: self._n], use[: self._n] = self._emb[: self._n], self._use[: self._n]
            self._emb, self._use = emb, use  # a new buffer: views handed out keep the old one
        block = np.frombuffer(b"".join(bytes(r[2]) for r in good), dtype=EMBEDDING_DTYPE).reshape(-1, width)
        self._emb[self._n : need] = block
        self._use[self._n : need] = [bool(r[4]) for r in good]
        self._tools += [r[3] for r in good]
        self._contexts += [r[5] for r in good]
        self._n = need
