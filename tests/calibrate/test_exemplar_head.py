"""Policy(head="exemplars"): a linear head trained on the exemplars, calibrated zero-label."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from conftest import ROOT
from routecore import Router
from routecore.calibrate.exemplar_head import OOS_CLASS, _folds, _near_copy_groups
from routecore.config.specs import RouteSpec, ToolSpec, read_config_file
from routecore.decide.policy import Policy

EX = ROOT / "examples"
QUERIES = [
    "Peux-tu me donner l'état de l'incident INC20481234 ?",
    "how do I reset my VPN password",
    "what is the escalation path for a P1 on the billing platform",
    "write me a limerick about cheese",
]


def head_policy(**kw):
    data = read_config_file(EX / "it_ops_routes.yaml")
    # The out-of-fold fit (zero-label): the decision prior of the bundled model is tested in test_few_shot.py.
    return Policy.from_dict({**data.get("policy", {}), "head": "exemplars", "prior": False, **kw})


@pytest.fixture(scope="module")
def it_ops(encoder):
    return Router.from_config(EX / "it_ops_routes.yaml", encoder=encoder, policy=head_policy())


def test_a_config_trains_and_calibrates_its_head(it_ops, encoder):
    h = it_ops.head
    assert h is not None and h.oos_class == OOS_CLASS
    assert set(h.classes) == {r.name for r in it_ops.route_specs} | {OOS_CLASS}
    cal = it_ops.calibration
    assert cal.source == "zero-label" and it_ops.calibrated == "zero-label"
    st = cal.stats.head
    # The head's cut decides the scope: the cosine cut is off, and the cuts were fitted out of fold.
    assert cal.min_score == 0.0 and it_ops.policy.min_score == 0.0
    assert st is not None and not st.cuts_fallback and st.threshold == h.threshold and 0 < h.threshold < 1
    assert st.oof_top1 is not None and st.oof_top1 > 0.5
    assert st.oof_kept is not None and 0 < st.oof_kept <= 1
    p = it_ops.policy
    assert 0 < p.medium <= 1 and 0 < p.high <= 1 and 0 <= p.margin <= 1
    plain = Router.from_config(EX / "it_ops_routes.yaml", encoder=encoder, policy=head_policy(head="off"))
    assert plain.head is None and plain.policy.min_score > 0
    for q in QUERIES:
        d = it_ops.route(q)
        assert d.calibrated == "zero-label"
        if d.action != "none":
            assert sum(d.probabilities.values()) == pytest.approx(1.0, abs=1e-4)
    assert it_ops.route("INC20481234 is still open, any update?").route == "INCIDENT"
    assert it_ops.route("où est la doc pour configurer le VPN").route == "RAG"


def test_the_head_rejects_what_it_was_taught_is_out_of_scope(it_ops):
    # A query far from every route: the background class or the cut declines it.
    d = it_ops.route("who painted the ceiling of the sistine chapel")
    assert d.action == "none" and d.route is None


def test_a_bundle_keeps_the_head_and_its_cuts(it_ops, tmp_path, encoder):
    it_ops.save(tmp_path / "b")
    back = Router.load(tmp_path / "b", encoder=encoder)
    assert back.head is not None and back.head.threshold == it_ops.head.threshold
    assert back.head.classes == it_ops.head.classes and np.array_equal(back.head.W, it_ops.head.W)
    assert back.calibration == it_ops.calibration
    for q in QUERIES:
        a, b = it_ops.route(q), back.route(q)
        assert (a.action, a.route, a.tier) == (b.action, b.route, b.tier)
        assert a.confidence == pytest.approx(b.confidence, abs=1e-6)


def test_explicit_values_win_over_the_heads_cuts(encoder):
    r = Router.from_config(
        EX / "it_ops_routes.yaml", encoder=encoder, policy=head_policy(high=0.99, margin=0.5, medium=0.7)
    )
    assert (r.policy.high, r.policy.margin, r.policy.medium) == (0.99, 0.5, 0.7)
    assert r.head is not None and r.calibration.stats.head is not None
    assert r.calibration.stats.head.threshold == r.head.threshold


def test_a_tiny_config_and_a_single_route(encoder):
    tiny = [
        RouteSpec("weather", ("will it rain tomorrow", "forecast for paris")),
        RouteSpec("music", ("play some jazz", "next song please")),
    ]
    r = Router(tiny, encoder=encoder, policy=Policy(head="exemplars", prior=False))
    # Four exemplars hold out too few rows to fit cuts on: no head, the calibrated cosines decide,
    # and the stats say why.
    st = r.calibration.stats.head
    assert r.head is None and st is not None and st.cuts_fallback and "too few" in (st.skipped or "")
    assert r.policy.min_score > 0 and 0 < r.policy.medium <= 1
    d = r.route("is it going to snow this weekend")
    assert d.route == "weather" and d.action in ("route", "clarify")
    one = Router([tiny[0]], encoder=encoder, policy=Policy(head="exemplars"))
    assert one.head is None  # a softmax over one route says nothing
    assert one.route("will it rain tomorrow").route == "weather"


ASSISTANT = [
    RouteSpec(
        "weather",
        (
            "will it rain tomorrow",
            "forecast for paris",
            "is it sunny in rome",
            "temperature outside now",
            "do I need an umbrella",
            "how windy is it today",
            "weather this weekend",
            "will it snow",
        ),
    ),
    RouteSpec(
        "music",
        (
            "play some jazz",
            "next song please",
            "turn up the volume",
            "play my workout playlist",
            "who sings this song",
            "pause the music",
            "shuffle my favourites",
            "play the new album",
        ),
    ),
    RouteSpec(
        "timer",
        (
            "set a timer for ten minutes",
            "wake me up at seven",
            "cancel my alarm",
            "how long is left on the timer",
            "set an alarm for 6 am",
            "remind me in an hour",
            "stop the timer",
            "snooze",
        ),
    ),
]


def test_other_languages_get_their_own_cut_and_are_not_taught_out_of_scope(encoder):
    from routecore.core.background import background_languages, parallel_rows

    # Routes made of the parallel set's English sentences: the head takes every one of them
    # for in scope, so each other language's cut is measured on all of them.
    en = [t for _, lang, t in parallel_rows() if lang == "en"]
    r = Router(
        [RouteSpec(f"r{k}", tuple(en[k::3])) for k in range(3)],
        encoder=encoder,
        policy=Policy(head="exemplars", prior=False),
    )
    langs = r.calibration.languages
    homes = {n for n, v in langs.items() if v.covered}
    assert homes == {"en"}
    st = r.calibration.stats.head
    # The out-of-scope class holds English background queries only.
    assert st is not None and st.background + st.background_dropped == sum(
        lang in homes for lang in background_languages()
    )
    cuts = {n: v.head_threshold for n, v in langs.items() if v.head_threshold is not None}
    assert {"fr", "zh"} <= set(cuts) and all(0 < t < 1 for t in cuts.values())
    # Those languages have the head's own numbers (tiers from rescored out-of-fold rows), no cosine ones.
    for n, v in langs.items():
        if n in cuts:
            assert v.offset == 0.0 and v.slope is None and v.head_slope is not None and 0 < v.head_slope
            assert v.medium is None or 0 < v.medium <= 1
        else:
            assert v.offset is None
    zh = next(
        t for i, lang, t in parallel_rows() if lang == "zh" and i == 16
    )  # "set a timer for twenty minutes"
    d = r.route(zh)
    assert any(
        a.kind == "language" and a.data.get("head_threshold") == pytest.approx(cuts["zh"]) for a in d.alerts
    )
    assert d.route in (None, "r1")
    # Routes that few parallel sentences fall in get no cut of their own (nothing to measure it on).
    small = Router(ASSISTANT, encoder=encoder, policy=Policy(head="exemplars"))
    d = small.route("明天会下雨吗")  # "will it rain tomorrow?"
    assert d.route == "weather" and d.action in ("route", "clarify")


def test_a_live_route_change_trains_the_head_again(encoder):
    routes = list(ASSISTANT)
    r = Router(routes, encoder=encoder, policy=Policy(head="exemplars"))
    before = r.head
    r.add_routes(
        [
            RouteSpec(
                "news",
                (
                    "what are today's headlines",
                    "latest news about the election",
                    "read me the news",
                    "any sports news",
                    "top stories this morning",
                    "news from france",
                ),
            )
        ]
    )
    assert r.head is not before and "news" in r.head.classes
    assert r.route("what are the headlines today").route == "news"
    # A tool change recomputes the zero-label calibration: the head comes back with its cuts.
    r.add_tools([ToolSpec("get_forecast", "the weather forecast for a city")])
    assert r.head is not None and r.calibration.min_score == 0.0 and r.calibration.stats.head is not None
    # A fitted calibration with a head still refuses (the head was cut on a validation split).
    r.calibrate(replace(r.calibration, source="fitted"))
    with pytest.raises(Exception, match="refit"):
        r.add_routes([RouteSpec("cooking", ("how do I boil an egg", "recipe for pancakes"))])


def test_folds_are_stratified_and_keep_single_rows_in_training():
    owners = np.array([0] * 9 + [1] * 4 + [2])
    f = _folds(owners, 4, seed=0)
    assert f[-1] == -1  # an owner with one row is always trained on
    for o in (0, 1):
        counts = np.bincount(f[owners == o], minlength=4)
        assert counts.max() - counts.min() <= 1  # every fold holds a share of every owner
    assert np.array_equal(f, _folds(owners, 4, seed=0))


def test_near_copies_share_a_fold():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((30, 16))
    # Rows 0..29 of route 0, and rows 30..39 near-copies of rows 0..9 (same route).
    V = np.vstack([base, base[:10] + 0.01 * rng.standard_normal((10, 16))]).astype(np.float32)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    owners = np.zeros(40, np.int64)
    g = _near_copy_groups(V, owners)
    assert all(g[i] == g[30 + i] for i in range(10))
    assert len(np.unique(g)) >= 4  # a row joins its nearest neighbour only, not every row above the cut
    f = _folds(owners, 4, 0, g)
    assert all(f[i] == f[30 + i] for i in range(10)) and set(f.tolist()) == {0, 1, 2, 3}


def test_a_broad_route_keeps_the_background_it_covers_out_of_the_out_of_scope_class(encoder):
    """The bundled background holds general-knowledge questions: for a config with a route of
    such questions, those as close to an exemplar as its nearest sibling are that route's, not
    out of scope, so its in-scope queries are not declined (issue 34 §1); the rest stay out."""
    facts = RouteSpec(
        "FACTS",
        (
            "who was the first president of the united states",
            "what is the capital of australia",
            "how tall is mount everest",
            "when did the second world war end",
            "who invented the telephone",
        ),
    )
    alarm = RouteSpec(
        "ALARM",
        (
            "set an alarm for 7 am",
            "wake me up at six tomorrow",
            "cancel my morning alarm",
            "change my alarm to 8",
            "what alarms do I have",
        ),
    )
    r = Router([facts, alarm], encoder=encoder)
    for q in ("when did the berlin wall fall", "how tall is the eiffel tower", "who invented the light bulb"):
        d = r.route(q)
        assert d.action == "route" and d.route == "FACTS", (q, d.reason)
    for q in ("recommend a good fantasy novel", "how do I bake bread", "tell me a joke"):
        d = r.route(q)
        assert d.action == "none" and d.reason.code == "out_of_scope", (q, d.reason)
