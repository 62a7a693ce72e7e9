"""Knowledge-source routing: the best collections with priorities, the (domain, intent)
map, and the confidence gate's fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from routecore import Router
from routecore.errors import ConfigError
from routecore.examples import __file__ as examples
from routecore.knowledge import KnowledgeConfig, KnowledgeRouter

KNOWLEDGE = Path(examples).parent / "knowledge.yaml"


@pytest.fixture(scope="module")
def kr(encoder):
    return KnowledgeRouter.from_config(KNOWLEDGE, encoder=encoder)


def test_best_collections_with_priorities(kr):
    got = kr.select("what is the procedure to restart the Kafka brokers")
    assert got.source == "router" and got.names[0] == "it_runbooks" and len(got.collections) == 2
    assert sum(p for _, p in got.collections) == pytest.approx(1.0) and got.collections[0][1] > got.collections[1][1]
    assert got.confidence >= got.gate == pytest.approx(kr.router.policy.medium)  # calibrated, not 0.7
    fr = kr.select("combien de jours de congé maternité")
    assert fr.names[0] == "hr_policies"


def test_map_wins_and_the_gate_falls_back(kr, encoder):
    got = kr.select("the checkout page is slow", domain="operations", intent="debug")
    assert got.source == "map" and got.collections == (("it_runbooks", 1.0),)
    assert kr.select("the checkout page is slow", domain="operations", intent="ask").source != "map"
    strict = KnowledgeRouter(kr.router, KnowledgeConfig(gate=0.9))
    fb = strict.select("budget for the new release features")  # between product docs and finance
    assert fb.source == "fallback" and "under the gate 0.900" in fb.reason
    assert fb.names == kr.names and {p for _, p in fb.collections} == {0.25}
    listed = KnowledgeRouter(kr.router, KnowledgeConfig(fallback=("product_docs",)))
    out = listed.select("the weather in Paris")
    assert (out.source, out.reason, out.collections) == ("fallback", "out of scope", (("product_docs", 1.0),))


def test_bad_knowledge_configs(kr):
    with pytest.raises(ConfigError, match="unknown collections \\['wiki'\\]"):
        KnowledgeRouter(kr.router, KnowledgeConfig(map=((None, "ask", ("wiki",)),)))
    with pytest.raises(ConfigError, match="domain, an intent"):
        KnowledgeRouter(kr.router, KnowledgeConfig(map=((None, None, ("hr_policies",)),)))
    with pytest.raises(ConfigError, match="top_k"):
        KnowledgeRouter(kr.router, KnowledgeConfig(top_k=9))
    with pytest.raises(ConfigError, match="fallback"):
        KnowledgeConfig.from_dict({"fallback": "some"})
    with pytest.raises(ConfigError, match="collections"):
        KnowledgeConfig.from_dict({"map": [{"domain": "x"}]})
