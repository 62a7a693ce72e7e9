"""Learned exemplars (routecore.updates.learning) in the PostgreSQL lesson store: replicas share them, a
restart takes them back, a store made before the table existed gets it. Under CI a missing server
or psycopg fails; elsewhere it skips (tests/pg_server.py)."""

from __future__ import annotations

import uuid

import pytest
from test_learning import ROUTES

import pg_server
from conftest import missing
from routecore import Router
from routecore.memory.lesson_cache import store_key
from routecore.memory.memory import ExperienceMemory
from routecore.updates.learning import learner


@pytest.fixture(scope="module")
def server():
    try:
        import psycopg  # noqa: F401
    except ImportError:
        missing("psycopg is not installed: the PostgreSQL lesson-store tests need it")
    if pg_server.find_bin_dir() is None:
        missing("no PostgreSQL server binaries: the PostgreSQL lesson-store tests need them")
    s = pg_server.PgServer()
    yield s
    s.close()


@pytest.fixture
def url(server):
    return server.create_database(f"t_{uuid.uuid4().hex[:12]}")


def test_replicas_share_learned_exemplars_through_postgres(encoder, url):
    a = Router(ROUTES, encoder=encoder, memory=ExperienceMemory(url))
    x = a.learn("the courier lost my box", "shipping", source="agent").exemplar
    b = Router(ROUTES, encoder=encoder, memory=ExperienceMemory(url))  # another replica, or a restart
    assert [(e.id, e.route, e.text, e.source) for e in b.learned()] == [(x.id, x.route, x.text, "agent")]
    assert b.route("the courier lost my box").top_exemplars[0].text == x.text
    y = b.learn("my card was billed for nothing", "billing").exemplar
    assert y is not None and y.id != x.id  # ids from the shared store
    assert a.sync_learned() == 1
    assert [e.text for e in a.learned()] == [x.text, y.text]
    a.forget(x.id)
    assert b.sync_learned() == 1 and [e.text for e in b.learned()] == [y.text]
    assert x.text not in b.route_table.by_name["shipping"].utterances
    learner(a).wait()
    learner(b).wait()


def test_a_store_made_before_learning_gets_its_table(encoder, url):
    import psycopg

    ExperienceMemory(url).close()
    with psycopg.connect(url, autocommit=True) as c:
        c.execute("DROP TABLE routecore_learned")  # as a store of an earlier routecore
    r = Router(ROUTES, encoder=encoder, memory=ExperienceMemory(url))
    assert r.learn("the courier lost my box", "shipping").status == "learned"
    assert [s.text for s in r.memory.learned_exemplars(store_key(encoder))] == ["the courier lost my box"]
