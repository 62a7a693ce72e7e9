"""The example configs shipped in routecore.examples, with the bundled model.

The queries here were written for these tests: none is an exemplar of the example, and none
comes from tests/data/it_ops_heldout.jsonl (which checks the example and must not shape it;
tests/evaluation/test_it_ops_heldout.py)."""

from __future__ import annotations

import pytest
import yaml

from routecore.examples import IT_OPS_ROUTES

#: General requests of the assistant the IT-ops example comes from: rewording, translating, coding.
GENERAL = [
    "Can you reword this email so it sounds more polite?",
    "traduis ce paragraphe en espagnol",
    "how do I reverse a list in Python?",
]
INCIDENT = ["le serveur de production est en panne depuis ce matin"]


def routes() -> dict[str, dict]:
    return {r["name"]: r for r in yaml.safe_load(IT_OPS_ROUTES.read_text(encoding="utf-8"))["routes"]}


def test_it_ops_queries_are_not_exemplars():
    exemplars = {t.lower() for r in routes().values() for t in [*r["utterances"], r["description"]]}
    assert not [q for q in GENERAL + INCIDENT if q.lower() in exemplars]


def test_it_ops_general_holds_every_kind_of_general_request():
    general = routes()["GENERAL"]
    assert 12 <= len(general["utterances"]) <= 20
    for kind in ("rewrite", "translate", "summarise", "coding", "small talk"):
        assert kind in general["description"]


@pytest.mark.parametrize("query", GENERAL)
def test_it_ops_general_requests_route_to_general(it_ops_router, query):
    d = it_ops_router.route(query)
    assert (d.action, d.route) == ("route", "GENERAL"), (d.action, d.route, d.tier, dict(d.probabilities))


@pytest.mark.parametrize("query", INCIDENT)
def test_it_ops_incidents_still_route_to_incident(it_ops_router, query):
    d = it_ops_router.route(query)
    assert (d.action, d.route) == ("route", "INCIDENT"), (d.action, d.route, d.tier, dict(d.probabilities))
