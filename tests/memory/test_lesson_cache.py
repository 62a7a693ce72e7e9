"""The lesson matrix grown in place (routecore.memory.lesson_cache; issue 36 §6): the same matrix as a
full read after any sequence of additions and deletions, only new rows read after additions,
snapshots that later additions never change, and readers beside a writer on a real store."""

from __future__ import annotations

import threading
import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore.memory.lesson_cache import LessonCache
from routecore.memory.memory import ExperienceMemory


class Table:
    """A lessons table as a store holds it: ids only grow, rows are added or deleted."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str, bytes, str, bool, str]] = []
        self.next_id = 1
        self.reads: list[tuple[int, int]] = []

    def add(self, model: str, width: int = 4) -> None:
        v = np.full(width, self.next_id, np.float32).tobytes()
        self.rows.append((self.next_id, model, v, f"tool{self.next_id}", self.next_id % 2 == 0, ""))
        self.next_id += 1

    def head(self) -> tuple[int, int]:
        return len(self.rows), max((r[0] for r in self.rows), default=0)

    def between(self, lo: int, hi: int) -> list[tuple[int, str, bytes, str, bool, str]]:
        self.reads.append((lo, hi))
        return [r for r in self.rows if lo < r[0] <= hi]


def same(a, b) -> None:
    np.testing.assert_array_equal(a[0], b[0])
    assert list(a[1]) == list(b[1]) and list(a[2]) == list(b[2]) and list(a[3]) == list(b[3])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(["a", "b", "w"]), st.integers(0, 30)), max_size=40))
def test_the_grown_matrix_is_the_full_read_after_any_changes(ops):
    t, cache = Table(), LessonCache("a", 4)
    for op in ops:
        if op == "w":
            t.add("a", width=8)  # another width: skipped
        elif isinstance(op, str):
            t.add(op)
        elif t.rows:
            del t.rows[op % len(t.rows)]
        got = cache.matrix(t.head(), t.between)
        fresh = LessonCache("a", 4)
        same(got, fresh.matrix(t.head(), t.between))
        assert cache.skipped == fresh.skipped
        assert got[0].shape[1] == 4 and all(tool.startswith("tool") for tool in got[1])


def test_after_additions_only_the_new_rows_are_read_and_old_snapshots_stay():
    t, cache = Table(), LessonCache("a", 4)
    for _ in range(3):
        t.add("a")
    first = cache.matrix(t.head(), t.between)
    snapshot = (first[0].copy(), list(first[1]))
    for _ in range(100):  # past the buffer's first capacity: it grows
        t.add("a")
        t.add("b")
        cache.matrix(t.head(), t.between)
    assert t.reads[0] == (0, 3) and all(hi - lo == 2 for lo, hi in t.reads[1:])
    np.testing.assert_array_equal(first[0], snapshot[0])
    assert list(first[1]) == snapshot[1] and len(cache.matrix(t.head(), t.between)[1]) == 103
    del t.rows[0]
    t.add("a")
    assert len(cache.matrix(t.head(), t.between)[1]) == 103 and t.reads[-1][0] == 0  # a deletion: read again


def test_readers_beside_a_writer_see_every_lesson_in_order(tmp_path):
    mem = ExperienceMemory(tmp_path / "lessons.sqlite")
    seen: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                emb, tools, use, _ = mem.matrix("m", 4)
                assert emb.shape == (len(tools), 4) and len(use) == len(tools)
                assert tools == [f"t{i}" for i in range(len(tools))]  # a prefix: nothing lost or reordered
                seen.append(len(tools))
                # A loop of Python alone never gives the GIL up (a call with nothing new asks SQLite
                # nothing): the writer would wait a switch interval (5 ms) at each SQLite step.
                time.sleep(0)
        except BaseException as e:  # noqa: BLE001 - reported to the test
            errors.append(e)

    readers = [threading.Thread(target=read) for _ in range(4)]
    for r in readers:
        r.start()
    for i in range(200):
        mem.record(f"q{i}", f"t{i}", use=True, embedding=np.full(4, i, np.float32), model_id="m")
    done.set()
    for r in readers:
        r.join()
    assert not errors, errors[0]
    assert len(mem.matrix("m", 4)[1]) == 200 and seen


def test_lessons_are_filed_under_the_tokenizer_and_config_too(tmp_path):
    """A lesson embedded under one tokenizer or config (``Encoder.files_id``) is not applied under
    another of the same ONNX file (issue 36 §1); a row written before files were named applies."""
    import sqlite3

    from test_tools import router

    from stubs import mix

    mem = ExperienceMemory(tmp_path / "m.sqlite")
    r = router(memory=mem, q=mix(a0=0.6, a3=0.55))
    r.encoder.files_id = "tok-a"
    r.record_lesson("q", "ha_get_logs", use=False)
    assert "ha_get_logs" not in r.tools("q").names
    r.encoder.files_id = "tok-b"  # config.json edited, or tokenizer.json swapped
    assert "ha_get_logs" in r.tools("q").names
    r.encoder.files_id = "tok-a"
    assert "ha_get_logs" not in r.tools("q").names

    db = sqlite3.connect(tmp_path / "m.sqlite")  # the row as an earlier version wrote it: the bare model id
    db.execute("UPDATE lessons SET model_id = ?", (r.encoder.model_id,))
    db.commit()
    db.close()
    r.encoder.files_id = "tok-b"
    assert "ha_get_logs" not in r.tools("q").names


def unit(i: int, width: int = 4) -> np.ndarray:
    v = np.zeros(width, np.float32)
    v[i % width] = 1
    return v


def verdicts_of(matrix, q: np.ndarray, similarity: float, active: tuple[str, ...]) -> dict[str, bool]:
    """A verdict per tool from every lesson, one by one (what tools() did before lessons were grouped)."""
    emb, tools, use, contexts = matrix
    out: dict[str, bool] = {}
    for i in np.flatnonzero(emb @ q >= similarity):
        if not contexts[i] or contexts[i] in active:
            out[tools[i]] = out.get(tools[i], True) and bool(use[i])
    return out


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans(), st.sampled_from(["", "ha", "sys"])),
        max_size=60,
    ),
    st.sampled_from([(), ("",), ("ha",), ("ha", "sys"), ("other", "sys")]),
)
def test_grouped_lessons_give_every_lessons_verdicts_and_snapshots_keep_theirs(lessons, context):
    """However many lessons share an embedding, a tool and a context, each embedding is scanned once
    and the groups' verdicts are those of the lessons one by one (a "do not use" wins), those of
    every active context (``context``: the caller's domains) and of none; a snapshot keeps its
    verdicts when a later "do not use" joins one of its groups."""
    t, cache = Table(), LessonCache("a", 4)
    snapshots = []
    for v, tool, use, ctx in lessons:
        t.rows.append((t.next_id, "a", unit(v).tobytes(), f"t{tool}", use, ctx))
        t.next_id += 1
        got = cache.lessons(t.head(), t.between)
        assert len(got.embeddings) == len({r[2] for r in t.rows})
        snapshots.append((got, [got.verdicts(unit(q), 0.9, context) for q in range(4)]))
    for got, verdicts in snapshots:
        assert [got.verdicts(unit(q), 0.9, context) for q in range(4)] == verdicts
        assert verdicts == [verdicts_of(got.matrix(), unit(q), 0.9, context) for q in range(4)]


def test_one_reader_reads_the_new_rows_and_the_others_do_not_wait():
    """Readers that find another one reading take the lessons held (unless told to wait): a write
    is read once, not once by each reader queued behind the other."""
    t, cache = Table(), LessonCache("a", 4)
    t.add("a")
    cache.lessons(t.head(), t.between)
    t.add("a")
    inside, release = threading.Event(), threading.Event()

    def slow_head() -> tuple[int, int]:
        inside.set()
        release.wait(10)
        return t.head()

    reader = threading.Thread(target=cache.refresh, args=(slow_head, t.between))
    reader.start()
    inside.wait(10)
    held = cache.refresh(t.head, t.between, wait=False)  # another reader is reading: no wait
    assert len(held.rows) == 1
    release.set()
    reader.join()
    assert len(cache.refresh(t.head, t.between, wait=False).rows) == 2
    assert t.reads == [(0, 1), (1, 2)]  # each row read once
