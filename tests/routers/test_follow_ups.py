"""A query read after the previous turn's text (``previous_query``): follow-ups route, topic changes
and out-of-scope questions keep their own decision."""

from __future__ import annotations

import pytest

from routecore import InvalidArgumentError, Router
from routecore.config.specs import RouteSpec
from routecore.decide.policy import Policy
from routecore.llm.llm import LLMChoice
from routecore.routers.knowledge import KnowledgeConfig, KnowledgeRouter
from routecore.routers.turn import TurnRouter

ROUTES = {
    "weather": [
        "what's the weather today",
        "will it rain tomorrow",
        "how hot is it outside",
        "weather forecast for the weekend",
        "is it going to snow in Berlin",
    ],
    "music": [
        "play some jazz",
        "put on my workout playlist",
        "skip this song",
        "turn the music up",
        "play the latest Taylor Swift album",
    ],
    "timer": [
        "set a timer for 10 minutes",
        "start a 5 minute countdown",
        "cancel my timer",
        "how much time is left on the timer",
        "set an alarm for 7am",
    ],
    "shopping": [
        "add milk to my shopping list",
        "what's on my grocery list",
        "remove eggs from the list",
        "order more coffee beans",
        "buy batteries on amazon",
    ],
}
WEATHER, MUSIC, SHOPPING = (
    "what's the weather like in Lyon",
    "play something by Miles Davis",
    "add apples to my list",
)


@pytest.fixture(scope="module")
def router(encoder):
    return Router([RouteSpec(n, u) for n, u in ROUTES.items()], encoder=encoder)


def test_a_follow_up_declined_alone_routes_after_the_previous_turn(router):
    cases = [
        ("and tomorrow?", WEATHER, "weather"),
        ("louder", MUSIC, "music"),
        ("also bread", SHOPPING, "shopping"),
    ]
    for query, earlier, route in cases:
        alone = router.route(query)
        assert alone.action == "none" and alone.reason.code == "out_of_scope"
        d = router.route(query, previous_query=earlier)
        assert (d.action, d.route, d.tier, d.reason.code) == ("route", route, "medium", "follow_up")
        assert (
            d.reason.message.startswith("read after the previous turn, ")
            and "alone, out of scope" in d.reason.message
        )
        assert d.query.endswith(query) and "follow_up" in {a.kind for a in d.alerts}
        assert d.timings.total > 0
    batch = router.route_batch([q for q, _, _ in cases], previous_query=[e for _, e, _ in cases])
    assert [(d.route, d.reason.code) for d in batch] == [(r, "follow_up") for _, _, r in cases]


def test_a_change_of_topic_or_a_query_that_names_another_route_keeps_its_own_decision(router):
    switched = router.route("play some jazz", previous_query=WEATHER)
    assert (switched.route, switched.reason.code) == ("music", "confident")
    # Alone, "make it 20" is out of scope and its best route is music: the timer the earlier turn
    # lends is not the query's own, so it is not taken.
    alone = router.route("make it 20")
    d = router.route("make it 20", previous_query="set a timer for 10 minutes")
    assert (d.action, d.reason.code, d.query) == (alone.action, alone.reason.code, alone.query)
    b = router.route_batch(["make it 20"], previous_query="set a timer for 10 minutes")[0]
    assert (b.action, b.route, b.reason) == (d.action, d.route, d.reason)


def test_without_a_previous_turn_nothing_changes_and_bad_arguments_are_refused(router):
    for blank in (None, "", "  ", "\ud800"):
        d = router.route("and tomorrow?", previous_query=blank)
        assert (d.action, d.reason.code) == ("none", "out_of_scope")
    with pytest.raises(InvalidArgumentError, match="previous_query must be the previous turn's text"):
        router.route("and tomorrow?", previous_query=3)
    with pytest.raises(InvalidArgumentError, match="previous_query: 1 values for 2 queries"):
        router.route_batch(["a", "b"], previous_query=["x"])
    assert router.route("", previous_query=WEATHER).reason.code == "empty_query"


def test_the_llm_is_asked_only_about_what_neither_reading_routes(encoder):
    asked = []

    class LLM:
        def choose(self, request):
            asked.append(request)
            return LLMChoice("timer")

    r = Router(
        [RouteSpec(n, u) for n, u in ROUTES.items()],
        encoder=encoder,
        llm=LLM(),
        policy=Policy(low_action="llm"),
    )
    d = r.route("and tomorrow?", previous_query=WEATHER)
    assert (d.route, d.used_llm, asked) == ("weather", False, [])
    neither = r.route("make it 20", previous_query=WEATHER)
    alone = r.route("make it 20")
    assert (neither.action, neither.used_llm, neither.route) == (alone.action, alone.used_llm, alone.route)
    both = r.route_batch(["and tomorrow?", "make it 20"], previous_query=WEATHER)
    assert [(x.route, x.used_llm) for x in both] == [("weather", False), (alone.route, alone.used_llm)]


def test_a_turn_decides_its_route_as_route_does_with_the_previous_turns_text(router):
    from routecore import TurnRouter

    t = TurnRouter(router)
    d = t.turn("and tomorrow?", previous_query=WEATHER).decision
    want = router.route("and tomorrow?", previous_query=WEATHER)
    assert (
        (d.route, d.tier, d.reason)
        == (want.route, want.tier, want.reason)
        == ("weather", "medium", want.reason)
    )
    batch = t.turn_batch(["and tomorrow?", "louder"], previous_query=[WEATHER, None])
    assert [(x.decision.action, x.decision.reason.code) for x in batch] == [
        ("route", "follow_up"),
        ("none", "out_of_scope"),
    ]


def test_a_turn_answers_a_clarification_as_route_does(router):
    from dataclasses import replace

    from routecore import TurnRouter

    asked = replace(
        router.route("put something on"), action="clarify", route="CLARIFY", candidates=("music", "timer")
    )
    t = TurnRouter(router)
    for answer in ("the first one", "the timer", "neither"):
        got = t.turn(answer, clarify=asked)
        want = router.route(answer, clarify=asked)
        assert (got.decision.action, got.decision.route, got.decision.reason) == (
            want.action,
            want.route,
            want.reason,
        )
        assert got.query == f"put something on\n{answer}"
    assert t.turn("the first one", clarify=asked).decision.route == "music"
    with pytest.raises(InvalidArgumentError, match="clarify must be the clarify Decision"):
        t.turn("the first one", clarify={"candidates": ["music"]})


def test_with_an_llm_a_query_routed_alone_asks_it_as_alone_and_a_joined_reading_lets_it_read_both(encoder):
    """The LLM (asked on the medium tier by default) is asked as it would be alone for a query the
    follow-up reading does not take, and on the query after the previous turn when that reading
    would ask it; route() and route_batch() agree."""
    asked = []

    class LLM:
        def choose(self, request):
            asked.append(request.query)
            return LLMChoice("shopping")

    r = Router([RouteSpec(n, u) for n, u in ROUTES.items()], encoder=encoder, llm=LLM())
    alone = r.route("songs")
    assert (alone.route, alone.used_llm, asked) == ("shopping", True, ["songs"])
    for d in (r.route("songs", previous_query=WEATHER), r.route_batch(["songs"], previous_query=WEATHER)[0]):
        assert (d.action, d.route, d.used_llm, d.reason.code) == ("route", "shopping", True, "llm")
    asked.clear()
    joined = [
        r.route("quieter", previous_query=MUSIC),
        *r.route_batch(["quieter", "x"], previous_query=MUSIC)[:1],
    ]
    for d in joined:
        assert (d.used_llm, d.reason.code) == (True, "llm") and "follow_up" in {a.kind for a in d.alerts}
        assert not d.reason.message.startswith("the LLM failed")
    assert asked[:2] == [f"{MUSIC}\nquieter"] * 2  # the LLM read the previous turn too


def test_arguments_given_as_generators_are_read_once(router, encoder):
    from routecore import Cascade

    qs = ["and tomorrow?", "play some jazz"]
    want = [(d.route, d.reason.code) for d in router.route_batch(qs, previous_query=[WEATHER, None])]
    got = router.route_batch(
        qs, previous=(p for p in [None, None]), previous_query=(t for t in [WEATHER, None])
    )
    assert [(d.route, d.reason.code) for d in got] == want
    c = Cascade(router, router)
    assert len(c.route_batch(qs, previous_query=(t for t in [WEATHER, None]))) == 2
    assert router.route("and tomorrow?", previous=" weather ").previous_route == "weather"


def test_bad_arguments_beside_a_previous_turn_raise_as_without_it(router):
    from routecore import RoutecoreError

    with pytest.raises(InvalidArgumentError, match="previous must be a route name"):
        router.route("hi", previous=["weather"], previous_query=WEATHER)
    with pytest.raises(RoutecoreError):
        router.route_batch(["a", "b"], vectors=[[0.1] * 384, [0.1] * 3], previous_query="x")


def test_knowledge_and_turn_read_a_follow_up_as_route_does(router):
    """The knowledge collections of a follow-up come from the route decision read after the previous turn,
    in a KnowledgeRouter's call and batch and in a turn."""
    kr = KnowledgeRouter(router, KnowledgeConfig())
    alone = kr.collections("and tomorrow?")
    assert alone.source == "fallback"  # out of scope alone
    got = kr.collections("and tomorrow?", previous_query=WEATHER)
    assert got.source == "router" and got.names[0] == "weather"
    batch = kr.collections_batch(["and tomorrow?", "louder"], previous_query=[WEATHER, MUSIC])
    assert [b.names[0] for b in batch] == ["weather", "music"]
    with pytest.raises(InvalidArgumentError, match="previous_query"):  # one for all, or one per query
        kr.collections_batch(["and tomorrow?"], previous_query=[WEATHER, MUSIC])
    turn = TurnRouter(router, knowledge=kr).turn("and tomorrow?", previous_query=WEATHER)
    assert turn.decision.route == "weather" and turn.knowledge.names[0] == "weather"
    assert "the route read it after the previous turn" in turn.reason.message
