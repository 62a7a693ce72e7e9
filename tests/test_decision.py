"""Decision objects: what to_dict writes, from_dict reads back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from routecore import Router
from routecore.decision import Decision, ScoreMap
from routecore.errors import InvalidArgumentError
from routecore.examples import __file__ as examples


@pytest.fixture(scope="module")
def decision(encoder):
    r = Router.from_config(Path(examples).parent / "it_ops_routes.yaml", encoder=encoder)
    return r.route("où en est l'incident INC20502218 sur Kafka")


def test_from_dict_reads_back_to_dict(decision):
    d = decision.to_dict()
    back = Decision.from_dict(d)
    assert back.to_dict() == d
    assert back.entities == decision.entities and back.timings == decision.timings
    assert back.top_exemplars == decision.top_exemplars and back.alerts == decision.alerts
    again = Decision.from_dict(json.loads(decision.to_json()))  # through JSON, as a sidecar client gets it
    assert (again.action, again.route, again.tier, again.entities) == (
        decision.action,
        decision.route,
        decision.tier,
        decision.entities,
    )


def test_from_dict_names_what_is_wrong(decision):
    d = decision.to_dict()
    with pytest.raises(InvalidArgumentError, match="unknown keys \\['bogus'\\]"):
        Decision.from_dict({**d, "bogus": 1})
    with pytest.raises(
        InvalidArgumentError, match=r"missing keys \['confidence', 'margin'\]"
    ):  # named, not __init__'s
        Decision.from_dict({k: v for k, v in d.items() if k not in ("confidence", "margin")})
    with pytest.raises(InvalidArgumentError, match="tier"):
        Decision.from_dict({k: v for k, v in d.items() if k != "tier"})
    with pytest.raises(InvalidArgumentError, match="mapping"):
        Decision.from_dict([("action", "route")])  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        Decision.from_dict({**d, "entities": [{"kind": "x"}]})
    with pytest.raises(InvalidArgumentError, match="reason must be a mapping"):
        Decision.from_dict({**d, "reason": "x"})


def test_a_score_maps_values_for_names_in_any_order():
    names = ["A", "B", "C"]
    m = ScoreMap(names, np.array([0.5, 0.3, 0.2], dtype=np.float32))
    same = m.values_for(list(names))
    assert same.dtype == np.float64 and np.allclose(same, [0.5, 0.3, 0.2])
    assert np.allclose(m.values_for(["C", "A", "Z"]), [0.2, 0.5, 0.0])  # reordered; unknown reads 0
    same[0] = 9.0  # the result is the caller's: the map does not change
    assert m["A"] == pytest.approx(0.5)


def test_json_writes_scores_that_are_not_finite_as_null_and_reads_them_back():
    d = Decision(
        "clarify", None, "low", 0.6, 0.2, {"A": 0.6, "B": 0.4}, {"A": 0.8, "B": 0.7}, {"A": 0.8, "B": -np.inf}
    )
    text = d.to_json()
    assert "Infinity" not in text and json.loads(text)["adjusted_scores"] == {"A": 0.8, "B": None}
    back = Decision.from_dict(json.loads(text))
    assert back.adjusted_scores == {"A": 0.8, "B": -np.inf} and back.to_json() == text


def test_a_belt_with_scores_that_are_not_finite_survives_json():
    from routecore.decision import Reason, ToolBelt, ToolChoice

    core = ToolChoice("ask_user", "core", -np.inf, -np.inf, Reason("core", "a core tool: in every belt"))
    belt = ToolBelt((core,), scores={"ask_user": -np.inf, "x": 0.5}, reason=Reason("no_tool", "none"))
    text = belt.to_json()
    assert "Infinity" not in text and json.loads(text)["tools"][0]["score"] is None
    back = ToolBelt.from_dict(json.loads(text))
    assert back.tools == belt.tools and back.scores == {"ask_user": -np.inf, "x": 0.5}
