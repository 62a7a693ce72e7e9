"""routecore.calibrate.stats: the typed records of a calibration's measurements, their bundle form
and the flat form of earlier bundles."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore import Router
from routecore.calibrate.calibration_record import Calibration
from routecore.calibrate.stats import (
    TEMPERATURE_CONSTANT,
    CalibrationStats,
    HeadStats,
    TierCuts,
)
from routecore.errors import ConfigError

_opt = st.none() | st.floats(0, 1)
_stats = st.builds(
    CalibrationStats,
    routes=st.integers(0, 10_000),
    held_out=st.integers(0, 10_000),
    top1_dense=_opt,
    exemplars_per_route=_opt,
    tiers_fallback=st.booleans(),
    temperature_fallback=st.none() | st.just(TEMPERATURE_CONSTANT),
    match_fallback=st.none() | st.text(max_size=20),
    lexical=st.dictionaries(st.sampled_from(["lexical_weight", "lexical_gain"]), st.floats(0, 1)),
    head=st.none()
    | st.builds(HeadStats, rows=st.integers(0, 100), threshold=st.floats(0, 1), prior=st.none()),
)


@given(_stats)
def test_stats_survive_their_bundle_form(stats):
    # to_dict is what a bundle writes (JSON): the record reads back equal
    assert CalibrationStats.from_dict(json.loads(json.dumps(stats.to_dict()))) == stats


def test_a_flat_mapping_of_an_earlier_bundle_is_read_into_its_fields():
    flat = {
        "background": 900,
        "held_out": 12,
        "routes": 4,
        "top1_dense": 0.8,
        "exemplars_per_route": 5.0,
        "tiers_fallback": True,
        "temperature_fallback": True,  # the constant, as a flag
        "lexical_weight_grid": 3.0,
        "fit_objective": "precision",
        "validation_decisions": {"routed": 0.7},
        "tools_lexical_heldout_accuracy_fused": 0.5,
        "head": {"rows": 20, "threshold": 0.1, "folds": 4, "cuts_fallback": True, "skipped": "too few"},
    }
    s = CalibrationStats.from_dict(flat)
    assert (s.background, s.held_out, s.routes, s.top1_dense) == (900, 12, 4, 0.8)
    assert s.tiers_fallback and s.temperature_fallback == TEMPERATURE_CONSTANT
    assert s.lexical == {"lexical_weight_grid": 3.0}
    assert not hasattr(s, "fit")  # the fit's record: the bundle's `fitted` (routecore.decide.fitted)
    assert s.head == HeadStats(rows=20, threshold=0.1, folds=4, cuts_fallback=True, skipped="too few")
    # a Calibration given a mapping (a bundle's) holds the record
    cal = Calibration("zero-label", 0.02, 0.85, 0.15, 0.5, 0.7, 0.1, 0.3, 0.02, 0.9, 0.8, stats=flat)
    assert cal.stats == s and Calibration.from_dict(cal.to_dict()) == cal


@pytest.mark.parametrize(
    "bad", [{"held_outt": 3}, {"head": {"rowz": 1}}, ["held_out"], {"head": "skipped"}], ids=repr
)
def test_unknown_stats_are_a_config_error(bad):
    with pytest.raises(ConfigError):
        CalibrationStats.from_dict(bad)


def test_tier_cuts_change_only_what_they_set():
    cal = Calibration("prior", 0.02, 0.85, 0.15, 0.5, 0.7, 0.1, 0.3, 0.02, 0.9, 0.8)
    cuts = TierCuts(medium=0.6, high=0.9)
    assert cuts.changes() == {"medium": 0.6, "high": 0.9}
    moved = replace(cal, **cuts.changes())
    assert (moved.medium, moved.high, moved.margin, moved.previous_high) == (0.6, 0.9, 0.15, 0.7)


def test_a_saved_router_keeps_its_stats(it_ops_router, encoder, tmp_path):
    it_ops_router.save(tmp_path / "b")
    loaded = Router.load(tmp_path / "b", encoder=encoder)
    assert loaded.calibration is not None and it_ops_router.calibration is not None
    assert loaded.calibration.stats == it_ops_router.calibration.stats
    head = loaded.calibration.stats.head
    # the bundled model's prior set the head's cuts: its source and goal are recorded
    assert head is not None and head.prior and head.folds == 0
