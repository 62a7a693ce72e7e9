"""Queries in a language the routes were not written in get their own cut and temperature."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from routecore import Router
from routecore.background import background_languages, background_vectors
from routecore.calibration import Calibration
from routecore.languages import LanguageDetector, adapted, centroids, fit_languages
from routecore.policy import Policy
from routecore.specs import RouteSpec

ROUTES = [
    RouteSpec("weather", ("what's the weather like tomorrow", "will it rain this afternoon", "how hot will it be today",
                          "is it going to snow this weekend", "do I need an umbrella today", "what is the forecast for Paris")),
    RouteSpec("alarm", ("wake me up at seven", "set an alarm for 6 am", "cancel my morning alarm",
                        "turn off all alarms", "snooze the alarm for ten minutes", "change my alarm to 8:30")),
    RouteSpec("music", ("play some jazz", "put on my workout playlist", "skip this song",
                        "turn the music up", "play the latest album by Adele", "shuffle my favourite songs")),
    RouteSpec("email", ("read my new emails", "send an email to my boss", "did I get any mail from Anna",
                        "reply to the last email", "delete the spam in my inbox", "forward this email to Tom")),
]


@pytest.fixture(scope="module")
def english(encoder):
    return Router(ROUTES, encoder=encoder)


def test_background_languages_are_detected(encoder):
    B, langs = background_vectors(encoder), background_languages()
    names, C = centroids(B, langs)
    det = LanguageDetector(names, C)
    assert set(names) >= {"en", "fr", "zh"}
    hits = np.array(det.detect_many(B)) == np.array(langs)
    assert hits.mean() >= 0.9


def test_english_routes_adapt_other_languages_only(english):
    langs = english.calibration.languages
    assert langs["en"]["offset"] == 0.0 and langs["en"]["ratio"] == 1.0
    assert "zh" in adapted(langs) and "en" not in adapted(langs)
    # Unrelated Chinese sentences score lower against English routes than unrelated English ones.
    assert langs["zh"]["offset"] < 0
    zh = english.calibration.for_language("zh")
    assert zh.min_score < english.calibration.min_score and zh.languages == {}
    assert zh.temperature == pytest.approx(english.calibration.temperature * langs["zh"]["ratio"])


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
    assert p.temperature < english.policy.temperature


def test_explicit_values_win_over_the_language(encoder):
    r = Router(ROUTES, encoder=encoder, policy=Policy(min_score=0.5))
    q = encoder.encode_with_stats(["明天会下雨吗"]).embeddings[0]
    p, lang = r.route_table.policy_for(q)
    assert lang == "zh" and p.min_score == 0.5 and p.temperature != r.policy.temperature


def test_a_policy_set_by_hand_is_used_for_every_language(encoder):
    r = Router(ROUTES, encoder=encoder)
    r.policy = replace(r.policy, min_score=0.2)
    d = r.route("明天会下雨吗")
    assert not [a for a in d.alerts if a.kind == "language"]
    # calibrate() puts the languages back.
    r.calibrate(r.calibration)
    assert [a for a in r.route("明天会下雨吗").alerts if a.kind == "language"]


def test_mixed_config_covers_both_languages(encoder):
    r = Router([RouteSpec("weather", ROUTES[0].utterances + ("quel temps fera-t-il demain", "va-t-il pleuvoir cet après-midi",
                                                          "fera-t-il chaud aujourd'hui", "prévisions météo pour Lyon")),
                RouteSpec("alarm", ROUTES[1].utterances + ("réveille-moi à sept heures", "mets une alarme à 6 h",
                                                        "annule mon réveil", "éteins toutes les alarmes"))], encoder=encoder)
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
    cal = Calibration("zero-label", 0.01, 0.9, 0.1, 0.5, 0.8, 0.1, 0.9, 0.01, 0.95, 0.85,
                      per_route={"A": {"min_score": 0.92, "high": 0.95}},
                      languages={"en": {"centroid": [1.0, 0.0], "offset": 0.0, "ratio": 1.0},
                                 "zh": {"centroid": [0.0, 1.0], "offset": -0.05, "ratio": 0.5}})
    assert cal.for_language("en") is cal and cal.for_language("xx") is cal
    zh = cal.for_language("zh")
    assert zh.min_score == pytest.approx(0.85) and zh.temperature == pytest.approx(0.005) and zh.scale == pytest.approx(0.005)
    assert zh.per_route == {"A": {"min_score": pytest.approx(0.87), "high": 0.95}}
    assert Calibration.from_dict(cal.to_dict()) == cal
    old = cal.to_dict()
    del old["languages"]  # a bundle from before languages: nothing adapted
    assert Calibration.from_dict(old).languages == {}


def test_fit_languages_without_covered_background_is_neutral():
    rng = np.random.default_rng(0)
    V = rng.normal(size=(12, 8)).astype(np.float32)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    B = np.concatenate([V[:3] + 0.01, -V[:9]]).astype(np.float32)
    langs = ["en"] * 3 + ["zh"] * 9
    S = B @ V.T
    out = fit_languages(V, B, langs, np.stack([S[:, i::3].max(axis=1) for i in range(3)], axis=1))
    assert set(out) == {"en", "zh"} and all(len(v["centroid"]) == 8 for v in out.values())
    assert fit_languages(V[:0], B, langs, S[:, :0]) == {}
    assert fit_languages(V, B, langs[:-1], S) == {}
