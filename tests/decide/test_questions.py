"""The clarification question is asked in the config's language (routecore.decide.questions)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from routecore import Router
from routecore.config.specs import RouteSpec
from routecore.decide.questions import DEFAULT, FRAMES, config_languages, question, question_language
from stubs import StubEncoder, manual, mix, unit

FR = [
    RouteSpec("conges", ("combien de jours de congé me reste-t-il",), label="une question de congés"),
    RouteSpec("paie", ("ma fiche de paie est fausse",), label="une question de paie"),
    RouteSpec("informatique", ("mon ordinateur ne démarre plus",), label="un problème informatique"),
]


def test_a_french_config_is_asked_in_french():
    r = Router(
        [RouteSpec(s.name, (f"e{i}",), label=s.label) for i, s in enumerate(FR)],
        encoder=StubEncoder(
            {"e0": unit(0), "e1": unit(1), "e2": unit(2), "low": mix(a0=0.45, a1=0.44, a2=0.43)}
        ),
        policy=manual(bias_rules=(), three_way_within=0.0),
    )
    d = r.route("low")
    assert d.action == "clarify"
    assert d.question == "Voulez-vous dire une question de congés ou une question de paie ?"


def test_the_language_comes_from_the_routes_words():
    assert config_languages(FR)[0] == "fr"
    unlabelled = [
        RouteSpec("refund", ("I want my money back", "how do I get a refund")),
        RouteSpec("b", ("where is it",)),
    ]
    assert config_languages(unlabelled)[0] == "en"
    zh = [RouteSpec("a", ("我想退款",), label="退款"), RouteSpec("b", ("账单错了",), label="账单问题")]
    assert config_languages(zh) == ("zh",)
    assert question(["退款", "账单问题"], "zh") == "您是指退款还是账单问题？"
    ja = [RouteSpec("a", ("返金してください",))]
    assert config_languages(ja) == ("ja",)
    assert config_languages([RouteSpec("a", ("где мой заказ",))]) == ()  # no frame: English
    mixed = [RouteSpec("pay", ("how do I pay with my card",), label="a payment with 支付宝")] + unlabelled
    assert config_languages(mixed)[0] == "en"  # one Chinese name makes no Chinese config
    assert question_language(["заказ"], ()) == DEFAULT


def test_a_config_of_two_languages_asks_in_the_options_own():
    """The IT-ops example mixes French and English exemplars; a question about English labels is English."""
    both = ("fr", "en")
    assert question_language(["the documentation and the runbooks", "an outage of the service"], both) == "en"
    assert question_language(["une panne du service", "la documentation"], both) == "fr"
    assert question_language(["RAG", "INCIDENT"], both) == "fr"  # nothing to read: the config's first


@given(
    st.sampled_from(sorted(FRAMES)),
    st.lists(st.text(alphabet="abcdefgh ", min_size=1, max_size=12), min_size=1, max_size=3),
)
def test_every_question_names_each_option_once_in_order(lang, shown):
    q = question(shown, lang)
    at = 0
    for s in shown:
        at = q.index(s, at) + len(s)
    assert q.strip()[-1] in "?？"


def test_descriptions_read_as_options_inside_the_question():
    from routecore.decide.questions import in_sentence

    shown = [
        in_sentence("Git operations like commit, branch, diff and history"),
        in_sentence("Look up external documentation or the web"),
        in_sentence("Modify code in a file"),
    ]
    assert question(shown, "en") == (
        'Do you mean "git operations like commit, branch, diff and history", '
        '"look up external documentation or the web" or "modify code in a file"?'
    )
    assert [in_sentence(d) for d in ("VPN access problems", "Outlook", "iPhone screen issues")] == [
        "VPN access problems",
        "Outlook",
        "iPhone screen issues",
    ]
    assert question(["a refund", "a billing question"], "en") == "Do you mean a refund or a billing question?"
    fr = question(["une question de paie", "un problème réseau, wifi ou vpn"], "fr")
    assert fr == "Voulez-vous dire « une question de paie » ou « un problème réseau, wifi ou vpn » ?"


def test_german_descriptions_keep_their_capitals():
    from routecore.decide.questions import asked

    de = asked(("Probleme mit dem Drucker und Scanner", "Fragen zur Rechnung"), ("de",), (True, True))
    assert de == "Meinen Sie Probleme mit dem Drucker und Scanner oder Fragen zur Rechnung?"
    en = asked(("Look up external documentation", "Modify code in a file"), ("en",), (True, True))
    assert en == "Do you mean look up external documentation or modify code in a file?"
    assert asked(("Refund Desk", "Billing"), ("en",), (False, False)) == "Do you mean Refund Desk or Billing?"
