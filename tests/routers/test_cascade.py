"""The encoder cascade: MiniLM decides first, the bundled e5 only when it must."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import MODELS, need_shared
from routecore import Encoder, Router
from routecore.config.specs import RouteSpec
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.examples import __file__ as examples
from routecore.llm.llm import OpenAICompatibleRouter
from routecore.routers.cascade import Cascade

IT_OPS = Path(examples).parent / "it_ops_routes.yaml"


@pytest.fixture(scope="module")
def cascade():
    return Cascade.from_config(IT_OPS, fast_model=str(need_shared(MODELS / "all-minilm-l6-v2")))


def test_high_tier_fast_decisions_are_served_and_the_rest_escalate(cascade):
    easy = "the production server is down again"  # close to an English exemplar
    d = cascade.route(easy)
    fast = cascade.fast.route(easy)
    assert fast.action == "route" and fast.tier == "high"
    served = [a for a in d.alerts if a.kind == "cascade"]
    assert served[0].data["served_by"] == "fast" and d.route == fast.route
    hard = "personne ne peut se connecter au wifi du bureau depuis midi"  # French: MiniLM is English-only
    f = cascade.fast.route(hard)
    assert not (f.action == "route" and f.tier == "high")
    e = cascade.route(hard)
    assert [a.data["served_by"] for a in e.alerts if a.kind == "cascade"] == ["strong"]
    assert (e.action, e.route) == (cascade.strong.route(hard).action, cascade.strong.route(hard).route)
    t = e.timings  # both encoders' time, added part by part (not compared with another call's clock)
    assert t.total >= t.tokenize + t.encode and t.total >= t.score + t.policy and t.encode > 0
    assert cascade.served["fast"] >= 1 and cascade.served["strong"] >= 1 and 0 < cascade.fast_share < 1


def test_a_bilingual_config_is_not_combined_by_default(cascade):
    # IT-ops is written in English and French: the pair's prior was measured on English configs.
    assert cascade.combine is False


def test_cascade_checks_its_routers(cascade, encoder):
    other = Router([RouteSpec("A", ("x", "y"))], encoder=encoder)
    with pytest.raises(ConfigError, match="same routes"):
        Cascade(cascade.fast, other)
    with_llm = Router(
        cascade.strong.route_specs,
        encoder=Encoder.load(str(MODELS / "all-minilm-l6-v2")),
        llm=OpenAICompatibleRouter("http://127.0.0.1:9/v1", "m", timeout=0.5),
        policy=cascade.strong.spec_policy,
        entities=cascade.strong.entities,
    )
    with pytest.raises(ConfigError, match="LLM"):
        Cascade(with_llm, cascade.strong)
    with pytest.raises(InvalidArgumentError, match="vector"):
        cascade.route("x", vector=[0.0] * 384)


def test_a_peer_decision_combines_the_probabilities(cascade):
    """Router.route(peer=): the normalised geometric mean of both routers' probabilities; the scope
    stays the router's own."""
    import numpy as np

    q = "can you reword this email so it sounds more polite"
    fast, own = cascade.fast.route(q), cascade.strong.route(q)
    both = cascade.strong.route(q, peer=fast)
    names = list(own.probabilities)
    g = np.sqrt([own.probabilities[n] * fast.probabilities[n] for n in names])
    assert np.allclose([both.probabilities[n] for n in names], g / g.sum(), atol=1e-6)
    assert both.out_of_scope == own.out_of_scope
    empty = cascade.fast.route("   ")  # no probabilities: nothing changes
    assert cascade.strong.route(q, peer=empty).probabilities == own.probabilities
    batch = cascade.strong.route_batch([q, q], peer=[fast, None])
    assert batch[0].probabilities == both.probabilities and batch[1].probabilities == own.probabilities


def test_a_combining_cascade_decides_escalated_queries_on_both(cascade):
    c = Cascade(cascade.fast, cascade.strong, combine=True)
    hard = "personne ne peut se connecter au wifi du bureau depuis midi"
    d, f = c.route(hard), c.fast.route(hard)
    alert = next(a for a in d.alerts if a.kind == "cascade")
    assert alert.data["served_by"] == "strong" and alert.data["combined"] is True
    assert d.probabilities == c.strong.route(hard, peer=f).probabilities
    if d.route or d.hint:
        assert "geometric mean" in alert.message
    assert [x.probabilities for x in c.route_batch([hard])] == [d.probabilities]
    easy = c.route("the production server is down again")  # served by the fast router: nothing combined
    assert next(a for a in easy.alerts if a.kind == "cascade").data["combined"] is False


def test_bad_peers_raise_typed_errors(cascade):

    with pytest.raises(InvalidArgumentError, match="peer must be a Decision"):
        cascade.strong.route("x", peer={"INCIDENT": 1.0})
    d = cascade.fast.route("x")
    with pytest.raises(InvalidArgumentError, match="2 decisions for 1 queries"):
        cascade.strong.route_batch(["x"], peer=[d, d])
    with pytest.raises(InvalidArgumentError, match="in a list"):
        cascade.strong.route_batch(["x"], peer=d)
    with pytest.raises(InvalidArgumentError, match="combine"):
        Cascade(cascade.fast, cascade.strong, combine="yes")
