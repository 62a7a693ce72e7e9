"""Experience memory on PostgreSQL (issue 18), against a real server that these
tests start themselves (tests/pg_server.py): the same answers as SQLite, lessons
shared by replicas, writers and schema creators in several processes, a server
that goes away or hangs mid-run (typed error, the belt still built, reconnect),
schema versions. Under CI a missing server or psycopg fails; elsewhere it skips."""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

import pg_server
from conftest import missing
from routecore.errors import MemoryStoreError
from routecore.memory.memory import ExperienceMemory


def _missing(what: str) -> None:
    missing(f"{what}: the PostgreSQL lesson-store tests need it (see tests/pg_server.py)")


@pytest.fixture(scope="module")
def server():
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _missing("psycopg is not installed (pip install 'psycopg[binary]>=3.1')")
    if pg_server.find_bin_dir() is None:
        _missing("no PostgreSQL server binaries (initdb, pg_ctl, postgres)")
    s = pg_server.PgServer()
    yield s
    s.close()


@pytest.fixture
def url(server):
    """A fresh, empty database."""
    return server.create_database(f"t_{uuid.uuid4().hex[:12]}")


def sql(url, statement, args=None):
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as c:
        cur = c.execute(statement, args)
        return cur.fetchall() if cur.description else []


def emb(i, width=4):
    v = np.zeros(width, np.float32)
    v[i % width] = 1
    v[(i + 1) % width] = 0.5 + i / 100
    return v


LESSONS = [  # (query, tool, use, model, width, context)
    ("query logs", "ha_get_logs", False, "m1", 4, "system"),
    ("turn on", "ha_turn_on", True, "m1", 4, ""),
    ("disk full", "disk", True, "m2", 6, "ops"),
    ("restart", "restart_service", False, "m1", 4, ""),
    ("ünïcode ✓", "t", True, "m2", 6, "ctx 'quoted'"),
]


def test_same_lessons_same_answers_as_sqlite(url, tmp_path):
    lite, pg = ExperienceMemory(tmp_path / "l.sqlite"), ExperienceMemory(url, timeout=2)
    assert type(pg).__name__ == "PostgresMemory" and isinstance(pg, ExperienceMemory)
    ids = [
        [
            m.record(q, t, use=u, embedding=emb(i, w), model_id=mo, context=c)
            for i, (q, t, u, mo, w, c) in enumerate(LESSONS)
        ]
        for m in (lite, pg)
    ]
    assert ids[0] == ids[1] == [1, 2, 3, 4, 5]
    strip = lambda ls: [(l.id, l.query, l.context, l.tool, l.use, l.model_id) for l in ls]  # noqa: E731
    assert strip(lite.list()) == strip(pg.list())
    assert abs(pg.list()[0].created - time.time()) < 60

    def same(*args):
        a, b = lite.matrix(*args), pg.matrix(*args)
        assert (
            a[0].dtype == b[0].dtype == np.float32 and np.array_equal(a[0], b[0]) and a[0].shape == b[0].shape
        )
        assert a[1:2] == b[1:2] and a[3] == b[3] and np.array_equal(a[2], b[2]) and lite.skipped == pg.skipped
        return b

    e, tools, use, ctx = same("m1", 4)
    assert (
        e.shape == (3, 4)
        and tools == ["ha_get_logs", "ha_turn_on", "restart_service"]
        and list(use) == [False, True, False]
    )
    assert ctx == ["system", "", ""]
    same("m1", None), same("m2", 6), same("m2", None), same("other", 4), same("other", None)
    # the stored bytes are float32 little-endian, as in SQLite
    assert (
        sql(url, "SELECT embedding FROM routecore_lessons WHERE id = 1")[0][0]
        == emb(0).astype("<f4").tobytes()
    )

    # the same refusals, in the same words
    for m in (lite, pg):
        with pytest.raises(MemoryStoreError, match="is 7 wide, but that model's lessons are 4 wide"):
            m.record("b", "t", use=True, embedding=np.ones(7, np.float32), model_id="m1")
        with pytest.raises(MemoryStoreError, match="finite"):
            m.record("b", "t", use=True, embedding=np.full(4, np.nan, np.float32), model_id="m1")
    # a row of another width written behind the store's back is skipped and counted
    db = sqlite3.connect(tmp_path / "l.sqlite")
    db.execute(
        "INSERT INTO lessons (query, context, tool, use, model_id, embedding, created) "
        "VALUES ('x', '', 't', 1, 'm1', ?, 0)",
        (np.ones(3, np.float32).tobytes(),),
    )
    db.commit()
    sql(
        url,
        "INSERT INTO routecore_lessons (query, tool, use, model_id, embedding, created) "
        "VALUES ('x', 't', true, 'm1', %s, 0)",
        (np.ones(3, np.float32).tobytes(),),
    )
    assert same("m1", 4)[0].shape == (3, 4) and pg.skipped == 1
    for m in (lite, pg):
        assert m.delete(2) and not m.delete(2) and not m.delete(999)
    assert same("m1", 4)[1] == ["ha_get_logs", "restart_service"]

    # another connection's (another replica's) write is seen through the matrix cache
    other = ExperienceMemory(url)
    other.record("late", "disk", use=True, embedding=emb(9), model_id="m1")
    assert pg.matrix("m1", 4)[1] == ["ha_get_logs", "restart_service", "disk"]
    other.close()
    pg.close()
    with pytest.raises(MemoryStoreError, match="closed"):
        pg.matrix("m1", 4)
    with pytest.raises(MemoryStoreError, match="closed"):
        pg.record("q", "t", use=True, embedding=emb(0), model_id="m1")


def test_psycopg_only_for_a_url_and_no_password_in_messages():
    code = (
        "import sys, routecore, routecore.memory.memory, routecore.routers.router\n"
        "routecore.memory.memory.ExperienceMemory(':memory:').close()\n"
        "assert 'psycopg' not in sys.modules, 'psycopg imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    with socket.socket() as s:  # a port nobody listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(MemoryStoreError) as e:
        ExperienceMemory(f"postgresql://bob:s3cret@127.0.0.1:{port}/x?password=s3cret", timeout=2)
    assert "s3cret" not in str(e.value) and "bob:***@" in str(e.value)


def test_a_fresh_process_that_imports_only_the_sqlite_store_opens_a_url_on_postgres():
    # routecore.memory.memory imports no store subclass (no import circle): PostgresMemory declares
    # its URL schemes, and routecore.memory, which Python imports first, imports it.
    with socket.socket() as s:  # a port nobody listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = (
        "import sys\n"
        "from routecore.errors import MemoryStoreError\n"
        "from routecore.memory.memory import ExperienceMemory\n"
        "try:\n"
        "    ExperienceMemory(sys.argv[1], timeout=2)\n"
        "except MemoryStoreError as e:\n"
        "    print(e)\n"
    )
    url = f"POSTGRES://bob:s3cret@127.0.0.1:{port}/x"  # the scheme in any case
    out = subprocess.run(
        [sys.executable, "-c", code, url], capture_output=True, text=True, cwd="/", timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "bob:***@" in out.stdout and "s3cret" not in out.stdout  # PostgresMemory's redacted message


@pytest.mark.parametrize("url", ["postgresql://h/x?bogus=1", "postgresql://[::1/x", "postgres://%zz@h/x"])
def test_a_malformed_url_is_a_memory_store_error(url):
    # libpq's parser used to run outside the error handling: its ProgrammingError escaped.
    with pytest.raises(MemoryStoreError, match="memory store"):
        ExperienceMemory(url, timeout=2)


def test_a_server_that_never_answers_is_a_typed_error_in_bounded_time():
    """A listener that accepts no startup reply (a hung server): connect_timeout ends the wait, and the
    error says so (how long it waits is libpq's connect_timeout, not timed here: issue 35 §8)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        with pytest.raises(MemoryStoreError, match="timeout|timed out"):
            ExperienceMemory(f"postgresql://postgres@127.0.0.1:{s.getsockname()[1]}/x", timeout=2)


_QUERIES: dict = {}


def _router(memory):
    """The router of test_tools' lessons test; every replica encodes the same texts the same way."""
    from test_tools import TOOLS, VEC

    from routecore.routers.router import Router
    from stubs import StubEncoder, manual, mix

    if not _QUERIES:
        q = mix(a0=0.6, a3=0.55)  # mix() puts its remainder on a fresh axis: once for all replicas
        similar = q.copy()
        similar[5] += 0.05
        _QUERIES.update(q=q, similar=similar / np.linalg.norm(similar))
    return Router(tools=TOOLS, encoder=StubEncoder({**VEC, **_QUERIES}), policy=manual(), memory=memory)


def test_a_lesson_changes_every_replicas_later_belts(url):
    a, b = _router(ExperienceMemory(url)), _router(ExperienceMemory(url))  # two replicas, one shared store
    assert a.tools("similar").tools[1].name == "ha_get_logs" == b.tools("similar").tools[1].name
    lid = a.record_lesson("q", "ha_get_logs", use=False)
    assert "ha_get_logs" not in b.tools("similar").names
    assert not any(x.kind == "memory_error" for x in b.tools("similar").alerts)
    b.record_lesson("q", "disk", use=True)
    assert "disk" in a.tools("similar", top_k=2).names
    assert [l.tool for l in a.memory.list()] == ["ha_get_logs", "disk"]
    assert b.memory.delete(lid)
    assert "ha_get_logs" in a.tools("similar").names
    a.record_lesson("q", "ha_get_logs", use=False, context="ha")  # context-scoped
    assert "ha_get_logs" in b.tools("similar").names
    assert "ha_get_logs" not in b.tools("similar", context_domains=["ha"]).names


# -- several processes (spawned: each its own interpreter, psycopg and connections) ---------------


def _worker(task, url, k, barrier, out):
    """In a spawned process: wait for the others, then open the store (on a database
    without the schema: all create it at once) and, for "write", record 50 lessons.
    Puts (k, the lesson ids or "ok") or (k, the error) on ``out``."""
    try:
        barrier.wait(30)
        m = ExperienceMemory(url)
        got = (
            [
                m.record(f"q{k}-{i}", f"tool{k}", use=bool(i % 2), embedding=emb(i, 8), model_id="m")
                for i in range(50)
            ]
            if task == "write"
            else "ok"
        )
        m.close()
    except Exception as e:  # noqa: BLE001 - reported to the test
        got = f"{type(e).__name__}: {e}"
    out.put((k, got))


def _processes(n, task, url):
    ctx = multiprocessing.get_context("spawn")
    barrier, out = ctx.Barrier(n), ctx.Queue()
    ps = [ctx.Process(target=_worker, args=(task, url, k, barrier, out)) for k in range(n)]
    [p.start() for p in ps]
    got = dict(out.get(timeout=60) for _ in ps)
    [p.join(30) for p in ps]
    assert [p.exitcode for p in ps] == [0] * n
    return got


def test_four_processes_write_fifty_lessons_each(url):
    got = _processes(4, "write", url)
    assert all(isinstance(v, list) for v in got.values()), got
    ids = sorted(i for v in got.values() for i in v)
    assert len(ids) == len(set(ids)) == 200
    m = ExperienceMemory(url)
    lessons = m.list()
    assert sorted(l.id for l in lessons) == ids
    assert sorted(l.query for l in lessons) == sorted(f"q{k}-{i}" for k in range(4) for i in range(50))
    for k, mine in got.items():  # each writer's ids name its own lessons, in its order
        assert [l.query for l in lessons if l.id in set(mine)] == [f"q{k}-{i}" for i in range(50)]
    e, tools, use, ctx = m.matrix("m", 8)
    assert (
        e.shape == (200, 8) and m.skipped == 0 and sorted(set(tools)) == ["tool0", "tool1", "tool2", "tool3"]
    )
    assert np.array_equal(e[[l.id for l in lessons].index(got[2][7])], emb(7, 8))
    assert sql(url, "SELECT value FROM routecore_meta") == [("1",)]


def test_processes_creating_the_schema_at_once(url):
    assert _processes(6, "open", url) == dict.fromkeys(range(6), "ok")
    tables = sql(url, "SELECT tablename FROM pg_tables WHERE tablename LIKE 'routecore_%' ORDER BY 1")
    learned = ("routecore_learned",)  # routecore.updates.learning
    assert tables == [learned, ("routecore_lessons",), ("routecore_meta",)]
    assert sql(url, "SELECT key, value FROM routecore_meta") == [("schema_version", "1")]


def test_schema_versions(url):
    m = ExperienceMemory(url)
    m.record("q", "t", use=True, embedding=emb(0), model_id="m")
    m.close()
    sql(url, "UPDATE routecore_meta SET value = '2' WHERE key = 'schema_version'")
    with pytest.raises(MemoryStoreError, match=r"schema version 2, newer than version 1"):
        ExperienceMemory(url)
    sql(url, "UPDATE routecore_meta SET value = 'x1' WHERE key = 'schema_version'")
    with pytest.raises(
        MemoryStoreError, match=r"schema version 'x1' is not understood \(this routecore reads version 1\)"
    ):
        ExperienceMemory(url)
    sql(url, "UPDATE routecore_meta SET value = '1' WHERE key = 'schema_version'")
    assert [l.query for l in ExperienceMemory(url).list()] == ["q"]  # the lesson was kept throughout


# -- the server going away -------------------------------------------------------------------------


@pytest.fixture
def own_server():
    """A server of this test's own, to stop and start."""
    if pg_server.find_bin_dir() is None:
        _missing("no PostgreSQL server binaries")
    s = pg_server.PgServer()
    yield s
    s.close()


def test_server_stopped_mid_run_then_back(own_server):
    mem = ExperienceMemory(own_server.url(), timeout=2)
    mem.retry_after = 0.3
    r = _router(mem)
    r.record_lesson("q", "ha_get_logs", use=False)
    assert "ha_get_logs" not in r.tools("q").names

    own_server.stop()  # fast shutdown: the store's connection is ended by the server
    belt = r.tools("q")
    assert "ha_get_logs" in belt.names and belt.tools[1].name == "ha_get_logs"  # built, without the lesson
    assert any(a.kind == "memory_error" and "lessons not applied" in a.message for a in belt.alerts)
    belt = r.tools("q")  # and again while it is down: it fails fast, without connecting, until retry_after
    assert any(a.kind == "memory_error" and "next try in" in a.message for a in belt.alerts), belt.alerts
    with pytest.raises(MemoryStoreError):
        r.record_lesson("q", "disk", use=True)
    with pytest.raises(MemoryStoreError):
        mem.list()

    own_server.start()
    time.sleep(mem.retry_after)
    belt = r.tools("q")  # the same router and store: reconnected
    assert "ha_get_logs" not in belt.names and not any(a.kind == "memory_error" for a in belt.alerts)
    r.record_lesson("q", "disk", use=True)
    assert [l.tool for l in mem.list()] == ["ha_get_logs", "disk"]

    # a crash and restart between two calls: the stale connection is replaced in the call, no error
    own_server.stop("immediate")
    own_server.start()
    belt = r.tools("q")
    assert "ha_get_logs" not in belt.names and not any(a.kind == "memory_error" for a in belt.alerts)
    mem.close()


def test_a_hung_server_is_cut_off_and_reconnected(own_server):
    """The server process stops answering (SIGSTOP): neither the server's timeouts nor TCP's fire;
    the store's watchdog ends the call after 2 x timeout."""
    import psycopg

    mem = ExperienceMemory(own_server.url(), timeout=1)
    r = _router(mem)
    r.record_lesson("q", "ha_get_logs", use=False)
    with psycopg.connect(own_server.url(), autocommit=True) as c:
        [pid] = [
            p for (p,) in c.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'routecore'")
        ]
    os.kill(pid, signal.SIGSTOP)
    try:
        belt = r.tools("q")  # the watchdog's own message: it, not a timeout of the server or TCP, ended it
        assert "ha_get_logs" in belt.names
        assert any(a.kind == "memory_error" and "no answer within 2 s" in a.message for a in belt.alerts), (
            belt.alerts
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    time.sleep(mem.retry_after)
    belt = r.tools("q")
    assert "ha_get_logs" not in belt.names and not any(a.kind == "memory_error" for a in belt.alerts)
    mem.close()
