"""The static tier of the cascade (issue 38): the static table's router decides when its own
zero-label calibration says high tier, the transformer otherwise, and every decision says which."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from conftest import MODELS, need_shared
from routecore.core.static_encoder import StaticEncoder
from routecore.decision import Decision
from routecore.errors import InvalidArgumentError, ModelError
from routecore.examples import __file__ as examples
from routecore.hub import models
from routecore.routers.cascade import Cascade
from routecore.routers.cascade_tools import Served, served

IT_OPS = Path(examples).parent / "it_ops_routes.yaml"
QUERIES = [
    "the production server is down again",
    "the VPN is broken",
    "how do I configure the proxy",
    "hello",
    "personne ne peut se connecter au wifi du bureau depuis midi",
    "qwzx plorf",
    "can you write a haiku about databases and also the vpn and lunch",
]


@pytest.fixture(scope="module")
def cascade(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cascade]:
    """MiniLM behind its static table, built on first use into an empty model cache."""
    minilm = str(need_shared(MODELS / "all-minilm-l6-v2"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROUTECORE_HOME", str(tmp_path_factory.mktemp("home")))
        with pytest.raises(ModelError):
            Cascade.static(IT_OPS, minilm)  # not built yet, and build is off
        c = Cascade.static(IT_OPS, minilm, build=True)
        assert (models.home() / "models" / "all-minilm-l6-v2-static" / "config.json").is_file()
        yield c


def alert_data(d: Decision) -> dict[str, object]:
    (alert,) = [a for a in d.alerts if a.kind == "cascade"]
    return dict(alert.data)


def tier(d: Decision) -> str:
    by = served(d)
    assert by is not None
    return by.encoder_tier


def test_the_fast_router_is_the_static_table(cascade: Cascade) -> None:
    assert isinstance(cascade.fast.encoder, StaticEncoder)
    assert not isinstance(cascade.strong.encoder, StaticEncoder)
    # its own zero-label calibration, not the transformer's
    assert cascade.fast.encoder.model_id != cascade.strong.encoder.model_id


def test_tier_choice(cascade: Cascade) -> None:
    with pytest.raises(InvalidArgumentError, match="counts must be integers"):
        cascade.served = {"fast": "many"}
    cascade.served = {}
    tiers = []
    for q in QUERIES:
        f, d = cascade.fast.route(q), cascade.route(q)
        data = alert_data(d)
        if f.action == "route" and f.tier == "high":
            assert served(d) == Served("fast", "static")
            assert (d.route, d.tier) == (f.route, f.tier)
        else:
            s = cascade.strong.route(q)
            assert served(d) == Served("strong", "transformer")
            assert (d.action, d.route) == (s.action, s.route)
            assert data["fast_tier"] == f.tier and data["fast_action"] == f.action
        tiers.append(tier(d))
    assert "static" in tiers and "transformer" in tiers, tiers  # both tiers are exercised
    assert cascade.served["fast"] == tiers.count("static")


def test_batch_matches_single_calls(cascade: Cascade) -> None:
    one = [cascade.route(q) for q in QUERIES]
    many = cascade.route_batch(QUERIES)
    assert [(d.action, d.route, tier(d)) for d in many] == [(d.action, d.route, tier(d)) for d in one]


def test_an_exemplar_is_served_statically(cascade: Cascade) -> None:
    d = cascade.route("the production server is down again")
    assert tier(d) == "static" and d.route == "INCIDENT"
