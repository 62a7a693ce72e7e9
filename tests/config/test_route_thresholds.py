"""A route's own thresholds are typed (routecore.config.specs.RouteThresholds) wherever they go: route
specs, Policy.per_route, a fit's per-route cuts, bundles; their JSON form stays a mapping of set values."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore.calibrate.calibration_record import Calibration
from routecore.config.specs import ROUTE_THRESHOLD_KEYS, RouteSpec, RouteThresholds
from routecore.decide.policy import Policy
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.router import Router
from stubs import StubEncoder, unit

values = st.dictionaries(st.sampled_from(ROUTE_THRESHOLD_KEYS), st.floats(0, 1))


@given(values)
def test_the_json_form_is_the_set_values_and_reads_back(d):
    th = RouteThresholds.of(d)
    assert th.to_dict() == d and RouteThresholds.of(json.loads(json.dumps(th.to_dict()))) == th
    assert bool(th) == bool(d) and all(th.get(k) == d.get(k) for k in ROUTE_THRESHOLD_KEYS)


@given(values, values)
def test_over_keeps_the_base_where_it_is_unset(top, base):
    merged = RouteThresholds.of(top).over(RouteThresholds.of(base))
    assert merged.to_dict() == {**base, **top}


@pytest.mark.parametrize(
    "bad,match",
    [
        ({"hgh": 0.5}, "hgh"),
        ({"high": 1.5}, "high"),
        ({"min_score": "x"}, "min_score"),
        ({"high": True}, "high"),
    ],
)
def test_bad_thresholds_are_config_errors_wherever_given(bad, match):
    with pytest.raises(ConfigError, match=match):
        RouteThresholds.of(bad)
    with pytest.raises(ConfigError, match=match):
        RouteSpec("A", ("x",), thresholds=bad)
    with pytest.raises(ConfigError, match=match):
        Policy(per_route={"A": bad})
    with pytest.raises(ConfigError):
        RouteThresholds(high=2.0)
    with pytest.raises(KeyError) as e:  # an UnknownKeyError: a RoutecoreError and a KeyError
        RouteThresholds().get("temperature")
    assert isinstance(e.value, InvalidArgumentError)
    assert str(e.value).startswith("route thresholds have no 'temperature': one of high")  # not quoted


def test_mappings_are_read_as_thresholds_and_saved_as_before(tmp_path):
    p = Policy(per_route={"A": {"high": 0.6}})
    assert p.per_route["A"] == RouteThresholds(high=0.6) and p.value("high", "A") == 0.6
    assert p.to_dict()["routes"]["per_route"] == {"A": {"high": 0.6}}
    assert Policy.from_dict(p.to_dict()).per_route == p.per_route
    cal_route = Calibration.from_dict({**_calibration().to_dict(), "per_route": {"A": {"min_score": 0.2}}})
    assert cal_route.per_route["A"].min_score == 0.2 and cal_route.to_dict()["per_route"] == {
        "A": {"min_score": 0.2}
    }
    spec = RouteSpec("A", ("x",), thresholds={"medium": 0.3})
    assert spec.thresholds == RouteThresholds(medium=0.3)
    r = Router([spec, RouteSpec("B", ("y",))], encoder=StubEncoder({"x": unit(0), "y": unit(1)}))
    r.save(tmp_path / "b")
    saved = json.loads((tmp_path / "b" / "bundle.json").read_text())
    assert saved["routes"][0]["thresholds"] == {"medium": 0.3}
    back = Router.load(tmp_path / "b", encoder=r.encoder)
    assert back.route_specs[0].thresholds == RouteThresholds(medium=0.3)
    assert back.policy.thresholds("A", continuing=False)[2] == 0.3


def _calibration() -> Calibration:
    import numpy as np

    from routecore.calibrate.calibration import background_vectors, zero_label

    enc = StubEncoder({"x": unit(0)})
    return zero_label(np.zeros((0, enc.dim), np.float32), [], 0, background_vectors(enc))
