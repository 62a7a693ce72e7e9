"""The answer to a clarification question: an option it names, its place, or a no (decide/answers.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from routecore.decide.answers import Answer, read_answer

FR = [("LOGICIEL", "une demande de logiciel"), ("IMPRIMANTE", "un problème d'imprimante")]
EN = [("REFUND", "a refund"), ("BILLING", "a billing question"), ("SHIPPING", "SHIPPING")]


@pytest.mark.parametrize(
    "said, route, how",
    [
        ("logiciel", "LOGICIEL", "named"),
        ("Logiciels", "LOGICIEL", "named"),  # case, and a plural sharing the first letters
        ("l'imprimante", "IMPRIMANTE", "named"),
        ("le premier", "LOGICIEL", "place"),
        ("la deuxième", "IMPRIMANTE", "place"),  # accents folded
        ("non, rien de tout ça", None, "declined"),
        ("aucun des deux", None, "declined"),
    ],
)
def test_french_answers(said, route, how):
    a = read_answer(said, FR)
    assert a is not None and (a.route, a.how) == (route, how)


@pytest.mark.parametrize(
    "said, route",
    [
        ("refund please", "REFUND"),
        ("the billing one", "BILLING"),
        ("shipping", "SHIPPING"),  # a route without a label is named by its name
        ("the first one", "REFUND"),
        ("the second one", "BILLING"),  # not "one" as a place
        ("the last", "SHIPPING"),
        ("3", "SHIPPING"),
        ("no, billing", "BILLING"),  # a name wins over a no
        ("neither", None),
        ("no", None),
    ],
)
def test_english_answers(said, route):
    a = read_answer(said, EN)
    assert a is not None and a.route == route


@pytest.mark.parametrize(
    "said",
    [
        "Excel",  # names no option: scored among them instead
        "refund or billing",  # two options named: no pick
        "no, the software one",  # more than a bare no
        "the question",  # a word two options share names neither
        "",
    ],
)
def test_answers_that_pick_nothing(said):
    a = read_answer(said, EN[:2] + [("OTHER", "another question")])
    assert a is None


def test_a_long_answer_is_not_read_by_place():
    assert read_answer("the first thing is that my card was charged twice for one order", EN) is None


DOCS = [("DOCS", "look up external documentation or the web"), ("EDIT", "modify code in a file")]


@pytest.mark.parametrize(
    "said, options, route, how",
    [
        ("the second one", DOCS, "EDIT", "place"),  # "the" is a function word: it names no option
        ("the first one", DOCS, "DOCS", "place"),
        ("une imprimante", FR, "IMPRIMANTE", "named"),  # "une" is in both labels and names neither
        ("not the docs, the code", DOCS, "EDIT", "named"),
        ("neither docs nor code", DOCS, None, "declined"),
    ],
)
def test_function_words_and_negations(said, options, route, how):
    a = read_answer(said, options)
    assert a is not None and (a.route, a.how) == (route, how)


@pytest.mark.parametrize(
    "said",
    [
        "nothing works",
        "rien ne marche",
        "it happened last week",
        "I have 2 printers",
    ],
)
def test_a_negated_name_or_a_place_among_other_words_picks_nothing(said):
    assert read_answer(said, DOCS) is None and read_answer(said, FR) is None


@pytest.mark.parametrize(
    "said, options, route",
    [
        ("not the docs", DOCS, "EDIT"),
        ("pas le logiciel", FR, "IMPRIMANTE"),
        ("not a refund", EN[:2], "BILLING"),
    ],
)
def test_ruling_out_one_of_two_options_picks_the_other(said, options, route):
    a = read_answer(said, options)
    assert a is not None and (a.route, a.how) == (route, "other")
    assert read_answer(said, [*options, ("X", "xylophone")]) is None  # of three, which is meant is not said


SUPPORT = [("REFUND", "a refund"), ("DELIVERY", "a delivery question")]
OTHERS = [("BILLING", "a billing question"), ("CARD_LOST", "a lost or stolen card"), ("ACCOUNT", "ACCOUNT")]


@pytest.mark.parametrize(
    "said, route, how",
    [
        ("a billing question", "BILLING", "elsewhere"),  # "question" is BILLING's too: it names no option
        ("Billing question please", "BILLING", "elsewhere"),
        ("BILLING", "BILLING", "elsewhere"),
        ("it's about my account", "ACCOUNT", "elsewhere"),
        ("the lost card", "CARD_LOST", "elsewhere"),  # every word of its name
        ("no, a refund", "REFUND", "named"),
        ("the second one", "DELIVERY", "place"),
    ],
)
def test_an_answer_may_name_a_route_the_question_did_not_offer(said, route, how):
    a = read_answer(said, SUPPORT, OTHERS)
    assert a is not None and (a.route, a.how) == (route, how)


def test_a_redirect_beside_a_no_wins_and_an_options_own_name_always_names_it():
    offered = [("BILLING", "a billing question"), ("REFUND", "a refund")]
    shipping = [("SHIPPING", "SHIPPING")]
    for said in ("not billing, shipping please", "no billing, I need shipping"):
        a = read_answer(said, offered, shipping)
        assert a is not None and (a.route, a.how) == ("SHIPPING", "elsewhere"), said
    assert read_answer("not billing, my parcel is late", offered, shipping) is None  # more than a no: scored
    # "billing" names BILLING though another route's name (BILLING_DISPUTES) holds the word
    a = read_answer("billing", offered, [("BILLING_DISPUTES", "a billing dispute")])
    assert a is not None and (a.route, a.how) == ("BILLING", "named")


@pytest.mark.parametrize("said", ["lost", "stolen", "not billing", "billing or account", "a question"])
def test_one_word_of_a_route_not_offered_or_two_such_routes_pick_nothing(said):
    assert read_answer(said, SUPPORT, OTHERS) is None


@given(st.text(max_size=60))
def test_any_text_is_read_without_error(said):
    a = read_answer(said, EN)
    assert a is None or a.route in {None, "REFUND", "BILLING", "SHIPPING"}


HELPDESK = """
routes:
  - name: MOT_DE_PASSE
    label: un problème de mot de passe
    utterances: [j'ai oublié mon mot de passe, mon compte est bloqué, mon mot de passe a expiré,
                 je n'arrive plus à me connecter à ma session, comment réinitialiser mon mot de passe]
  - name: IMPRIMANTE
    label: un problème d'imprimante
    utterances: [l'imprimante ne fonctionne pas, je n'arrive pas à imprimer, il n'y a plus de toner,
                 l'imprimante est bloquée, bourrage papier, le scanner n'envoie pas les mails]
  - name: LOGICIEL
    label: une demande de logiciel
    utterances: [je voudrais installer Excel, Outlook plante au démarrage, Teams ne se lance plus,
                 comment obtenir une licence Photoshop, Word se ferme tout seul]
  - name: MATERIEL
    label: un problème de matériel
    utterances: [mon écran reste noir, mon ordinateur ne démarre plus, le clavier ne répond plus,
                 j'ai besoin d'une nouvelle souris, la batterie de mon portable ne charge plus]
"""


@pytest.fixture(scope="module")
def helpdesk(encoder, tmp_path_factory):
    from routecore import Router

    path = tmp_path_factory.mktemp("helpdesk") / "helpdesk.yaml"
    path.write_text(HELPDESK, encoding="utf-8")
    return Router.from_config(path, encoder=encoder)


def test_a_clarification_answered_by_name_place_or_no(helpdesk):
    d = helpdesk.route("Excel ne s'ouvre plus et l'imprimante non plus")  # two routes' words
    assert d.action == "clarify", d.reason
    first, second = d.candidates[:2]
    label = {r.name: r.label for r in helpdesk.route_specs}
    named = helpdesk.route(label[second].split()[-1], clarify=d)  # "imprimante", "logiciel", ...
    assert (named.action, named.route, named.tier, named.reason.code) == ("route", second, "medium", "likely")
    assert "the answer names" in named.reason.message
    placed = helpdesk.route("le premier", clarify=d)
    assert placed.route == first and "place" in placed.reason.message
    no = helpdesk.route("non, aucun des deux", clarify=d)
    assert (no.action, no.route, no.reason.code) == ("none", None, "out_of_scope")
    assert "declines" in no.reason.message


def test_an_answer_that_rules_one_out_or_names_another_route_is_read_as_said(helpdesk):
    from dataclasses import replace

    d = helpdesk.route("Excel ne s'ouvre plus et l'imprimante non plus")
    d = replace(d, candidates=d.candidates[:2])  # a question of two options
    first, second = d.candidates
    label = {r.name: r.label for r in helpdesk.route_specs}
    other = helpdesk.route(f"pas {label[first].split()[-1]}", clarify=d)  # "pas logiciel"
    assert (other.route, other.tier) == (second, "medium") and "rules out" in other.reason.message
    elsewhere = next(n for n in label if n not in d.candidates)
    named = helpdesk.route(label[elsewhere], clarify=d)  # its whole label: a route not offered
    assert (named.route, named.tier) == (elsewhere, "medium")
    assert "a route the clarification did not offer" in named.reason.message


def test_a_clarify_decisions_route_is_no_previous_route(helpdesk):
    d = helpdesk.route("Excel ne s'ouvre plus et l'imprimante non plus")
    assert d.action == "clarify" and d.route == "CLARIFY"
    a = helpdesk.route("mon mot de passe a expiré", previous=d.route)  # a chat loop's previous=d.route
    b = helpdesk.route("mon mot de passe a expiré")
    assert (a.action, a.route, a.tier) == (b.action, b.route, b.tier)
    assert [x.route for x in helpdesk.route_batch(["mon mot de passe a expiré"], previous=[d.route])] == [
        b.route
    ]


def test_a_previous_that_is_not_a_route_name_is_an_argument_error(helpdesk):
    from routecore.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="previous must be a route name"):
        helpdesk.route("mon mot de passe a expiré", previous=["LOGICIEL"])
    with pytest.raises(InvalidArgumentError, match="previous must be a route name"):
        helpdesk.route_batch(["mon mot de passe a expiré"], previous=[["LOGICIEL"]])
    with pytest.raises(InvalidArgumentError, match="unknown previous route 'LOGICIELS'"):
        helpdesk.route("mon mot de passe a expiré", previous="LOGICIELS")


def test_a_previous_route_in_another_case_or_blank_is_read_as_a_name_or_none(helpdesk):
    q = "mon mot de passe a expiré"
    want = helpdesk.route(q, previous="MOT_DE_PASSE")
    assert want.previous_route == "MOT_DE_PASSE"
    for named in ("mot_de_passe", "Mot_De_Passe"):
        d = helpdesk.route(q, previous=named)
        assert (d.route, d.tier, d.previous_route) == (want.route, want.tier, "MOT_DE_PASSE")
    assert helpdesk.route_batch([q], previous=["mot_de_passe"])[0].previous_route == "MOT_DE_PASSE"
    for blank in ("", "  "):
        assert helpdesk.route(q, previous=blank).previous_route is None


@pytest.mark.parametrize(
    "said",
    [
        "yes",
        "both",
        "ok",
        "oui, les deux",
        "3",
        "the third one",
        "yes please",
        "both the first and the second",  # not the first
        "no, both",  # not a "no" to all
        "yes, not the first",  # not the first either: which is meant is not said
    ],
)
def test_an_answer_that_agrees_without_choosing_is_unclear(said):
    a = read_answer(said, EN[:2])  # two options: "3" and "the third one" name no place of them
    assert a is not None and (a.route, a.how) == (None, "unclear"), a
    assert read_answer("yes, the first one", EN[:2]) == Answer(EN[0][0], "place", "first")


def test_an_unclear_answer_asks_the_same_question_again(helpdesk):
    d = helpdesk.route("Excel ne s'ouvre plus et l'imprimante non plus")
    assert d.action == "clarify", d.reason
    for said in ("oui", "les deux", "4"):
        again = helpdesk.route(said, clarify=d)
        assert (again.action, again.candidates, again.question) == ("clarify", d.candidates, d.question), said
        assert again.reason.code == "tie" and "asked again" in again.reason.message
    # answered at last, after the repeated question
    assert helpdesk.route("le premier", clarify=again).route == d.candidates[0]


def test_a_route_not_offered_named_whole_wins_over_an_option_named_by_one_of_its_words():
    offered = [("BILLING", "a billing question"), ("REFUND", "a refund")]
    a = read_answer("a billing dispute", offered, [("BILLING_DISPUTES", "a billing dispute")])
    assert a is not None and (a.route, a.how) == ("BILLING_DISPUTES", "elsewhere")
    a = read_answer("billing", offered, [("BILLING_DISPUTES", "a billing dispute")])
    assert a is not None and (a.route, a.how) == ("BILLING", "named")
