"""Knowledge-source routing: the best collections with priorities, the (domain, intent)
map, the confidence gate's fallback, and the LLM's answer (the loopback LLM server of
test_llm.py) deciding the selection when it names a collection."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_llm import make, server  # noqa: F401 (the loopback LLM server fixture)

from routecore.errors import ConfigError, DimensionMismatchError
from routecore.examples import __file__ as examples
from routecore.llm.llm import OpenAICompatibleRouter
from routecore.routers.knowledge import KnowledgeConfig, KnowledgeRouter

KNOWLEDGE = Path(examples).parent / "knowledge.yaml"


@pytest.fixture(scope="module")
def kr(encoder):
    return KnowledgeRouter.from_config(KNOWLEDGE, encoder=encoder)


def test_best_collections_with_priorities(kr):
    got = kr.collections("what is the procedure to restart the Kafka brokers")
    assert got.source == "router" and got.names[0] == "it_runbooks" and len(got.collections) == 2
    assert sum(p for _, p in got.collections) == pytest.approx(1.0)
    assert got.collections[0][1] > got.collections[1][1]
    assert got.confidence >= got.gate == pytest.approx(kr.router.policy.medium)  # calibrated, not 0.7
    fr = kr.collections("combien de jours de congé maternité")
    assert fr.names[0] == "hr_policies"


def test_a_batch_takes_the_callers_vectors(kr, encoder):
    qs = ["what is the procedure to restart the Kafka brokers", "combien de jours de congé maternité"]
    V = encoder.encode(qs)
    given, alone = kr.collections_batch(qs, vectors=V), kr.collections_batch(qs)
    assert [g.collections for g in given] == [a.collections for a in alone]
    assert [g.collections for g in given] == [kr.collections(q, vector=v).collections for q, v in zip(qs, V)]
    with pytest.raises(DimensionMismatchError, match="expected 2 x"):  # as every router checks rows
        kr.collections_batch(qs, vectors=V[:1])


def test_map_wins_and_the_gate_falls_back(kr, encoder):
    got = kr.collections("the checkout page is slow", context_domains=["operations"], intent="debug")
    assert got.source == "map" and got.collections == (("it_runbooks", 1.0),)
    ask = kr.collections("the checkout page is slow", context_domains=["operations"], intent="ask")
    assert ask.source != "map"
    strict = KnowledgeRouter(kr.router, KnowledgeConfig(gate=0.9))
    fb = strict.collections("budget for the new release features")  # between product docs and finance
    assert fb.source == "fallback" and "under the gate 0.900" in fb.reason.message
    assert fb.names == kr.names and {p for _, p in fb.collections} == {0.25}
    listed = KnowledgeRouter(kr.router, KnowledgeConfig(fallback=("product_docs",)))
    out = listed.collections("the weather in Paris")
    assert (out.source, out.reason.message, out.collections) == (
        "fallback",
        "out of scope",
        (("product_docs", 1.0),),
    )


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


# -- the LLM's answer (issue 35 §3) --------------------------------------------------------
BETWEEN = "budget for the new release features"  # product docs 0.82, finance 0.18: under the gate


@pytest.fixture(scope="module")
def kr_llm(encoder, server):  # noqa: F811
    llm = OpenAICompatibleRouter(server.url, "test-model", timeout=2.0)
    yield KnowledgeRouter.from_config(KNOWLEDGE, encoder=encoder, llm=llm)
    llm.close()


def test_the_llm_answer_decides_the_collections(kr_llm, server):  # noqa: F811
    server.mode = "ok:finance_reports"  # the second collection by probability
    n = len(server.requests)
    got = kr_llm.collections(BETWEEN)
    assert len(server.requests) == n + 1 and got.confidence < got.gate  # asked; the gate alone: fallback
    assert (got.source, got.names) == ("llm", ["finance_reports", "product_docs"])
    assert "the LLM chose finance_reports" in got.reason.message
    assert sum(p for _, p in got.collections) == pytest.approx(1.0)
    assert got.collections[0][1] > got.collections[1][1]
    asked = [t["function"]["name"] for t in server.requests[-1]["tools"]]
    assert asked == [*kr_llm.names, "CLARIFY"]


def test_the_llm_answer_wins_over_a_best_collection_above_the_gate(server):  # noqa: F811
    server.mode = "ok:RAG"
    router, _ = make(server)
    kr = KnowledgeRouter(router)
    p = router.route("q").probabilities
    assert p["INCIDENT"] > kr.gate > p["RAG"]  # by probabilities alone: INCIDENT, above the gate
    got = kr.collections("q")
    assert (got.source, got.names) == ("llm", ["RAG", "INCIDENT"])
    # The chosen collections' probabilities, sorted: the LLM's takes the highest.
    assert got.collections[0][1] == pytest.approx(p["INCIDENT"] / (p["INCIDENT"] + p["RAG"]))


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        ("ok:wiki", "unknown route 'wiki'"),
        ("garbage", "unparseable LLM answer"),
        ("http500", "HTTP 500"),
        ("ok:CLARIFY", "the LLM named no collection (it asked to clarify)"),
    ],
)
def test_an_answer_that_names_no_collection_falls_back_with_a_reason(kr_llm, server, mode, why):  # noqa: F811
    server.mode = mode
    got = kr_llm.collections(BETWEEN)
    assert got.source == "fallback" and got.names == kr_llm.names
    assert {p for _, p in got.collections} == {0.25}
    assert got.reason.message.startswith("the LLM's answer was not used") and why in got.reason.message
    gated = f"best collection's probability {got.confidence:.3f} under the gate {got.gate:.3f}"
    assert got.reason.message.endswith(gated)


def test_above_the_gate_a_set_aside_answer_leaves_the_router_ranking(server):  # noqa: F811
    server.mode = "ok:UNKNOWN"
    router, _ = make(server)
    got = KnowledgeRouter(router).collections("q")
    assert (got.source, got.names) == ("router", ["INCIDENT", "RAG"])
    assert "unknown route 'UNKNOWN'" in got.reason.message


def test_an_unchecked_unknown_answer_is_set_aside(kr_llm, server, monkeypatch):  # noqa: F811
    server.mode = "ok:finance_reports"
    route = kr_llm.router.route
    monkeypatch.setattr(kr_llm.router, "route", lambda q: dataclasses.replace(route(q), route="wiki"))
    got = kr_llm.collections(BETWEEN)
    assert got.source == "fallback" and "the LLM answered an unknown collection 'wiki'" in got.reason.message


def test_when_the_encoder_fails_the_llm_collection_comes_alone(server):  # noqa: F811
    server.mode = "ok:GENERAL"
    router, enc = make(server)
    enc.fail = True
    got = KnowledgeRouter(router).collections("anything")
    assert (got.source, got.collections) == ("llm", (("GENERAL", 1.0),))
    server.mode = "garbage"
    got = KnowledgeRouter(router).collections("anything")
    assert got.source == "fallback" and "no decision (the encoder failed" in got.reason.message


def test_a_map_entry_matches_one_of_the_active_domains(kr):
    q = "the checkout page is slow"
    got = kr.collections(q, context_domains=["billing", "operations"], intent="debug")
    assert got.source == "map" and got.collections == (("it_runbooks", 1.0),)
    assert kr.collections(q, context_domains=["billing"], intent="debug").source != "map"
    with pytest.warns(DeprecationWarning, match="domain= is deprecated"):
        old = kr.collections(q, domain="operations", intent="debug")
    assert old.collections == got.collections
    with pytest.warns(DeprecationWarning):
        assert [s.source for s in kr.collections_batch([q], domain="operations", intent="debug")] == ["map"]
