"""Typo repair against a router's vocabulary (routecore.decide.spelling; issue 34 §4)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from routecore import Router
from routecore.decide.spelling import (
    SHORT_LETTERS,
    TWO_EDITS,
    TWO_SLIPS,
    Speller,
    _distance,
    _slipped,
    tokenizer_words,
)
from routecore.examples import IT_OPS_ROUTES

EXEMPLARS = ["the production server is down", "reset my password please", "configure the firewall rules"]


def nothing_known(words):
    """No word is one the tokenizer knows whole."""
    return [False] * len(words)


def test_one_edit_repairs_a_word_two_edits_only_a_long_one():
    s = Speller(EXEMPLARS, nothing_known, languages=())
    assert s.repair("teh prodution servr is dwon")[0] == "the production server is down"
    assert s.repair("the srever")[0] == "the server"  # a swap is one edit
    assert s.repair("reset my pswrod")[0] == "reset my pswrod"  # two edits on 6 letters: left alone
    assert s.repair("configure the firwal")[0] == "configure the firwal"  # two edits on a 6-letter word
    fixed, repairs = s.repair("the firewal rules are wrong, configre them")
    assert fixed == "the firewall rules are wrong, configure them"
    assert [(r.typo, r.word) for r in repairs] == [("firewal", "firewall"), ("configre", "configure")]


def test_known_words_short_words_and_ties_are_left_alone(encoder):
    known = tokenizer_words(encoder)
    assert known is not None and known(["server", "production"]) == [True, True]
    assert known(["prodution"]) == [False]
    # e5's vocabulary holds "teh" as one piece: a word to it, left as it is
    assert Speller(EXEMPLARS, known, languages=()).repair("teh prodution servr")[0] == "teh production server"
    s = Speller(EXEMPLARS, lambda words: [w == "serves" for w in words], languages=())
    assert s.repair("the serves are down")[0] == "the serves are down"  # a word the tokenizer knows
    assert s.repair("the srvr")[0] == "the srvr"  # two edits on 4 letters
    tie = Speller(["cart", "card"], nothing_known, languages=())
    assert tie.repair("carx")[0] == "carx"  # one edit from two words: no guess
    assert (
        Speller(EXEMPLARS, None, languages=()).repair("prodution")[0] == "prodution"
    )  # no tokenizer: no repair


def test_a_doubled_letter_is_a_typo_and_the_more_used_word_breaks_a_tie():
    s = Speller(["I need help", "what is my name"], nothing_known, languages=())
    # "neeed" and "need" differ in an ending ("ed"/"d"), yet no inflection doubles a letter
    assert s.repair("I neeed help with my namee")[0] == "I need help with my name"
    used = Speller(["my card was lost", "block my card", "add to cart"], nothing_known, languages=())
    assert used.repair("my carx")[0] == "my card"  # one edit from both: card is used twice, cart once
    assert (
        Speller(["card", "cart"], nothing_known, languages=()).repair("carx")[0] == "carx"
    )  # as often: no guess


def test_a_short_word_is_read_through_a_swap_a_doubled_letter_or_a_key_beside():
    s = Speller(["is the server down", "how do I reset my password"], nothing_known, languages=())
    assert s.repair("teh server is dwon")[0] == "the server is down"
    assert s.repair("hwo do I reset mmy password")[0] == "how do I reset my password"
    assert s.repair("thee server")[0] == "the server"
    # a key beside the right one, on a QWERTY ("thw", "hiw", "mu") or an AZERTY keyboard ("thz")
    assert s.repair("thw server, hiw do I, mu password")[0] == "the server, how do I, my password"
    assert s.repair("thz server")[0] == "the server"
    # a dropped letter, or one no keyboard puts beside, reaches too many short words: left alone
    assert s.repair("th server, hw do I, mq password, hoa")[0] == "th server, hw do I, mq password, hoa"
    assert (
        Speller(["is it up"], lambda words: [w == "si" for w in words], languages=()).repair("si it")[0]
        == "si it"
    )
    # two words a key away as often: no guess ("bat": "v" beside "b", "r" beside "t")
    assert Speller(["vat", "bar"], nothing_known, languages=()).repair("bat")[0] == "bat"


def test_a_name_the_tokenizer_knows_capitalised_or_an_acronym_it_knows_is_not_a_typo(encoder):
    known = tokenizer_words(encoder)
    assert known is not None and known(["thursday", "prodution"]) == [True, False]
    assert known(["amd", "td"]) == [True, True]  # "AMD" and "TD" are one piece each
    assert Speller(["this and that"], known, languages=()).repair("amd td") == ("amd td", ())
    s = Speller(["book a table for tuesday", "the production server"], known, languages=())
    assert s.repair("book a table for thursday") == ("book a table for thursday", ())
    assert s.repair("tuesdya prodution")[0] == "tuesday production"


def test_with_a_word_table_a_real_word_stays_and_a_misspelling_reads_as_the_likelier_word(encoder):
    known = tokenizer_words(encoder)
    s = Speller(["what is the weather like today", "set an alarm", "the production server is down"], known)
    assert [t.language for t in s.tables] == ["en"]
    # words of the language one slip from an exemplar's word are words: not "what", "like", "have"
    for q in ("what is the price of wheat", "plan a hike", "he gave me a call", "is kubernetes down"):
        assert s.repair(q) == (q, ()), q
    # misspellings of words no exemplar uses read as the language's likelier word
    fixed, repairs = s.repair("my acount was not recieving money")
    assert fixed == "my account was not receiving money"
    assert [(r.typo, r.word) for r in repairs] == [("acount", "account"), ("recieving", "receiving")]
    assert s.repair("wether tomorow, set an alarn")[0] == "weather tomorrow, set an alarm"
    # a word no table lists that the tokenizer knows whole stays (a name, an acronym in capitals), but a
    # short one a slip away from a frequent word is that word (e5 knows "rhe" and "dor" whole)
    assert s.repair("the server on thursday, AMD") == ("the server on thursday, AMD", ())
    assert s.repair("rhe server dor me")[0] == "the server for me"
    assert s.repair("wil th server be down")[0] == "will the server be down"  # a dropped letter
    # a longer word the tokenizer knows reads as an exemplar's word one slip away ("liek" -> "like")
    assert s.repair("what is the weather liek")[0] == "what is the weather like"
    # exemplar words are never read as others, and their long typos (two edits) still repair
    assert s.repair("the weather")[0] == "the weather"
    assert s.repair("the prodcutoin server")[0] == "the production server"
    # a dropped last letter that reads as an ending: a word no table lists and the tokenizer does not
    # know is no form of its reading; a listed form of an exemplar's word stays ("crashed", "sets")
    assert s.repair("schedul a call aroun noon")[0] == "schedule a call around noon"
    # two keyboard slips on a shorter word read as an exemplar's word ("srevr": a swap and a dropped
    # letter), two edits of other kinds do not: a name stays a name ("gérard" is not "grand")
    g = Speller(["the production server is down", "book a grand table"], known)
    assert g.repair("the srevr is down")[0] == "the server is down"
    assert g.repair("call gérard now") == ("call gérard now", ())
    for q in ("the production server crashed", "he sets an alarm"):
        assert s.repair(q) == (q, ()), q


def test_a_french_config_reads_french_and_a_chinese_one_its_exemplars_words(encoder):
    known = tokenizer_words(encoder)
    fr = Speller(["je voudrais réserver une table", "quel temps fait-il demain", "mets une alarme"], known)
    assert [t.language for t in fr.tables] == ["fr"]
    assert fr.repair("quel temp fait-il demian")[0] == "quel temp fait-il demain"
    assert fr.repair("metss une alrme")[0] == "mets une alarme"  # a key held down is no plural
    assert fr.repair("what is the weather") == ("what is the weather", ())
    en = Speller(["what is the weather like today", "set an alarm for me"], known)
    # a query in another bundled language is left as typed ("le" is no "me", "si" no "is")
    assert en.repair("le temps, si tu veux") == ("le temps, si tu veux", ())
    assert en.repair("what is the wether, merci")[0] == "what is the weather, merci"  # English: read
    zh = Speller(["服务器宕机了", "重置密码"], known)
    assert zh.tables == () and zh.repair("服务器宕机了 pasword") == ("服务器宕机了 pasword", ())
    assert Speller(["the server is down"], known, languages=("en", "fr")).repair("le servr")[0] == "le server"


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz éè", max_size=60))
def test_a_weighed_reading_is_a_listed_or_exemplar_word_one_slip_or_two_edits_away(text):
    s = Speller(EXEMPLARS, nothing_known, languages=("en",))
    fixed, repairs = s.repair(text)
    listed = s.tables[0].log_share
    for r in repairs:
        assert r.word in listed or r.word in s.words
        typo = r.typo.lower()
        assert _distance(typo, r.word) <= (2 if len(typo) >= TWO_SLIPS else 1)
        if _distance(typo, r.word) == 2 and len(typo) < TWO_EDITS:
            assert r.word in s.words and any(typo in _slipped(t) for t in _slipped(r.word))


def test_distance_is_optimal_string_alignment():
    assert _distance("abcd", "abcd") == 0
    assert _distance("abcd", "abdc") == 1
    assert _distance("abcd", "abd") == 1
    assert _distance("abcd", "xbcdy") == 2
    assert _distance("", "abc") == 3


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_repair_keeps_text_of_known_words_and_never_raises(text):
    s = Speller(EXEMPLARS, nothing_known, languages=())
    fixed, repairs = s.repair(text)
    assert isinstance(fixed, str) and len(repairs) <= len(text.split())
    clean = " ".join(w for w in EXEMPLARS[0].split())
    assert s.repair(clean) == (clean, ())
    for r in repairs:
        assert len(r.typo) >= SHORT_LETTERS and r.word in s.words


def test_a_mistyped_query_routes_with_a_spelling_alert(encoder):
    r = Router.from_config(IT_OPS_ROUTES, encoder=encoder)
    d = r.route("teh prodution servr is dwon sinse mornign, pls hlep")
    assert d.action == "route" and d.route == "INCIDENT", d.reason
    spelling = [a for a in d.alerts if a.kind == "spelling"]
    assert spelling and "'prodution' as 'production'" in spelling[0].message
    assert not [a for a in r.route("the production server is down").alerts if a.kind == "spelling"]
    batch = r.route_batch(["teh prodution servr is dwon sinse mornign, pls hlep"])[0]
    assert batch.route == d.route and [a.kind for a in batch.alerts] == [a.kind for a in d.alerts]


def test_a_form_of_an_exemplar_word_is_not_a_typo():
    s = Speller(["the app crashes on start", "my cards were declined"], nothing_known, languages=())
    for q in ("the app crashed", "my card was declined", "it keeps crashing"):
        assert s.repair(q) == (q, ()), q
    assert s.repair("the app crahses")[0] == "the app crashes"  # a swap is still repaired


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(["prodution", "servr", "firewal", "configre", "the", "dwon", "rulez", "le", "rhe"]),
        max_size=8,
    ),
    st.sampled_from([(), ("en",), ("en", "fr")]),
)
def test_a_remembered_reading_is_the_one_a_new_speller_gives(words, languages):
    text = " ".join(words)
    seen = Speller(EXEMPLARS, nothing_known, languages=languages)
    seen.repair("prodution servr firewal dwon le")  # its memo holds some of the words already
    assert seen.repair(text) == Speller(EXEMPLARS, nothing_known, languages=languages).repair(text)


def test_the_memo_starts_over_when_full(monkeypatch):
    from routecore.decide import spelling

    monkeypatch.setattr(spelling, "MEMO_WORDS", 2)
    s = Speller(EXEMPLARS, nothing_known, languages=())
    assert s.repair("prodution servr")[0] == "production server"
    assert s.repair("firewal dwon configre")[0] == "firewall down configure"
    assert len(s._memo) <= 3  # cleared before the three new words went in


def test_spelling_can_be_turned_off(encoder):
    from routecore import Policy
    from routecore.config.specs import RouteSpec

    routes = [
        RouteSpec("A", ("I forgot my password and need to reset it", "my account is locked")),
        RouteSpec("B", ("the printer on the second floor is jammed", "I cannot print my documents")),
    ]
    on = Router(routes, encoder=encoder).route_table.read_query("I forgott my pasword")
    off = Router(routes, encoder=encoder, policy=Policy.from_dict({"routes": {"spelling": False}}))
    assert on[0] == "I forgot my password" and any(kind == "spelling" for kind, _ in on[1])
    assert off.route_table.read_query("I forgott my pasword") == ("I forgott my pasword", ())


def test_a_capitalised_word_inside_a_sentence_is_a_name(encoder):
    s = Speller(["deliver to 12 Baker Street", "where is my package"], tokenizer_words(encoder), languages=())
    assert s.repair("deliver to 12 Main St please") == ("deliver to 12 Main St please", ())
    # a capital that opens a sentence is no name
    assert s.repair("Pakage lost. Pakage never came")[0] == "package lost. package never came"
    assert s.repair("where is my pakage")[0] == "where is my package"


DEV_ROUTES = {
    "EXPLAIN_CODE": ("what does this function do", "explain this code to me", "why does this loop never end"),
    "WRITE_TESTS": ("write unit tests for this function", "add pytest tests for the parser", "mock the db"),
    "GIT_HELP": ("how do I undo my last commit", "resolve a git merge conflict", "delete a remote branch"),
}


def test_code_and_identifiers_are_left_as_typed(encoder):
    s = Speller([t for ts in DEV_ROUTES.values() for t in ts], tokenizer_words(encoder))
    for text in (
        "explain `foo = bar.baz()` please",  # inline code
        "pytest cases for parse_args",  # an identifier: "args" is not "rags"
        "git reset --hard HEAD~1",
        "read ~/.env and v2 of the configFile",
    ):
        assert s.repair(text) == (text, ()), text
    assert s.repair("how do I undo my lst commit")[0] == "how do I undo my last commit"  # prose still is


def test_a_bilingual_config_repairs_both_languages(encoder):
    from routecore.decide.words import languages_of_texts

    french = ["où est ma commande", "je veux être remboursé", "j'ai oublié mon mot de passe", "bonjour"] * 2
    english = ["where is my order", "I want my money back", "reset my password"]
    texts = [t.split() for t in french + english]
    assert languages_of_texts(texts) == ("fr", "en")  # English is a third of the texts, not of the words
    assert languages_of_texts([t.split() for t in french]) == ("fr",)
    s = Speller(french + english, tokenizer_words(encoder))
    assert s.repair("I forgot my pasword")[0] == "I forgot my password"


def test_a_query_read_as_typed_wins_when_it_decides_more_surely(encoder, monkeypatch):
    from routecore.config.specs import RouteSpec
    from routecore.decide.spelling import Repair

    r = Router([RouteSpec(n, u) for n, u in DEV_ROUTES.items()], encoder=encoder)
    fixed = r.route("how do I undo my lst commit")  # a repair that decides as surely: kept
    assert fixed.query == "how do I undo my last commit" and fixed.route == "GIT_HELP"
    # A "repair" that reads the query as something else ("env" as "envy", "numpy" as "bumpy")
    misread = ("what is the weather in lyon tomorrow", (Repair("env", "weather"),))
    monkeypatch.setattr(r.route_table.speller, "repair", lambda text: misread)
    assert r.route_table.read_query("write tests for the env loader")[0] == misread[0]
    d = r.route("write tests for the env loader")
    assert (d.action, d.route) == ("route", "WRITE_TESTS") and d.query == "write tests for the env loader"
    said = [a.message for a in d.alerts if a.kind == "spelling"]
    assert len(said) == 1 and said[0].startswith("read as typed: that decided more surely (route")
    batch = r.route_batch(["write tests for the env loader", "resolve a merge conflict"])
    assert [(x.action, x.route, x.query) for x in batch[:1]] == [(d.action, d.route, d.query)]
    assert batch[1].route == "GIT_HELP"


def test_a_reading_that_asked_the_llm_is_kept_and_call_alerts_survive_the_typed_one(encoder, monkeypatch):
    """The LLM a repaired reading asked is not paid for and dropped: that decision stands. A typed
    reading that wins keeps the call's alerts (a context domain set aside) and counts both readings'
    time."""
    from routecore.config.specs import RouteSpec
    from routecore.decide.policy import Policy
    from routecore.decide.spelling import Repair
    from routecore.llm.llm import LLMChoice

    asked = []

    class LLM:
        def choose(self, request):
            asked.append(request)
            return LLMChoice("GIT_HELP")

    routes = [RouteSpec(n, u) for n, u in DEV_ROUTES.items()]
    r = Router(routes, encoder=encoder, llm=LLM(), policy=Policy(low_action="llm"))
    ambiguous = ("explain my last commit", (Repair("env", "my"),))  # a low-tier reading: the LLM decides
    monkeypatch.setattr(r.route_table.speller, "repair", lambda text: ambiguous)
    d = r.route("write tests for the env loader")
    assert (d.route, d.used_llm, len(asked)) == ("GIT_HELP", True, 1)  # asked once, its answer kept
    assert [x.used_llm for x in r.route_batch(["write tests for the env loader"])] == [True]
    out_of_scope = ("what is the weather in lyon tomorrow", (Repair("env", "weather"),))
    monkeypatch.setattr(r.route_table.speller, "repair", lambda text: out_of_scope)
    for typed in (
        r.route("write tests for the env loader", context_domains=["opps"]),
        *r.route_batch(["write tests for the env loader"], context_domains=["opps"]),
    ):
        assert typed.route == "WRITE_TESTS" and not typed.used_llm
        assert {"spelling", "context_domain"} <= {a.kind for a in typed.alerts}
    assert [a.kind for a in r.route(" ", context_domains=["opps"]).alerts] == ["context_domain"]
