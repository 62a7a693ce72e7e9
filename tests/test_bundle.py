"""Router bundles: saved embeddings, no re-embedding, model check."""

from __future__ import annotations

import pytest
from stubs import StubEncoder, mix, unit, manual

from routecore.errors import ConfigError
from routecore.router import Router
from routecore.specs import RouteSpec, ToolSpec


def test_bundle_round_trip_without_reembedding(tmp_path):
    enc = StubEncoder({"a": unit(0), "b": unit(1), "t": unit(2), "anti": unit(3), "q": mix(a0=0.9, a1=0.2)})
    r = Router([RouteSpec("A", ("a",)), RouteSpec("B", ("b",))], [ToolSpec("T", "t", anti_patterns=("anti",))], encoder=enc, policy=manual(high=0.8))
    r.save(tmp_path / "bundle", fitted={"temperature": 0.05})
    calls = enc.calls
    back = Router.load(tmp_path / "bundle", encoder=enc)
    assert enc.calls == calls  # nothing re-embedded
    assert back.policy.high == 0.8 and back.fitted == {"temperature": 0.05}
    assert back.route("q").route == r.route("q").route == "A"
    assert back.route("q").probabilities == pytest.approx(r.route("q").probabilities)


def test_bundle_from_another_model_is_refused(tmp_path):
    enc = StubEncoder({"a": unit(0)})
    Router([RouteSpec("A", ("a",))], encoder=enc).save(tmp_path / "b")
    with pytest.raises(ConfigError, match="made with model stub:1"):
        Router.load(tmp_path / "b", encoder=StubEncoder({}, model_id="other:2"))
    with pytest.raises(ConfigError, match="not a router bundle"):
        Router.load(tmp_path / "nothing", encoder=enc)
