"""routecore.calibrate.language_fit: one language's numbers in a calibration, typed, and their
bundle form (the JSON object earlier bundles wrote)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore.calibrate.calibration_record import Calibration
from routecore.calibrate.language_fit import LanguageFit, language_fits_of
from routecore.calibrate.stats import TierCuts
from routecore.errors import ConfigError

_num = st.none() | st.floats(-2, 2, allow_nan=False)
_fit = st.builds(
    LanguageFit,
    centroid=st.lists(st.floats(-1, 1), min_size=1, max_size=8).map(tuple),
    covered=st.booleans(),
    detect_margin=_num,
    slope=_num,
    noise=_num,
    offset=_num,
    temperature=_num,
    medium=_num,
    high=_num,
    tool_offset=_num,
    support_offset=_num,
    head_threshold=_num,
)


def _cal(**languages: object) -> Calibration:
    return Calibration("zero-label", 0.02, 0.9, 0.1, 0.6, 0.9, 0.1, 0.8, 0.02, 0.9, 0.7, languages=languages)


@given(_fit)
def test_a_language_survives_its_bundle_form(fit):
    back = LanguageFit.from_dict(json.loads(json.dumps(fit.to_dict())))
    assert back == fit
    # Unset numbers are left out of the bundle, as earlier bundles wrote them.
    assert None not in fit.to_dict().values() and ("covered" in fit.to_dict()) == fit.covered


@given(st.dictionaries(st.sampled_from(["en", "fr", "zh"]), _fit, max_size=3))
def test_a_calibration_reads_its_languages_back(langs):
    cal = _cal(**langs)
    back = Calibration.from_dict(json.loads(json.dumps(cal.to_dict())))
    assert back.languages == cal.languages == langs
    assert all(isinstance(v, LanguageFit) for v in back.languages.values())


def test_the_dict_form_of_an_earlier_bundle_reads_into_fields():
    cal = _cal(
        en={"centroid": [1.0, 0.0], "covered": True},
        zh={"centroid": [0, 1], "detect_margin": 0.01, "offset": -0.05, "slope": 0.6, "high": 0.8},
    )
    zh = cal.languages["zh"]
    assert (zh.centroid, zh.covered, zh.offset, zh.high, zh.medium) == ((0.0, 1.0), False, -0.05, 0.8, None)
    assert cal.languages["en"].covered and not cal.languages["en"].adapted and zh.adapted
    assert zh.tier_changes() == {"high": 0.8}
    c = cal.for_language("zh")
    assert c.min_score == pytest.approx(0.75) and c.high == 0.8 and c.temperature == pytest.approx(0.012)


@pytest.mark.parametrize(
    "bad, says",
    [
        ({"centroid": [1.0], "offst": 0.1}, "unknown keys"),
        ({"offset": 0.1}, "centroid"),
        ({"centroid": "abc"}, "centroid must be a list of numbers"),
        ({"centroid": [1.0], "offset": float("nan")}, "offset must be a finite number"),
        ({"centroid": [1.0], "high": "0.9"}, "high must be a finite number"),
        ({"centroid": [1.0], "covered": 1}, "covered must be true or false"),
        ([1.0], "expected an object"),
    ],
)
def test_a_malformed_language_is_a_config_error(bad, says):
    with pytest.raises(ConfigError, match=says):
        _cal(fr=bad)


def test_languages_must_be_a_mapping_of_codes():
    with pytest.raises(ConfigError, match="mapping"):
        language_fits_of([("fr", {"centroid": [1.0]})])
    with pytest.raises(ConfigError, match="codes"):
        language_fits_of({1: {"centroid": [1.0]}})


def test_a_head_drops_the_cosine_numbers_and_sets_its_own_tiers():
    fit = LanguageFit((1.0,), offset=-0.1, slope=0.5, temperature=0.01, high=0.7, tool_offset=-0.02)
    bare = fit.without_cosine()
    assert (bare.offset, bare.slope, bare.temperature, bare.high, bare.tool_offset) == (
        None,
        None,
        None,
        None,
        -0.02,
    )
    assert bare.with_tiers(TierCuts(high=0.99, margin=0.1)).tier_changes() == {"high": 0.99, "margin": 0.1}
