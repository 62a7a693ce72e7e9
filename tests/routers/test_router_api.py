"""Batch, async and vectors-in calls of the Router: same decisions as the single calls."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from routecore.errors import DimensionMismatchError, InvalidArgumentError, NonFiniteError

QUERIES = [
    "Peux-tu me donner l'état de l'incident INC20481234 ?",
    "what is the escalation path for a P1 on the billing platform",
    "hello there",
    "how do I reset my VPN password",
    "le serveur Kafka ne répond plus depuis ce matin",
    "quelle est la procédure de sauvegarde Oracle",
    "thanks, that's all",
    "open a ticket for the broken printer",
]
TOOL_QUERIES = [
    "restart the payments service",
    "what is the weather in Hanoi",
    "show me the last errors of the API gateway",
    "bonjour",
]


def _same(a, b):
    assert (a.action, a.route, a.tier, a.candidates, a.alerts) == (
        b.action,
        b.route,
        b.tier,
        b.candidates,
        b.alerts,
    )
    assert a.confidence == pytest.approx(b.confidence, abs=1e-6) and dict(a.raw_scores) == pytest.approx(
        dict(b.raw_scores), abs=1e-6
    )


def test_route_batch_equals_single_calls(it_ops_router, encoder):
    encoder.clear_cache()
    batch = it_ops_router.route_batch(
        QUERIES,
        previous=[None, None, None, "GENERAL", None, None, None, None]
        if "GENERAL" in it_ops_router.route_table.by_name
        else None,
    )
    encoder.clear_cache()
    for d, q in zip(batch, QUERIES):
        _same(d, it_ops_router.route(q, previous=d.previous_route))
        assert d.timings.total > 0
    assert it_ops_router.route_batch([]) == []


@pytest.mark.parametrize("storage", ["f32", "f16", "int8"])
def test_a_batch_scored_in_one_native_step_decides_as_single_calls(encoder, storage, monkeypatch):
    """route_batch scores every query in one native call (the exemplar table read once for all):
    each decision is the one route() gives, timings apart; when that call fails, each query is
    scored on its own."""
    from routecore import Router
    from routecore.examples import IT_OPS_ROUTES
    from routecore.routers import route_batch

    r = Router.from_config(IT_OPS_ROUTES, encoder=encoder, storage=storage)
    prev = [None, "GENERAL", None, None, "RAG", None, None, None]
    X = encoder.encode(QUERIES)
    calls = []
    real = route_batch.score_batch
    monkeypatch.setattr(route_batch, "score_batch", lambda *a: calls.append(1) or real(*a))
    batch = r.route_batch(QUERIES + ["   "], previous=prev + [None], vectors=np.vstack([X, X[:1]]))
    assert calls == [1]  # one native call for the eight readable queries
    for d, q, p, x in zip(batch, QUERIES, prev, X):
        single = r.route(q, previous=p, vector=x)
        assert d.to_dict() | {"timings": None} == single.to_dict() | {"timings": None}
        t = d.timings
        assert t.score > 0 and t.total >= t.score + t.policy
    assert batch[-1].reason.code == "empty_query"

    def fail(*a):
        raise route_batch.RoutecoreError("the batch step failed")

    monkeypatch.setattr(route_batch, "score_batch", fail)
    again = r.route_batch(QUERIES, previous=prev, vectors=X)
    assert [d.to_dict() | {"timings": None} for d in again] == [
        d.to_dict() | {"timings": None} for d in batch[:-1]
    ]


def test_route_batch_arguments_are_checked(it_ops_router):
    with pytest.raises(InvalidArgumentError, match="use route"):
        it_ops_router.route_batch("one query")
    with pytest.raises(InvalidArgumentError, match="previous: 1 values for 2 queries"):
        it_ops_router.route_batch(["a", "b"], previous=["GENERAL"])
    with pytest.raises(InvalidArgumentError, match="unknown previous route"):
        it_ops_router.route_batch(["a"], previous="NOPE")


def test_tools_batch_equals_single_calls(tools_router, encoder):
    encoder.clear_cache()
    belts = tools_router.tools_batch(TOOL_QUERIES, top_k=3)
    encoder.clear_cache()
    for b, q in zip(belts, TOOL_QUERIES):
        s = tools_router.tools(q, top_k=3)
        assert [(t.name, t.reason) for t in b.tools] == [(t.name, t.reason) for t in s.tools]
        assert [t.score for t in b.tools] == pytest.approx([t.score for t in s.tools], abs=1e-6)
        assert b.no_tool == s.no_tool


def test_vectors_in_give_the_same_decisions(it_ops_router, tools_router, encoder):
    v = encoder.encode(QUERIES)
    for q, row in zip(QUERIES, v):
        _same(it_ops_router.route(q, vector=row), it_ops_router.route(q))
    _same(
        it_ops_router.route(QUERIES[0], vector=(v[0] * 3).astype(np.float64).tolist()),
        it_ops_router.route(QUERIES[0]),
    )  # normalised, converted
    for d, q in zip(it_ops_router.route_batch(QUERIES, vectors=v), QUERIES):
        _same(d, it_ops_router.route(q))
    tv = encoder.encode(TOOL_QUERIES)
    assert (
        tools_router.tools(TOOL_QUERIES[0], vector=tv[0]).names == tools_router.tools(TOOL_QUERIES[0]).names
    )
    assert [b.names for b in tools_router.tools_batch(TOOL_QUERIES, vectors=tv)] == [
        tools_router.tools(q).names for q in TOOL_QUERIES
    ]


@pytest.mark.parametrize(
    ("vec", "err"),
    [
        (np.zeros(3, np.float32), DimensionMismatchError),
        (np.full(384, np.nan, np.float32), NonFiniteError),
        (np.r_[np.ones(383, np.float32), np.inf], NonFiniteError),
        (np.zeros(384, np.float32), NonFiniteError),
        ("not a vector", InvalidArgumentError),
    ],
)
def test_bad_vectors_raise_typed_errors(it_ops_router, tools_router, encoder, vec, err):
    if isinstance(vec, np.ndarray) and vec.shape == (384,) and encoder.dim != 384:
        vec = np.resize(vec, encoder.dim)
    with pytest.raises(err):
        it_ops_router.route("x", vector=vec)
    with pytest.raises(err):
        tools_router.tools("x", vector=vec)


def test_batch_vectors_must_match_the_queries(it_ops_router, encoder):
    with pytest.raises(DimensionMismatchError, match="expected 2 x"):
        it_ops_router.route_batch(["a", "b"], vectors=np.ones((3, encoder.dim), np.float32))


def test_async_calls_take_the_keywords_of_their_sync_twins(it_ops_router):
    async def main():
        for call, arg in ((it_ops_router.aroute, QUERIES[0]), (it_ops_router.aroute_batch, QUERIES[:2])):
            for kw in ({"repair": False}, {"choose": None}, {"previus": "INCIDENT"}):  # internal, misspelt
                with pytest.raises(TypeError, match=f"unexpected keyword argument '{next(iter(kw))}'"):
                    await call(arg, **kw)
        return await it_ops_router.aroute(QUERIES[0], previous="INCIDENT", previous_query=QUERIES[1])

    assert asyncio.run(main()).action


def test_async_calls_match_and_1000_concurrent_calls_complete(it_ops_router, tools_router):
    async def main():
        single = await it_ops_router.aroute(QUERIES[0])
        batch = await it_ops_router.aroute_batch(QUERIES[:3])
        belt = await tools_router.atools(TOOL_QUERIES[0], top_k=2)
        belts = await tools_router.atools_batch(TOOL_QUERIES[:2])
        done = 0  # calls answered so far
        seen: list[int] = []  # ``done`` at each tick of a task that sleeps 5 ms at a time
        stop = asyncio.Event()

        async def ticker():
            while not stop.is_set():
                await asyncio.sleep(0.005)
                seen.append(done)

        async def call(i):
            nonlocal done
            d = await it_ops_router.aroute(QUERIES[i % len(QUERIES)])
            done += 1
            return d

        tick = asyncio.create_task(ticker())
        many = await asyncio.gather(*(call(i) for i in range(1000)))
        stop.set()
        await tick
        return single, batch, belt, belts, many, seen

    single, batch, belt, belts, many, seen = asyncio.run(main())
    _same(single, it_ops_router.route(QUERIES[0]))
    for d, q in zip(batch, QUERIES):
        _same(d, it_ops_router.route(q))
    assert belt.names == tools_router.tools(TOOL_QUERIES[0], top_k=2).names and len(belts) == 2
    assert len(many) == 1000 and all(d.action in ("route", "clarify", "none") for d in many)
    for i, d in enumerate(many[:16]):
        _same(d, it_ops_router.route(QUERIES[i % len(QUERIES)]))
    # The loop kept running other tasks while the calls were in flight (how late its ticks come is a
    # benchmark figure: benches/event_loop_lag.py).
    assert any(0 < n < 1000 for n in seen), seen[:20]


def test_route_batch_in_an_executor_gives_the_same_decisions(it_ops_router):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as ex:
        par = it_ops_router.route_batch(QUERIES, executor=ex)
    for a, b in zip(par, it_ops_router.route_batch(QUERIES)):
        _same(a, b)


def test_tools_take_the_active_domains_as_route_does(tools_router):
    q = "show me the logs"

    def scores(domains):
        return {t.name: t.score for t in tools_router.tools(q, context_domains=domains, top_k=8).tools}

    one, other, both = scores(["system"]), scores(["home_automation"]), scores(["system", "home_automation"])
    domain = {s.name: s.domain for s in tools_router.tool_specs}
    # Each tool gets its own domain's boost whichever other domains are active.
    for name, score in both.items():
        alone = one if domain[name] == "system" else other if domain[name] == "home_automation" else None
        if alone is not None and name in alone:
            assert score == pytest.approx(alone[name], abs=1e-6), name
    with pytest.warns(DeprecationWarning, match="context_domain= is deprecated"):
        old = tools_router.tools(q, context_domain="system", top_k=8)
    assert {t.name: t.score for t in old.tools} == pytest.approx(one)
    with pytest.warns(DeprecationWarning):
        batch = tools_router.tools_batch([q], context_domain="system", top_k=8)
    assert [b.names for b in batch] == [old.names]
    with pytest.warns(DeprecationWarning):
        assert tools_router.tool_session(q, context_domain="system").belt.names == (
            tools_router.tool_session(q, context_domains=["system"]).belt.names
        )
    with pytest.raises(InvalidArgumentError, match="context_domains must be a list"):
        tools_router.tools(q, context_domains="system")  # a str is not a list of names
