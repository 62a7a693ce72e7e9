"""The lessons a store hands to ``tools()``, grown in place as lessons are added (issue 36 §6).

Every ``tools()`` call reads the lessons of its model. Re-reading and re-stacking all of them
after each write made one thread recording lessons starve every reader (15 readers made
about 107k calls in 10 s alone, 8.7k beside one writer). Lesson ids only grow (SQLite
``AUTOINCREMENT``, a PostgreSQL identity) and lessons are never edited, so a store can tell
"rows were only added" from "rows were deleted": the count grew by exactly the number of rows
past the largest id it had read. Then only those rows are read and appended to buffers with
room to grow (amortised O(1) a row); anything else reloads everything.

What a call scans grows with the distinct embeddings, not with the lessons: each embedding is
kept once (lessons about a query served again and again share one), and lessons that share an
embedding, a tool and a context form one group, whose verdict is "use" only while every one of
them says so (a "do not use" wins). A writer recording lessons on served queries back to back
added thousands of rows a second, each of which every call scanned and looped over.

What is handed out is never written to afterwards: appends go past its end, a buffer that must
grow is copied, and a group's verdict turning to "do not use" copies the verdicts first, so a
reader keeps a consistent snapshot without a lock.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from routecore import _native

#: ``ExperienceMemory.matrix()``: (embeddings [n, d], tools, use flags, contexts), a row a lesson.
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


@dataclass(frozen=True)
class Lessons:
    """The lessons of one model at one head, as ``tools()`` scores them.

    ``embeddings`` [u, d] holds each distinct embedding once. A group is the lessons sharing an
    embedding, a tool and a context: ``rows`` (into ``embeddings``), ``tools`` (codes into
    ``tool_names``), ``contexts`` (codes of ``context_codes``, ``""`` being 0) and ``use`` (every
    lesson of the group says "use") have one entry a group. :meth:`matrix` lists the lessons."""

    embeddings: np.ndarray
    rows: np.ndarray
    tools: np.ndarray
    contexts: np.ndarray
    use: np.ndarray
    tool_names: Sequence[str]
    context_codes: Mapping[str, int]
    #: A row a lesson: (its row in ``embeddings``, tools, use flags, contexts).
    lessons: tuple[np.ndarray, Sequence[str], np.ndarray, Sequence[str]]

    def verdicts(self, q: np.ndarray, similarity: float, contexts: Sequence[str] = ()) -> dict[str, bool]:
        """Tool -> the verdict of the lessons whose embedding has a dot product of at least
        ``similarity`` with ``q`` and whose context is empty or one of ``contexts`` (the caller's
        active domains): "use" (True) while every one of them says so, "do not use" (False) once
        one does."""
        if not len(self.rows) or self.embeddings.shape[1] != q.shape[0]:
            return {}
        # Not a BLAS call: OpenBLAS threads a product this size, and beside many calling threads
        # its pool serialised them (3,000 lessons, 15 readers: 446 calls in 10 s against 18,882
        # with one BLAS thread; benches/lesson_writer.py). The native kernel, on this thread (the
        # GIL let go, as NumPy's einsum did): 3,000 x 384 in 0.19 ms against einsum's 0.30.
        near = _native.dot_rows(self.embeddings, np.ascontiguousarray(q, np.float32)) >= similarity
        if not near.any():
            return {}
        hit = near[self.rows]
        if len(self.context_codes) > 1:  # a lesson has a context ("" is always there)
            contexts = (contexts,) if isinstance(contexts, str) else contexts
            codes = [c for c in (self.context_codes.get(x) for x in contexts) if c]
            hit &= (self.contexts == 0) | np.isin(self.contexts, codes) if codes else self.contexts == 0
        groups = np.flatnonzero(hit)
        tools, use = self.tools[groups].tolist(), self.use[groups].tolist()
        banned = {c for c, u in zip(tools, use) if not u}
        return {self.tool_names[c]: c not in banned for c in set(tools)}

    def matrix(self) -> LessonMatrix:
        """A row a lesson, in id order: (embeddings [n, d], tools, use flags, contexts) (copies)."""
        rows, tools, use, contexts = self.lessons
        n = len(rows)
        return self.embeddings[rows], list(tools[:n]), use.copy(), list(contexts[:n])


def _grown(buf: np.ndarray, n: int, need: int) -> np.ndarray:
    """``buf`` when it holds ``need`` entries, else a copy of its first ``n`` with room to grow (views
    handed out keep the old buffer)."""
    if need <= len(buf):
        return buf
    out = np.zeros((max(need, 2 * len(buf), 64), *buf.shape[1:]), buf.dtype)
    out[:n] = buf[:n]
    return out


class LessonCache:
    """The lessons of one ``model_id`` whose embeddings are ``dim`` wide (any width agreeing
    with the first row when ``dim`` is None), with ``skipped`` counting the others."""

    def __init__(self, model_id: str, dim: int | None) -> None:
        self.model_id, self.dim = model_id, dim
        self._lock = threading.Lock()  # one reader grows the buffers at a time
        #: The head last read and its lessons, swapped as one (readers take it without the lock).
        self._state: tuple[Head, Lessons] | None = None
        self._reset()

    def _reset(self) -> None:
        width = self.dim or 0
        self.skipped = 0
        self._u = self._g = self._n = 0  # distinct embeddings, groups, lessons
        self._emb = np.zeros((0, width), np.float32)
        self._row_of: dict[bytes, int] = {}  # an embedding's digest -> its row
        self._group_of: dict[tuple[int, int, int], int] = {}  # (row, tool, context) -> group
        self._g_row, self._g_tool, self._g_ctx = (np.zeros(0, np.int32) for _ in range(3))
        self._g_use = np.zeros(0, bool)
        self._published = 0  # groups handed out: their verdicts are copied before they change
        self._tool_names: list[str] = []
        self._tool_code: dict[str, int] = {}
        self._ctx_code: dict[str, int] = {"": 0}
        self._l_row, self._l_use = np.zeros(0, np.int32), np.zeros(0, bool)
        self._l_tools: list[str] = []
        self._l_contexts: list[str] = []

    @property
    def head(self) -> Head | None:
        """The head of the lessons last handed out."""
        state = self._state
        return state[0] if state is not None else None

    @property
    def held(self) -> tuple[Head, Lessons] | None:
        """The lessons last handed out, with their head."""
        return self._state

    def lessons(self, head: Head, rows_between: Callable[[int, int], Sequence[Row]]) -> Lessons:
        """The lessons at ``head`` (read in one statement); ``rows_between(lo, hi)`` reads every
        row (all models) with ``lo < id <= hi``, in id order."""
        state = self._state
        if state is not None and state[0] == head:
            return state[1]
        with self._lock:
            return self._grow(head, rows_between)

    def refresh(
        self,
        read_head: Callable[[], Head],
        rows_between: Callable[[int, int], Sequence[Row]],
        wait: bool = True,
    ) -> Lessons:
        """The lessons at the head ``read_head()`` reads, one reader at a time (a head read outside
        that turn could be older than the lessons held, and reload them all). Unless ``wait``, a
        reader that finds another one reading gets the lessons held instead of waiting: with lessons
        written back to back, readers do not queue one behind the other to read each one."""
        state = self._state
        if not self._lock.acquire(blocking=False):
            if not wait and state is not None and state[0][0] >= 0:
                return state[1]
            self._lock.acquire()
        try:
            return self._grow(read_head(), rows_between)
        finally:
            self._lock.release()

    def matrix(self, head: Head, rows_between: Callable[[int, int], Sequence[Row]]) -> LessonMatrix:
        """:meth:`lessons`, a row a lesson (:meth:`Lessons.matrix`)."""
        return self.lessons(head, rows_between).matrix()

    def _grow(self, head: Head, rows_between: Callable[[int, int], Sequence[Row]]) -> Lessons:
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
        u, g, n = self._u, self._g, self._n
        out = Lessons(
            self._emb[:u],
            self._g_row[:g],
            self._g_tool[:g],
            self._g_ctx[:g],
            self._g_use[:g],
            self._tool_names,
            self._ctx_code,
            (self._l_row[:n], self._l_tools, self._l_use[:n], self._l_contexts),
        )
        self._published = g
        self._state = (head, out)
        return out

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
        if self._emb.shape[1] != width:
            self._emb = np.zeros((0, width), np.float32)
        need = self._n + len(good)
        self._l_row, self._l_use = _grown(self._l_row, self._n, need), _grown(self._l_use, self._n, need)
        for r in good:
            row = self._row(bytes(r[2]))
            tool = self._tool_code.setdefault(r[3], len(self._tool_names))
            if tool == len(self._tool_names):
                self._tool_names.append(r[3])
            ctx = self._ctx_code.setdefault(r[5], len(self._ctx_code))
            self._group(row, tool, ctx, bool(r[4]))
            self._l_row[self._n], self._l_use[self._n] = row, bool(r[4])
            self._l_tools.append(r[3])
            self._l_contexts.append(r[5])
            self._n += 1

    def _row(self, data: bytes) -> int:
        """The row of embedding ``data``, added when it is new."""
        digest = hashlib.blake2b(data, digest_size=16).digest()
        row = self._row_of.get(digest)
        if row is not None and self._emb[row].tobytes() == data:
            return row
        self._emb = _grown(self._emb, self._u, self._u + 1)
        self._emb[self._u] = np.frombuffer(data, dtype=EMBEDDING_DTYPE)
        self._row_of.setdefault(digest, self._u)
        self._u += 1
        return self._u - 1

    def _group(self, row: int, tool: int, ctx: int, use: bool) -> None:
        """Count a lesson in its group (one verdict: "use" while every lesson says so)."""
        g = self._group_of.get((row, tool, ctx))
        if g is not None:
            if not use and self._g_use[g]:
                if g < self._published:  # handed out: those verdicts stay as they were
                    self._g_use = self._g_use.copy()
                self._g_use[g] = False
            return
        g = self._group_of[(row, tool, ctx)] = self._g
        self._g_row, self._g_tool = _grown(self._g_row, g, g + 1), _grown(self._g_tool, g, g + 1)
        self._g_ctx, self._g_use = _grown(self._g_ctx, g, g + 1), _grown(self._g_use, g, g + 1)
        self._g_row[g], self._g_tool[g], self._g_ctx[g], self._g_use[g] = row, tool, ctx, use
        self._g += 1
