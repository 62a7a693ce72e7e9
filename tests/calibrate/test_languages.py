"""Queries in a language the routes were not written in get their own cut and temperature
(the cosine softmax's; tests/calibrate/test_exemplar_head.py covers the head's per-language cuts)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from routecore import Router
from routecore.calibrate.calibration import Calibration
from routecore.calibrate.languages import LanguageDetector, adapted, centroids, fit_languages, transfer
from routecore.calibrate.stats import TierCuts
from routecore.config.specs import RouteSpec, ToolSpec
from routecore.core.background import background_languages, background_vectors
from routecore.decide.policy import Policy

ROUTES = [
    RouteSpec(
        "weather",
        (
            "what's the weather like tomorrow",
            "will it rain this afternoon",
            "how hot will it be today",
            "is it going to snow this weekend",
            "do I need an umbrella today",
            "what is the forecast for Paris",
        ),
    ),
    RouteSpec(
        "alarm",
        (
            "wake me up at seven",
            "set an alarm for 6 am",
            "cancel my morning alarm",
            "turn off all alarms",
            "snooze the alarm for ten minutes",
            "change my alarm to 8:30",
        ),
    ),
    RouteSpec(
        "music",
        (
            "play some jazz",
            "put on my workout playlist",
            "skip this song",
            "turn the music up",
            "play the latest album by Adele",
            "shuffle my favourite songs",
        ),
    ),
    RouteSpec(
        "email",
        (
            "read my new emails",
            "send an email to my boss",
            "did I get any mail from Anna",
            "reply to the last email",
            "delete the spam in my inbox",
            "forward this email to Tom",
        ),
    ),
]

COSINE = Policy(head="off")


@pytest.fixture(scope="module")
def english(encoder):
    return Router(ROUTES, encoder=encoder, policy=COSINE)


def test_background_languages_are_detected(encoder):
    B, langs = background_vectors(encoder), background_languages()
    names, C = centroids(B, langs)
    det = LanguageDetector(names, C, np.zeros(len(names), bool), np.zeros(len(names), np.float32))
    assert set(names) >= {"en", "fr", "zh"}
    hits = np.array(det.detect_many(B)) == np.array(langs)
    assert hits.mean() >= 0.9


def test_detection_needs_a_margin_over_the_covered_languages():
    e = np.eye(3, dtype=np.float32)
    C = e.copy()
    det = LanguageDetector(
        ("en", "fr", "zh"), C, np.array([True, False, False]), np.array([0.0, 0.3, 0.3], np.float32)
    )
    q = lambda *x: np.array(x, np.float32)  # noqa: E731
    assert det.detect(q(0.5, 0.7, 0.0)) == "en"  # nearer fr, but not by 0.3
    assert det.detect(q(0.2, 0.9, 0.0)) == "fr" and det.detect(q(0.9, 0.1, 0.0)) == "en"
    assert det.detect_many(np.stack([q(0.0, 0.1, 0.9), q(0.5, 0.0, 0.6)])) == ["zh", "en"]
    X = np.random.default_rng(0).normal(size=(500, 3)).astype(np.float32)
    assert [det.detect(x) for x in X] == det.detect_many(X)  # the one-vector path agrees


def test_english_routes_adapt_other_languages_only(english):
    langs = english.calibration.languages
    assert set(langs) >= {"en", "fr", "zh", "es", "de", "vi", "ja"} and all(
        len(v.centroid) == 384 for v in langs.values()
    )
    assert [n for n, v in langs.items() if v.covered] == ["en"] and langs["zh"].detect_margin >= 0
    assert set(adapted(langs)) == {"fr", "zh", "es", "de", "vi"}  # the parallel set's languages but English
    # The same sentences in Chinese score lower against English routes, with narrower gaps.
    zh = langs["zh"]
    assert zh.offset < 0 and 0 < zh.slope < 1 and zh.noise > 0
    assert None not in (zh.temperature, zh.high, zh.margin)  # 24 held-out rows: no `medium` cut reaches 90 %
    c = english.calibration.for_language("zh")
    assert c.min_score == pytest.approx(english.calibration.min_score + zh.offset) and c.languages == {}
    assert (c.temperature, c.scale, c.high) == (zh.temperature, zh.temperature, zh.high)
    assert c.medium == (zh.medium if zh.medium is not None else english.calibration.medium)


def test_decision_says_which_language_policy_decided(english):
    d = english.route("明天会下雨吗")  # "will it rain tomorrow"
    alert = [a for a in d.alerts if a.kind == "language"]
    assert alert and alert[0].data["language"] == "zh"
    assert alert[0].data["min_score"] < english.policy.min_score
    assert d.route == "weather" or d.action == "clarify"
    en = english.route("will it rain tomorrow")
    assert not [a for a in en.alerts if a.kind == "language"]
    # The batch and the vector paths decide the same way.
    b = english.route_batch(["明天会下雨吗"])[0]
    assert (b.action, b.route, b.confidence) == (d.action, d.route, pytest.approx(d.confidence))


def test_chinese_query_passes_a_cut_fitted_on_english(english, encoder):
    q = encoder.encode_with_stats(["请把闹钟设在早上七点"]).embeddings[0]  # "set the alarm for 7 am"
    p, lang = english.route_table.policy_for(q)
    assert lang == "zh" and p.min_score < english.policy.min_score
    assert p.temperature <= english.policy.temperature  # (both may sit on the grid's floor, 0.005)


def test_explicit_values_win_over_the_language(encoder):
    r = Router(ROUTES, encoder=encoder, policy=Policy(min_score=0.5, temperature=0.02, head="off"))
    q = encoder.encode_with_stats(["明天会下雨吗"]).embeddings[0]
    p, lang = r.route_table.policy_for(q)
    assert lang == "zh" and (p.min_score, p.temperature) == (0.5, 0.02)
    zh = r.calibration.languages["zh"]
    assert p.margin == zh.margin != r.policy.margin  # what was not pinned follows the language


def test_a_policy_set_by_hand_is_used_for_every_language(encoder):
    r = Router(ROUTES, encoder=encoder, policy=COSINE)
    r.policy = replace(r.policy, min_score=0.2)
    d = r.route("明天会下雨吗")
    assert not [a for a in d.alerts if a.kind == "language"]
    # calibrate() puts the languages back.
    r.calibrate(r.calibration)
    assert [a for a in r.route("明天会下雨吗").alerts if a.kind == "language"]


def test_mixed_config_covers_both_languages(encoder):
    r = Router(
        [
            RouteSpec(
                "weather",
                ROUTES[0].utterances
                + (
                    "quel temps fera-t-il demain",
                    "va-t-il pleuvoir cet après-midi",
                    "fera-t-il chaud aujourd'hui",
                    "prévisions météo pour Lyon",
                ),
            ),
            RouteSpec(
                "alarm",
                ROUTES[1].utterances
                + (
                    "réveille-moi à sept heures",
                    "mets une alarme à 6 h",
                    "annule mon réveil",
                    "éteins toutes les alarmes",
                ),
            ),
        ],
        encoder=encoder,
    )
    langs = r.calibration.languages
    assert "fr" not in adapted(langs) and "en" not in adapted(langs)
    assert not [a for a in r.route("quel temps fait-il à Nantes").alerts if a.kind == "language"]


def test_bundle_keeps_the_languages(tmp_path, english, encoder):
    english.save(tmp_path / "b")
    back = Router.load(tmp_path / "b", encoder=encoder)
    assert back.calibration.languages == english.calibration.languages
    a, b = english.route("明天会下雨吗"), back.route("明天会下雨吗")
    assert (a.action, a.route, a.alerts[-1].data) == (b.action, b.route, b.alerts[-1].data)


def test_for_language_moves_cuts_and_scales():
    cal = Calibration(
        "zero-label",
        0.01,
        0.9,
        0.1,
        0.5,
        0.8,
        0.1,
        0.9,
        0.01,
        0.95,
        0.85,
        per_route={"A": {"min_score": 0.92, "high": 0.95}},
        languages={
            "en": {"centroid": [1.0, 0.0]},
            "zh": {
                "centroid": [0.0, 1.0],
                "offset": -0.05,
                "slope": 0.5,
                "noise": 0.01,
                "temperature": 0.006,
                "medium": 0.7,
            },
            "vi": {"centroid": [0.6, 0.8], "offset": -0.02, "slope": 0.5, "noise": 0.01},
        },
    )
    assert cal.for_language("en") is cal and cal.for_language("xx") is cal
    zh = cal.for_language("zh")
    assert zh.min_score == pytest.approx(0.85) and zh.temperature == 0.006 and zh.scale == 0.006
    assert (zh.medium, zh.high, zh.margin) == (0.7, 0.9, 0.1)  # what the language did not fit stays
    assert zh.per_route["A"].to_dict() == {"high": 0.95, "min_score": pytest.approx(0.87)}
    vi = cal.for_language("vi")  # no held-out rows to refit on: the temperature follows the slope
    assert vi.temperature == pytest.approx(0.005) and vi.medium == 0.5
    assert Calibration.from_dict(cal.to_dict()) == cal
    old = cal.to_dict()
    del old["languages"]  # a bundle from before languages: nothing adapted
    assert Calibration.from_dict(old).languages == {}


def test_transfer_reads_slope_noise_and_offset():
    rng = np.random.default_rng(0)
    H = rng.uniform(0.7, 0.9, size=(30, 12))
    slope, noise, offset = transfer(H, 0.5 * H + 0.2)
    assert slope == pytest.approx(0.5) and noise == pytest.approx(0.0, abs=1e-9)
    assert offset == pytest.approx(np.median(0.5 * H.max(axis=1) + 0.2 - H.max(axis=1)))
    _, noisy, _ = transfer(H, 0.5 * H + rng.normal(0, 0.01, H.shape))
    assert 0.007 < noisy < 0.013


def test_fit_languages_needs_pairs_and_a_covered_language():
    rng = np.random.default_rng(0)
    unit = lambda X: (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)  # noqa: E731
    e = np.eye(8, dtype=np.float32)
    V = unit(3 * e[0] + rng.normal(size=(12, 8)))  # exemplars: all "en" (near e0)
    B = unit(np.concatenate([3 * e[0] + rng.normal(size=(3, 8)), 3 * e[1] + rng.normal(size=(9, 8))]))
    langs = ["en"] * 3 + ["zh"] * 9
    rows = [(i, lang, "") for i in range(10) for lang in ("en", "zh")]
    en, zh = V[:10], unit(V[:10] + 2 * e[1])  # the "translations" lean towards e1
    P = np.stack([x for pair in zip(en, zh) for x in pair])
    PS = P @ V[:4].T
    out = fit_languages(V, B, langs, P, rows, PS, lambda s, n: (0.01, TierCuts(high=0.9)))
    assert set(out) == {"en", "zh"} and out["en"].offset is None
    assert (out["zh"].temperature, out["zh"].high, out["zh"].medium) == (0.01, 0.9, None)
    assert out["zh"].slope > 0
    few = fit_languages(V, B, langs, P[:14], rows[:14], PS[:14], None)
    assert few["zh"].offset is None  # 7 pairs < MIN_PAIRS
    assert fit_languages(V[:0], B, langs, P, rows, PS, None) == {}
    assert fit_languages(V, B, langs[:-1], P, rows, PS, None) == {}


TOOLS = [
    ToolSpec(
        "get_weather",
        "Weather forecast for a city",
        success_examples=("will it rain tomorrow", "forecast for Berlin"),
    ),
    ToolSpec(
        "set_alarm", "Set or cancel an alarm", success_examples=("wake me up at six", "cancel my alarm")
    ),
    ToolSpec(
        "play_music", "Play songs, albums or playlists", success_examples=("play some jazz", "skip this song")
    ),
    ToolSpec("send_email", "Send or read emails", success_examples=("email my boss", "read my new mail")),
    ToolSpec(
        "book_taxi", "Book a taxi or a ride", success_examples=("get me a cab to the station", "book an uber")
    ),
]


def test_tool_floor_follows_the_query_language(encoder):
    r = Router(ROUTES, TOOLS, encoder=encoder)
    zh = r.calibration.languages["zh"]
    assert zh.tool_offset < 0
    belt = r.tools("明天柏林会下雨吗")  # "will it rain in Berlin tomorrow"
    alert = [a for a in belt.alerts if a.kind == "language"]
    assert alert and alert[0].data["tool_threshold"] == pytest.approx(
        r.policy.tool_threshold + zh.tool_offset
    )
    assert not [a for a in r.tools("will it rain in Berlin tomorrow").alerts if a.kind == "language"]
    # An explicit floor is the caller's: no language moves it.
    pinned = Router(ROUTES, TOOLS, encoder=encoder, policy=Policy(tool_threshold=0.8))
    assert not [a for a in pinned.tools("明天柏林会下雨吗").alerts if a.kind == "language"]
    assert not [a for a in r.tools("明天柏林会下雨吗", threshold=0.8).alerts if a.kind == "language"]


def test_one_exemplar_read_as_another_language_does_not_make_a_config_bilingual() -> None:
    """The detector takes "the app will not load" for French: one exemplar in twenty of an English
    config must not cover French (the pair's cuts hold for English configs only); two do."""
    from routecore.calibrate.languages import covered

    V = np.eye(3, dtype=np.float32)[[0] * 19 + [1]]  # 19 rows nearest "en", one nearest "fr"
    names, C = ("en", "fr", "zh"), np.eye(3, dtype=np.float32)
    assert covered(V, names, C) == {"en"}
    assert covered(np.vstack([V, V[-1:]]), names, C) == {"en", "fr"}
    assert covered(V[-1:], names, C) == {"fr"}  # a config of one exemplar: its language
    assert covered(V[:0], names, C) == set()
    r = Router(
        [
            RouteSpec("A", ("the app will not load", "it crashed again", "the page is blank")),
            RouteSpec("B", ("where is my parcel", "track my order", "my package is late")),
        ]
    )
    assert [n for n, v in r.calibration.languages.items() if v.covered] == ["en"]
