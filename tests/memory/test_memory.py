"""Experience memory: persistence, concurrent writers, damaged files."""

from __future__ import annotations

import sqlite3
import threading
import time

import numpy as np
import pytest

from routecore.errors import MemoryStoreError
from routecore.memory.memory import ExperienceMemory


def emb(i):
    v = np.zeros(4, np.float32)
    v[i % 4] = 1
    return v


def test_survives_restart(tmp_path):
    p = tmp_path / "m.sqlite"
    m = ExperienceMemory(p)
    a = m.record("query logs", "ha_get_logs", use=False, embedding=emb(0), model_id="m1", context="system")
    m.close()
    m2 = ExperienceMemory(p)
    [l] = m2.list()
    assert (l.id, l.tool, l.use, l.context) == (a, "ha_get_logs", False, "system")
    e, tools, use, ctx = m2.matrix("m1")
    assert e.shape == (1, 4) and tools == ["ha_get_logs"] and not use[0]
    assert m2.matrix("other")[0].shape[0] == 0


def test_lessons_persist_in_a_file_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTECORE_HOME", str(tmp_path / "home"))
    m = ExperienceMemory()
    m.record("q", "t", use=True, embedding=emb(0), model_id="m")
    m.close()
    assert m.path == str(tmp_path / "home" / "lessons.sqlite")
    assert [l.tool for l in ExperienceMemory().list()] == ["t"]
    monkeypatch.delenv("ROUTECORE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert ExperienceMemory().path == str(tmp_path / "data" / "routecore" / "lessons.sqlite")
    assert ExperienceMemory(":memory:").list() == []


def test_concurrent_writers_in_threads_and_connections(tmp_path):
    p = tmp_path / "m.sqlite"
    stores = [ExperienceMemory(p) for _ in range(4)]

    def write(s, k):
        for i in range(25):
            s.record(f"q{k}-{i}", "t", use=True, embedding=emb(i), model_id="m")

    ts = [threading.Thread(target=write, args=(s, k)) for k, s in enumerate(stores)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert len(ExperienceMemory(p).list()) == 100
    # another connection's write is seen by the cached matrix
    stores[0].matrix("m")
    stores[1].record("late", "t", use=True, embedding=emb(1), model_id="m")
    assert stores[0].matrix("m")[0].shape[0] == 101


def test_corrupt_file_is_a_typed_error(tmp_path):
    p = tmp_path / "m.sqlite"
    p.write_bytes(b"this is not a database" * 100)
    with pytest.raises(MemoryStoreError):
        ExperienceMemory(p)


def test_locked_database_is_a_typed_error(tmp_path):
    p = tmp_path / "m.sqlite"
    ExperienceMemory(p).close()
    holder = sqlite3.connect(p, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    m = ExperienceMemory.__new__(ExperienceMemory)
    try:
        with pytest.raises(MemoryStoreError):
            ExperienceMemory(p, timeout=0.1).record("q", "t", use=True, embedding=emb(0), model_id="m")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    del m


def test_crash_mid_write_keeps_committed_lessons(tmp_path):
    """A writer killed inside a transaction loses only that transaction."""
    import subprocess
    import sys

    p = tmp_path / "m.sqlite"
    m = ExperienceMemory(p)
    m.record("kept", "t", use=True, embedding=emb(0), model_id="m")
    code = (
        "import sqlite3, os\n"
        f"c = sqlite3.connect({str(p)!r}, isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        'c.execute("INSERT INTO lessons (query, context, tool, use, model_id, embedding, created) '
        "VALUES ('lost','', 't', 1, 'm', x'00', 0)\")\n"
        "os._exit(9)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=False)
    assert [l.query for l in ExperienceMemory(p).list()] == ["kept"]


def test_wrong_width_lessons_are_refused_or_skipped(tmp_path):
    """A lesson with a wrong-width embedding made every later tools() fail in every process."""
    m = ExperienceMemory(tmp_path / "l.sqlite")
    m.record("a", "t", use=True, embedding=emb(0), model_id="m1")
    with pytest.raises(MemoryStoreError, match="wide"):
        m.record("b", "t", use=True, embedding=np.ones(7, np.float32), model_id="m1")
    with pytest.raises(MemoryStoreError, match="finite"):
        m.record("b", "t", use=True, embedding=np.full(8, np.nan, np.float32), model_id="m1")
    # A row written by another writer with another width is skipped on read, and counted.
    db = sqlite3.connect(tmp_path / "l.sqlite")
    db.execute(
        "INSERT INTO lessons (query, context, tool, use, model_id, embedding, created) "
        "VALUES ('x', '', 't', 1, 'm1', ?, 0)",
        (np.ones(3, np.float32).tobytes(),),
    )
    db.commit()
    e, tools, use, ctx = m.matrix("m1", len(emb(0)))
    assert e.shape == (1, len(emb(0))) and tools == ["t"] and m.skipped == 1


def traced(monkeypatch) -> list[str]:
    """The statements run by every SQLite connection opened from now on."""
    statements: list[str] = []
    connect = sqlite3.connect

    def traced_connect(*args, **kwargs):
        db = connect(*args, **kwargs)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    return statements


def rows_read(statements: list[str]) -> list[tuple[int, int]]:
    """(lo, hi) of each read of lesson rows (``id > lo AND id <= hi``)."""
    out = []
    for s in statements:
        if s.startswith("SELECT id, model_id, embedding"):
            lo, hi = s.split("id > ")[1].split(" ORDER")[0].split(" AND id <= ")
            out.append((int(lo), int(hi)))
    return out


def test_readers_ask_nothing_while_nothing_changes_and_then_read_the_new_rows(tmp_path, monkeypatch):
    """Issue 36 §6: every tools() call asked SQLite whether a write happened (a PRAGMA, the GIL
    handed over), then counted the table (a scan) after each one."""
    sql = traced(monkeypatch)
    m = ExperienceMemory(tmp_path / "m.sqlite")
    for i in range(50):
        m.record(f"q{i}", "t", use=True, embedding=emb(i), model_id="m")
    assert len(m.lessons("m", 4).rows) == 4  # 50 lessons, 4 distinct embeddings: 4 groups
    sql.clear()
    for _ in range(100):
        m.lessons("m", 4)
    assert sql == []
    m.record("new", "u", use=False, embedding=emb(0), model_id="m")
    for _ in range(100):
        assert m.lessons("m", 4).verdicts(emb(0), 0.9) == {"t": True, "u": False}
    assert rows_read(sql) == [(50, 51)] and not any("count(*)" in s for s in sql)


def test_readers_beside_a_writer_read_each_lesson_once(tmp_path, monkeypatch):
    """Readers whose head was read before another reader's grew the lessons reloaded them all, and
    readers queued to read each write; now one reads it and the others take the lessons held."""
    sql = traced(monkeypatch)
    m = ExperienceMemory(tmp_path / "m.sqlite")
    m.record("q", "t", use=True, embedding=emb(0), model_id="m")
    m.lessons("m", 4)
    done, errors = threading.Event(), []

    def read() -> None:
        try:
            while not done.is_set():
                got = m.lessons("m", 4).matrix()[1]
                assert got == ["t"] * len(got)  # a prefix: nothing lost or reordered
                time.sleep(0)  # the GIL, for the writer (a loop of Python alone never gives it up)
        except BaseException as e:  # noqa: BLE001 - reported to the test
            errors.append(e)

    readers = [threading.Thread(target=read) for _ in range(8)]
    [r.start() for r in readers]
    for i in range(300):
        m.record(f"q{i}", "t", use=True, embedding=emb(i), model_id="m")
        m.lessons("m", 4)  # the writer's own reads too
    done.set()
    [r.join() for r in readers]
    assert not errors, errors[0]
    reads = rows_read(sql)
    assert reads[0] == (0, 1) and all(lo > 0 for lo, _ in reads[1:])  # never everything again
    assert sum(hi - lo for lo, hi in reads) == 301  # each row read once
    assert len(m.lessons("m", 4).matrix()[1]) == 301


def test_a_write_reaches_its_thread_at_once_and_others_after_max_lag(tmp_path):
    p = tmp_path / "m.sqlite"
    m, other = ExperienceMemory(p), ExperienceMemory(p)  # two stores of this process on one file
    m.max_lag = 60.0
    a = m.record("a", "t", use=True, embedding=emb(0), model_id="m")
    assert len(m.lessons("m").rows) == 1
    b = other.record("b", "u", use=True, embedding=emb(0), model_id="m")  # this thread, another store
    assert len(m.lessons("m").rows) == 2
    assert other.delete(b) and len(m.lessons("m").rows) == 1  # a deletion too
    t = threading.Thread(
        target=other.record, args=("c", "v"), kwargs=dict(use=True, embedding=emb(1), model_id="m")
    )
    t.start()
    t.join()
    db = sqlite3.connect(p)  # another process
    db.execute(
        "INSERT INTO lessons (query, context, tool, use, model_id, embedding, created) "
        "VALUES ('d', '', 'w', 1, 'm', ?, 0)",
        (emb(2).tobytes(),),
    )
    db.commit()
    assert len(m.lessons("m").rows) == 1  # not within max_lag of the last read
    m.max_lag = 0.0
    assert m.lessons("m").matrix()[1] == ["t", "v", "w"]
    assert m.delete(a) and m.lessons("m").matrix()[1] == ["v", "w"]


def test_the_count_readers_check_follows_every_writer(tmp_path):
    """A store made before the count existed gets it at open; inserts and deletions by any
    connection keep it; a count gone wrong is noticed and the rows are counted instead."""
    p = tmp_path / "m.sqlite"
    from routecore.memory.memory import SCHEMA

    db = sqlite3.connect(p, isolation_level=None)
    db.executescript(SCHEMA)  # as an earlier version made it: no count, no triggers
    for i in range(5):
        db.execute(
            "INSERT INTO lessons (query, context, tool, use, model_id, embedding, created) "
            "VALUES (?, '', 't', 1, 'm', ?, 0)",
            (f"q{i}", emb(i).tobytes()),
        )
    m = ExperienceMemory(p)
    m.max_lag = 0.0
    assert len(m.lessons("m", 4).matrix()[1]) == 5
    db.execute("DELETE FROM lessons WHERE query = 'q1'")  # another process, another version
    assert len(m.lessons("m", 4).matrix()[1]) == 4
    assert db.execute("SELECT n FROM lesson_count").fetchone()[0] == 4
    db.execute("UPDATE lesson_count SET n = 40")  # gone wrong
    assert len(m.lessons("m", 4).matrix()[1]) == 4
    m.record("q", "t", use=True, embedding=emb(0), model_id="m")
    assert len(m.lessons("m", 4).matrix()[1]) == 5
