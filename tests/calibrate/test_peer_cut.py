"""The cuts of decisions combined with another encoder's (routecore.calibrate.peer_cut)."""

from __future__ import annotations

import pytest

from conftest import MODELS, need_shared
from routecore import Encoder, Router
from routecore.calibrate.peer_cut import PeerCut
from routecore.calibrate.prior import DecisionPrior, pair_key, prior_for
from routecore.config.specs import RouteSpec
from routecore.decide.policy import Policy
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.cascade import Cascade

ROUTES = [
    RouteSpec(
        "BILLING",
        (
            "why was I charged twice",
            "my invoice is wrong",
            "refund my last payment",
            "update my card",
            "what is this fee on my statement",
        ),
    ),
    RouteSpec(
        "OUTAGE",
        (
            "the site is down",
            "the app will not load",
            "servers are not responding",
            "everything is broken",
            "we have an outage",
        ),
    ),
    RouteSpec(
        "ACCOUNT",
        (
            "reset my password",
            "change my email address",
            "delete my account",
            "enable two-factor login",
            "I cannot sign in",
        ),
    ),
    RouteSpec(
        "SMALLTALK", ("hello there", "how are you today", "thanks a lot", "tell me a joke", "good morning")
    ),
    RouteSpec(
        "SHIPPING",
        (
            "where is my parcel",
            "track my order",
            "my package has not arrived",
            "change my delivery address",
            "when will my order ship",
        ),
    ),
]
QUERIES = [
    "I was billed two times this month",
    "nothing loads since this morning",
    "I forgot my password",
    "good evening!",
    "the courier lost my box",
    "something is wrong with my money",
    "can you help me",
]


FRENCH = {
    "BILLING": (
        "pourquoi ai-je été facturé deux fois",
        "ma facture est fausse",
        "remboursez mon dernier paiement",
        "mettre à jour ma carte",
        "quels sont ces frais sur mon relevé",
    ),
    "OUTAGE": (
        "le site est en panne",
        "l'application ne se charge pas",
        "les serveurs ne répondent pas",
        "tout est cassé",
        "nous avons une panne",
    ),
    "ACCOUNT": (
        "réinitialiser mon mot de passe",
        "changer mon adresse e-mail",
        "supprimer mon compte",
        "activer la double authentification",
        "je ne peux pas me connecter",
    ),
    "SMALLTALK": (
        "bonjour",
        "comment vas-tu aujourd'hui",
        "merci beaucoup",
        "raconte-moi une blague",
        "bonne soirée",
    ),
    "SHIPPING": (
        "où est mon colis",
        "suivre ma commande",
        "mon colis n'est pas arrivé",
        "changer mon adresse de livraison",
        "quand ma commande sera-t-elle expédiée",
    ),
}


@pytest.fixture(scope="module")
def pair(encoder):
    fast = Router(ROUTES, encoder=Encoder.load(str(need_shared(MODELS / "all-minilm-l6-v2"))))
    return fast, Router(ROUTES, encoder=encoder)


def test_routecore_ships_the_prior_of_its_two_bundled_encoders(pair):
    fast, strong = pair
    key = pair_key(strong.encoder.model_id, fast.encoder.model_id)
    prior = prior_for(key)
    assert prior is not None and "geometric mean" in prior.source
    cut = strong.route_table.peer_cut(fast.encoder.model_id, strong.route_table.policy)
    assert cut is not None and cut.peer_model == fast.encoder.model_id
    assert 0.0 < cut.medium <= cut.high <= 1.0 and cut.traffic is not None  # five routes: in the span
    assert strong.route_table.peer_cut("no-such-model:0", strong.route_table.policy) is None


def test_a_combined_decision_meets_the_pairs_cuts_and_says_so(pair):
    fast, strong = pair
    model = fast.encoder.model_id
    cut = strong.route_table.peer_cut(model, strong.route_table.policy)
    assert cut is not None
    seen = cut.traffic.seen if cut.traffic is not None else 0
    for q in QUERIES:
        f = fast.route(q)
        d = strong.route(q, peer=f, peer_model=model)
        plain = strong.route(q, peer=f)  # no model named: the router's own cuts
        assert d.probabilities == plain.probabilities
        assert not [a for a in plain.alerts if a.kind == "pair_cuts"]
        if d.action == "none":  # the scope is the strong router's own: no cut was read
            continue
        alert = next(a for a in d.alerts if a.kind == "pair_cuts")
        assert alert.data["peer_model"] == model and alert.data["medium"] <= cut.medium
        assert alert.data["high"] == cut.high
        if d.action == "route":
            assert d.confidence >= alert.data["medium"]
        else:
            assert d.confidence < alert.data["medium"]
    assert cut.traffic is None or cut.traffic.seen > seen  # the pair's cut sees the combined decisions


def test_the_batch_and_the_cascade_pass_the_peer_model(pair):
    fast, strong = pair
    model = fast.encoder.model_id
    peers = fast.route_batch(QUERIES)
    batch = strong.route_batch(QUERIES, peer=peers, peer_model=model)
    for q, f, d in zip(QUERIES, peers, batch):
        one = strong.route(q, peer=f, peer_model=model)
        assert (d.action, d.route, d.tier) == (one.action, one.route, one.tier)
    c = Cascade(fast, strong, combine=True)
    traffic = strong.route_table.peer_cut(model, strong.route_table.policy).traffic
    assert traffic is not None
    for d in c.route_batch(QUERIES) + [c.route(q) for q in QUERIES]:
        served = next(a for a in d.alerts if a.kind == "cascade").data["served_by"]
        cuts = [a for a in d.alerts if a.kind == "pair_cuts"]
        assert served == "fast" and not cuts or served == "strong" and (cuts or d.action == "none")
    # The pair's traffic cut reads what the fast router served too: every routed decision of the pair.
    easy = "where is my parcel"
    assert c.fast.route(easy).tier == "high"
    seen = traffic.seen
    assert next(a for a in c.route(easy).alerts if a.kind == "cascade").data["served_by"] == "fast"
    assert traffic.seen == seen + 1
    seen = traffic.seen
    Cascade(fast, strong, combine=False).route(easy)  # without combine: the strong router's cuts are its own
    assert traffic.seen == seen


@pytest.mark.parametrize(
    "policy",
    [{"routes": {"medium": 0.8}}, {"routes": {"high": 0.97}}, {"classifier": {"prior": False}}],
)
def test_a_config_that_sets_its_cuts_keeps_them(policy, encoder):
    r = Router(ROUTES, encoder=encoder, policy=Policy.from_dict(policy))
    peer = "all-minilm-l6-v2:85814893fd83df9f"
    assert r.route_table.peer_cut(peer, r.route_table.policy) is None
    assert PeerCut.build(r.encoder.model_id, peer, r.spec_policy, r.calibration) is None


def test_a_policy_set_by_hand_keeps_its_cuts(pair, encoder):
    fast, _ = pair
    r = Router(ROUTES, encoder=encoder)
    model = fast.encoder.model_id
    assert r.route_table.peer_cut(model, r.route_table.policy) is not None
    r.policy = r.policy.with_overrides(medium=0.5)
    assert r.route_table.peer_cut(model, r.route_table.policy) is None
    d = r.route(QUERIES[0], peer=fast.route(QUERIES[0]), peer_model=model)
    assert not [a for a in d.alerts if a.kind == "pair_cuts"]


def test_a_bad_peer_model_raises_a_typed_error(pair):
    fast, strong = pair
    f = fast.route(QUERIES[0])
    with pytest.raises(InvalidArgumentError, match="peer_model"):
        strong.route(QUERIES[0], peer=f, peer_model=42)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="peer_model"):
        strong.route_batch([QUERIES[0]], peer=[f], peer_model=b"x")  # type: ignore[arg-type]


def test_a_cascade_combines_by_default_where_the_pair_was_measured(pair, encoder):
    fast, strong = pair
    assert Cascade(fast, strong).combine is True  # English, zero-label: the pair's prior holds
    assert Cascade(fast, strong, combine=False).combine is False
    french = [RouteSpec(r.name, tuple(t for t in FRENCH[r.name])) for r in ROUTES]
    fr_strong = Router(french, encoder=encoder)
    fr_fast = Router(french, encoder=fast.encoder)
    assert fr_strong.route_table.peer_cut(fast.encoder.model_id, fr_strong.route_table.policy) is None
    assert Cascade(fr_fast, fr_strong).combine is False  # measured on English configs only
    assert Cascade(fr_fast, fr_strong, combine=True).combine is True  # asked for: the strong router's cuts
    with pytest.raises(InvalidArgumentError, match="combine"):
        Cascade(fast, strong, combine="auto")  # type: ignore[arg-type]


def test_a_priors_languages_must_be_codes():
    base = {
        "weights": [0.0] * 8,
        "medium": 0.9,
        "high": 0.99,
        "previous_high": 0.8,
        "span": {},
    }
    assert DecisionPrior.from_dict({**base, "languages": ["en"]}).languages == ("en",)
    for bad in ("en", [1], ["en", None]):
        with pytest.raises(ConfigError, match="languages"):
            DecisionPrior.from_dict({**base, "languages": bad})
