"""What a fit leaves on a router: its JSON form round-trips, and a bad one is a ConfigError."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore.decide.figures import DecisionFigures
from routecore.decide.fitted import RoutedCut, RouteFit, ToolFit, fitted_from_dict
from routecore.errors import ConfigError

_rate = st.floats(0, 1)
_names = st.dictionaries(st.text(min_size=1, max_size=8), _rate, max_size=4)


@st.composite
def _route_fits(draw: st.DrawFn) -> RouteFit:
    n = draw(st.integers(1, 1000))
    right = draw(st.integers(0, n))
    routed = draw(_rate)
    figures = DecisionFigures(
        n=n,
        routed_share=routed,
        routed_accuracy=draw(st.none() | _rate),
        confident_wrong_rate=draw(_rate),
        clarify_rate=draw(_rate),
        none_rate=draw(_rate),
        right_of_routed=right,
        raw_top1_accuracy=draw(st.none() | _rate),
        dense_top1_accuracy=draw(st.none() | _rate),
    )
    return RouteFit(
        objective=draw(st.sampled_from(["accuracy", "macro_f1", "oos_f1"])),
        value=draw(_rate),
        min_score=draw(_rate),
        temperature=draw(st.floats(0.001, 1)),
        high=draw(_rate),
        margin=draw(_rate),
        per_route_min=draw(_names),
        head_threshold=draw(st.none() | _rate),
        head_tiers=draw(_names),
        decisions=draw(st.none() | st.builds(RoutedCut, _rate, _rate, st.just(figures))),
    )


@given(_route_fits())
def test_route_fit_round_trips_through_json(fit: RouteFit) -> None:
    back = fitted_from_dict(json.loads(json.dumps(fit.to_dict())))
    assert back == fit


def test_tool_fit_round_trips_and_keeps_its_stats() -> None:
    fit = ToolFit(0.42, "snowball", 0.5, 30, {"lexical_heldout_accuracy_fused": 0.8}, {"none/0.5": 0.7})
    d = fit.to_dict()
    assert d["tool_lexical_weight"] == 0.42 and d["lexical_heldout_accuracy_fused"] == 0.8
    assert fitted_from_dict(json.loads(json.dumps(d))) == fit


def test_an_empty_fit_is_none_and_a_foreign_one_is_refused() -> None:
    assert fitted_from_dict({}) is None and fitted_from_dict(None) is None
    with pytest.raises(ConfigError, match="neither a routes fit"):
        fitted_from_dict({"temperature": 0.05})
    with pytest.raises(ConfigError, match="'value' must be a number"):
        fitted_from_dict({"objective": "accuracy", "value": "high"})
    with pytest.raises(ConfigError, match="per_route_min"):
        fitted_from_dict(
            {
                "objective": "accuracy",
                "value": 1,
                "min_score": 0,
                "temperature": 0.1,
                "high": 0.9,
                "margin": 0.1,
                "per_route_min": [1, 2],
            }
        )


def test_fits_of_earlier_bundles_read_back_without_invented_values() -> None:
    # a tools fit from before the stemmer and BM25 b were fitted
    tool = fitted_from_dict({"tool_lexical_weight": 0.3, "val_rows": 10, "forms_val_top1": {}})
    assert isinstance(tool, ToolFit) and tool.stemmer is None and tool.b is None
    # a routes fit from before the counts and the none share were kept
    cut = {"medium": 0.5, "target_precision": 0.95, "routed_share": 0.7, "routed_accuracy": 0.97}
    old = {"objective": "accuracy", "value": 0.9, "min_score": 0.2, "temperature": 0.05, "high": 0.9}
    fit = fitted_from_dict(
        {**old, "margin": 0.1, "decisions": {**cut, "confident_wrong_rate": 0, "clarify_rate": 0.2}}
    )
    assert isinstance(fit, RouteFit) and fit.decisions is not None
    assert fit.decisions.figures.none_rate == pytest.approx(0.1)
    back = fit.to_dict()["decisions"]
    assert "n" not in back and "right_of_routed" not in back  # unknown, not 0
