"""Experience memory: persistence, concurrent writers, damaged files."""

from __future__ import annotations

import sqlite3
import threading

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
