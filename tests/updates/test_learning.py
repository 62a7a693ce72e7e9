"""Router.learn (routecore.updates.learning, issue 37): the guards, generations, concurrency, persistence."""

from __future__ import annotations

import threading

import pytest

from routecore import Router, RouteSpec
from routecore.decide.policy import Policy
from routecore.errors import InvalidArgumentError, RoutecoreError, UnknownRouteError
from routecore.llm.llm import LLMChoice
from routecore.memory.lesson_cache import store_key
from routecore.updates.learning import learner

ROUTES = [
    RouteSpec(
        "billing",
        ("my invoice is wrong", "I was charged twice", "update my credit card", "refund my last payment"),
    ),
    RouteSpec(
        "shipping",
        ("where is my parcel", "the delivery is late", "change my delivery address", "track my order"),
    ),
    RouteSpec(
        "account", ("reset my password", "I cannot log in", "delete my account", "change my email address")
    ),
]


@pytest.fixture
def router(encoder):
    return Router(ROUTES, encoder=encoder)


def test_an_unknown_route_is_refused_with_a_typed_error(router):
    with pytest.raises(UnknownRouteError, match="unknown route 'weather'") as e:
        router.learn("will it rain tomorrow", "weather")
    assert isinstance(e.value, RoutecoreError) and isinstance(e.value, InvalidArgumentError)
    assert router.learned() == []
    with pytest.raises(InvalidArgumentError, match="source"):
        router.learn("my parcel is lost", "shipping", source="robot")


def test_a_route_named_in_another_case_is_that_route(encoder):
    r = Router([RouteSpec(n.upper(), u.utterances) for n, u in zip("abc", ROUTES)], encoder=encoder)
    res = r.learn("the courier lost my box", " b ")  # as previous= and an LLM's answer are read
    assert res.status == "learned" and res.route == "B" and r.learned()[0].route == "B"
    with pytest.raises(UnknownRouteError):
        r.learn("the courier lost my box", "d")


def test_a_learned_query_is_an_exemplar_with_its_source_and_time(router):
    before = router.route("the courier lost my box").generation
    res = router.learn("the courier lost my box", "shipping", source="agent")
    assert res.status == "learned" and res.exemplar is not None and res.generation == before + 1
    assert res.reason.code == "learned" and res.reason.message.startswith(
        "added to shipping (its nearest exemplar"
    )
    (e,) = router.learned()
    assert (e.route, e.text, e.source, e.id) == ("shipping", "the courier lost my box", "agent", 1)
    assert e.time > 0 and e.generation == res.generation
    assert "the courier lost my box" in router.route_table.by_name["shipping"].utterances
    assert "the courier lost my box" in router.route_table.table.texts
    d = router.route("the courier lost my box")
    assert d.generation == res.generation
    assert d.top_exemplars[0].text == "the courier lost my box"  # the table holds it now


def test_a_query_learned_once_is_routed_there_at_once(router, tmp_path):
    """Between refits the head has not seen a learned exemplar: the query again goes to its route at
    the medium tier, reason ``learned``; a near-copy waits for the refit."""
    asked = ["the courier lost my box", "the courier lost my box"]
    before = [router.route(q) for q in asked]
    assert all(d.route != "shipping" or d.action != "route" for d in before)
    near = router.route("The courier lost my parcel!")
    res = router.learn("the courier lost my box", "shipping")
    for d in [*map(router.route, asked), *router.route_batch(asked)]:
        assert (d.action, d.route, d.tier, d.reason.code) == ("route", "shipping", "medium", "learned")
        assert "learn() was given this query for shipping" in d.reason.message
    after = router.route("The courier lost my parcel!")
    assert (after.reason.code, after.route) == (near.reason.code, near.route)  # the head decides it still
    assert router.route("I cannot log in").route == "account"  # other queries as before
    router.save(tmp_path / "b")
    assert Router.load(tmp_path / "b").route(asked[0]).reason.code == "learned"
    router.forget(res.exemplar.id)
    assert router.route(asked[0]).reason.code == before[0].reason.code


def test_a_learned_query_survives_the_head_the_policy_a_live_update_and_a_second_answer(encoder):
    """Out of the head's scope it still goes to its learned route; with ``top_exemplars: 0``; after a
    live update that keeps the head; and a later answer for another route replaces the first."""
    from routecore import ToolSpec

    r = Router(ROUTES, encoder=encoder, policy=Policy(top_exemplars=0))
    q = "track my feelings"
    assert r.route(q).action != "route" or r.route(q).route != "shipping"
    r.learn(q, "shipping")
    d = r.route(q)
    assert (d.route, d.reason.code, d.top_exemplars) == ("shipping", "learned", ())
    r.add_tools([ToolSpec("get_invoice", "Fetch an invoice by id.")], recalibrate=False)
    assert r.route(q).reason.code == "learned"
    second = r.learn(q, "account")
    assert second.status == "learned" and [e.route for e in second.evicted] == ["shipping"]
    assert [(e.route, e.text) for e in r.learned()] == [("account", q)]
    assert (r.route(q).route, r.route(q).reason.code) == ("account", "learned")


def test_a_near_duplicate_is_not_added_twice(router):
    assert router.learn("my package never arrived", "shipping").status == "learned"
    again = router.learn("my package never arrived", "shipping")
    assert again.status == "duplicate" and again.nearest >= again.cut and again.exemplar is None
    assert again.reason.code == "duplicate" and "not added" in again.reason.message
    assert "the router decides" not in again.reason.message  # it routes the query there already
    assert router.learn("track my order", "shipping").status == "duplicate"  # a config exemplar
    assert [e.text for e in router.learned()] == ["my package never arrived"]
    assert router.route_table.by_name["shipping"].utterances.count("my package never arrived") == 1
    # The cut sits on the encoder's scale: under 1, above the typical same-route pair.
    assert 0.5 < again.cut < 1.0


def test_a_duplicate_the_router_does_not_route_there_says_what_it_decides(encoder):
    r = Router(ROUTES, encoder=encoder, policy=Policy(learn_duplicate=0.3))  # every query is "near"
    q = "hello there"
    d = r.route(q)
    assert (d.action, d.route) != ("route", "account")
    res = r.learn(q, "account")
    assert res.status == "duplicate" and "; the router decides " in res.reason.message
    assert res.reason.message.endswith("an exemplar of account nearer this wording helps")


def test_an_answer_contradicting_a_confident_decision_is_held_for_review(router):
    q = "I cannot log in to my account"
    d = router.route(q)
    assert d.route == "account" and d.tier == "high", (d.route, d.tier)
    res = router.learn(q, "shipping", source="llm")
    assert res.status == "held" and res.review is not None and res.reason.code == "held"
    assert res.reason.message.startswith("the router routes it to account at the high tier")
    assert (res.review.route, res.review.decided, res.review.source) == ("shipping", "account", "llm")
    assert router.held_for_review() == [res.review]
    assert router.learned() == [] and q not in router.route_table.by_name["shipping"].utterances
    forced = router.learn("charged two times on my card", "shipping", force=True)  # a reviewer's call
    assert forced.status == "learned"


def test_a_route_keeps_at_most_the_cap_and_the_oldest_go_first(encoder):
    r = Router(ROUTES, encoder=encoder, policy=Policy(learn_cap=2, learn_duplicate=0.995))  # the cap alone
    texts = ["the VAT on my bill is wrong", "why is there a fee on my statement", "I want my money back"]
    results = [r.learn(t, "billing") for t in texts]
    assert [x.status for x in results] == ["learned"] * 3
    assert [e.text for e in results[2].evicted] == [texts[0]]
    assert [e.text for e in r.learned("billing")] == texts[1:]
    assert texts[0] not in r.route_table.by_name["billing"].utterances
    assert texts[0] not in r.route_table.table.texts and texts[2] in r.route_table.table.texts


def test_learned_exemplars_can_be_removed(router):
    a = router.learn("the courier lost my box", "shipping").exemplar
    b = router.learn("my card was billed for nothing", "billing").exemplar
    assert a is not None and b is not None
    with pytest.raises(InvalidArgumentError, match="no learned exemplar"):
        router.forget([a.id, 999])
    assert len(router.learned()) == 2  # nothing removed
    assert router.forget(a.id) == [a]
    assert router.learned() == [b]
    assert "the courier lost my box" not in router.route_table.by_name["shipping"].utterances
    assert "the courier lost my box" not in router.route_table.table.texts
    learner(router).wait()


def test_the_background_refit_rebuilds_the_head_and_decisions_name_its_generation(encoder):
    r = Router(ROUTES, encoder=encoder, policy=Policy(learn_refit_every=2))
    head = r.head
    r.learn("the courier lost my box", "shipping")
    r.learn("my card was billed for nothing", "billing")
    lr = learner(r)
    lr.wait()
    assert lr.refits == 1 and r.head is not head
    d = r.route("the courier lost my box")
    assert d.generation == lr.generation == 3  # two learns and the refit
    assert [e.text for e in r.learned()] == ["the courier lost my box", "my card was billed for nothing"]
    assert "the courier lost my box" in r.route_table.by_name["shipping"].utterances


class _LLM:
    def __init__(self, route):
        self.route, self.calls = route, 0

    def choose(self, request):
        self.calls += 1
        return LLMChoice(self.route)


def test_the_llm_fallback_answers_are_learned_only_when_the_policy_says_so(encoder):
    q = "I was charged twice for the same order"  # billing at the medium tier: the LLM is asked
    off = Router(ROUTES, encoder=encoder, llm=_LLM("billing"))
    d = off.route(q)
    assert d.used_llm and d.route == "billing", (d.action, d.tier, d.reason)
    assert off.learned() == [] and Policy().learn_from_llm is False
    policy = Policy(learn_from_llm=True, learn_duplicate=0.995)  # (a near-copy of "I was charged twice")
    on = Router(ROUTES, encoder=encoder, llm=_LLM("billing"), policy=policy)
    d = on.route(q)
    assert d.used_llm and d.route == "billing"
    assert [(e.text, e.route, e.source) for e in on.learned()] == [(q, "billing", "llm")]


def test_readers_route_while_learn_runs(encoder):
    r = Router(ROUTES, encoder=encoder, policy=Policy(learn_refit_every=3, learn_duplicate=0.995))
    stop, errors, seen = threading.Event(), [], []

    def read():
        while not stop.is_set():
            try:
                d = r.route("my parcel has not arrived")
                assert d.action in ("route", "clarify", "none")
                seen.append(d.generation)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    texts = [
        "the courier lost my box",
        "my card was billed for nothing",
        "I forgot the login name",
        "the parcel went to the wrong town",
        "a charge I do not recognise",
        "I want to close my profile",
    ]
    try:
        for t, route in zip(texts, ["shipping", "billing", "account"] * 2):
            r.learn(t, route)
        learner(r).wait()
        r.route("x")
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert not errors, errors[:3]
    lr = learner(r)
    assert len(r.learned()) == 6 and lr.refits >= 1
    assert seen and max(seen) <= lr.generation and all(g >= 0 for g in seen)


def test_learned_exemplars_survive_a_restart(encoder, tmp_path):
    r = Router(ROUTES, encoder=encoder)
    a = r.learn("the courier lost my box", "shipping", source="agent").exemplar
    b = r.learn("my card was billed for nothing", "billing", source="user").exemplar
    learner(r).wait()
    r.save(tmp_path / "b")
    back = Router.load(tmp_path / "b", encoder=encoder)
    assert back.learned() == [a, b]
    assert "the courier lost my box" in back.route_table.by_name["shipping"].utterances
    assert back.route("the courier lost my box").top_exemplars[0].text == "the courier lost my box"
    assert back.learn("the courier lost my box", "shipping").status == "duplicate"
    c = back.learn("the parcel went to the wrong town", "shipping").exemplar
    assert c is not None and c.id == 3  # ids go on after the saved ones
    assert back.forget(a.id) == [a]
    assert "the courier lost my box" not in back.route_table.by_name["shipping"].utterances
    back.save(tmp_path / "b")
    again = Router.load(tmp_path / "b", encoder=encoder)
    assert [e.text for e in again.learned()] == [b.text, c.text]


def test_learned_exemplars_survive_a_restart_in_the_lesson_store_and_replicas_share_them(encoder, tmp_path):
    from routecore.memory.memory import ExperienceMemory

    path = tmp_path / "lessons.sqlite"
    a = Router(ROUTES, encoder=encoder, memory=ExperienceMemory(path))
    x = a.learn("the courier lost my box", "shipping", source="agent").exemplar
    y = a.learn("my card was billed for nothing", "billing").exemplar
    stored = a.memory.learned_exemplars(store_key(encoder))
    assert [(s.id, s.route, s.text, s.source) for s in stored] == [
        (x.id, "shipping", x.text, "agent"),
        (y.id, "billing", y.text, "user"),
    ]
    b = Router(ROUTES, encoder=encoder, memory=ExperienceMemory(path))  # a restart, or a replica
    assert [(e.id, e.route, e.text, e.source, e.time) for e in b.learned()] == [
        (e.id, e.route, e.text, e.source, e.time) for e in a.learned()
    ]
    assert b.route("the courier lost my box").top_exemplars[0].text == "the courier lost my box"
    z = b.learn("I want to close my profile", "account", force=True).exemplar
    assert z is not None and [e.text for e in b.forget(x.id)] == [x.text]
    assert a.memory.learned_exemplars(store_key(encoder))[0].id == y.id  # gone from the store
    assert a.sync_learned() == 2  # x dropped, z added
    assert [e.text for e in a.learned()] == [y.text, z.text]
    assert "the courier lost my box" not in a.route_table.by_name["shipping"].utterances
    learner(a).wait()
    learner(b).wait()


def test_a_live_update_keeps_the_learned_exemplars_of_the_routes_that_remain(router):
    x = router.learn("the courier lost my box", "shipping").exemplar
    y = router.learn("my card was billed for nothing", "billing").exemplar
    learner(router).wait()
    router.add_routes([RouteSpec("weather", ("will it rain tomorrow", "weather forecast for Paris"))])
    router.remove_routes(["billing"])
    assert router.learned() == [x]  # billing's is gone with its route
    assert y is not None and "my card was billed for nothing" not in router.route_table.table.texts
    assert router.route("x").generation == 0  # a live update starts the count again
    assert router.forget(x.id) == [x]
    assert "the courier lost my box" not in router.route_table.by_name["shipping"].utterances
    learner(router).wait()


def test_bad_learning_arguments_raise_typed_errors_and_store_nothing(router, tmp_path):
    res = router.learn("the parcel got lost \ud800", "shipping")  # half an emoji from a JSON API
    assert res.status == "learned" and res.exemplar is not None
    assert res.exemplar.text == "the parcel got lost " and router.learned()[0].text == res.exemplar.text
    router.save(tmp_path / "b")  # the text a file can hold
    with pytest.raises(InvalidArgumentError, match="non-blank"):
        router.learn("\ud800 ", "shipping")
    with pytest.raises(InvalidArgumentError, match="must be a str"):
        router.learn(b"parcel", "shipping")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="list of ids"):
        router.forget("abc")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="list of ids"):
        router.forget([1.0])  # type: ignore[list-item]
    with pytest.raises(UnknownRouteError, match="unknown route 'nope'"):
        router.learned("nope")
    assert [e.text for e in router.learned("shipping")] == [res.exemplar.text]
    import numpy as np

    assert [e.id for e in router.forget(range(res.exemplar.id, res.exemplar.id + 1))] == [res.exemplar.id]
    again = router.learn("the parcel got lost on the way", "shipping").exemplar
    assert again is not None and [e.id for e in router.forget(np.int64(again.id))] == [again.id]
    learner(router).wait()  # the refits forget() started end with the test
