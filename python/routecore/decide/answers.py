"""Reading the user's answer to a clarification question (``route(answer, clarify=d)``).

A question offers two or three routes by their own words ("Voulez-vous dire une demande de logiciel
ou un problème d'imprimante ?"). An answer that names one of them ("logiciel"), says which by its
place ("the second one", "le deuxième") or declines them all ("neither", "non, rien de tout ça") is
read as such before any score: the embedding of a one-word answer beside the first query says
little, and said the wrong option for "logiciel" above. Any other answer is scored among the
offered routes (:meth:`routecore.decide.route_decide.Decider.decide_step`).

Function words name nothing: the 200 most frequent words of each bundled language
(:func:`routecore.decide.words.common_words`: "the", "une", "first") neither name an option nor
count as the rest of an answer. A named option under a negation ("not the docs", "pas le logiciel")
is not picked (of two, the other is). A place or a "no" is read only when every other word of the
answer is a function word ("the second one", "aucun des deux"; not "it happened last week" or
"nothing works"). An answer that says no more than "yes", "both" or a place the question did not
offer ("3" of two) picks nothing: the question is asked again.

A word that another route of the config also shows names no option ("question" in "a billing
question" and "a delivery question"). An answer that names a route the question did not offer by
every word of its name or of its label ("no, a refund"; "a billing question") picks that route: the
user redirected the question.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence

from routecore.decide.words import LANGUAGES, common_words

#: Words that name an option by its place, in the languages questions are asked in
#: (:data:`routecore.decide.questions.FRAMES`); "last" is -1.
PLACES: dict[int, frozenset[str]] = {
    0: frozenset(
        "1 1st first premier premiere erste ersten erster primero primera primo prima primeiro"
        " 第一 第一个 最初 一番目".split()
    ),
    1: frozenset(
        "2 2nd second deuxieme seconde zweite zweiten zweiter segundo segunda secondo seconda"
        " 第二 第二个 二番目".split()
    ),
    2: frozenset(
        "3 3rd third troisieme dritte dritten tercero tercera terzo terza terceiro 第三 三番目".split()
    ),
    -1: frozenset("last latter dernier derniere letzte letzten ultimo ultima 最后 最後".split()),
}
#: Words that decline every option ("neither", "aucun des deux", a bare "no").
NO = frozenset(
    "neither none nothing nope no aucun aucune rien ni non keine keiner keines nichts weder nein"
    " ninguno ninguna nada nessuno nessuna niente nenhum nenhuma nem 都不是 没有 どれでもない いいえ".split()
)
#: Words that agree or are polite only ("yes", "ok", "please"): beside a place or a "no" they say nothing
#: ("yes, the first one"); alone, the answer picks nothing and the question is asked again.
YES = frozenset(
    "yes yeah yep yup ok okay please thanks oui ouais daccord merci svp stp ja jein bitte danke si favor"
    " gracias grazie sim 是 是的 好 谢谢 はい".split()
)
#: Words that take every option or any ("both", "les deux", "whichever"): the question is asked again.
BOTH = frozenset(
    "both two all either whichever deux tous toutes beide zwei ambos ambas dos todos entrambi due tutti"
    " 都 两个 両方".split()
)
VAGUE = YES | BOTH
#: Words that negate the word after them (or the one after an article): "not the docs".
NOT = frozenset("not no pas ni nicht kein keine keinen nein non nem nao".split())
#: Option words shorter than this name nothing alone ("de", "un", "my").
MIN_LETTERS = 3
#: Words that share this many first letters name the same option ("logiciels", "logiciel").
STEM = 5

_TOKEN = re.compile(r"\w+|[^\w\s]")


def _fold(text: str) -> list[str]:
    """Lower-case words and punctuation marks without accents ("Deuxième" → "deuxieme"); "_" and
    "-" split words."""
    bare = unicodedata.normalize("NFKD", text.replace("_", " ").replace("-", " ").casefold())
    return _TOKEN.findall("".join(c for c in bare if not unicodedata.combining(c)))


def _words(text: str) -> list[str]:
    return [t for t in _fold(text) if t[0].isalnum()]


@functools.lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """The bundled languages' most frequent words, folded as answers are."""
    return frozenset(w for lang in LANGUAGES for word in common_words(lang) for w in _words(word))


@dataclass(frozen=True)
class Answer:
    """What an answer says: the ``route`` it picks (None: none of the offered ones), ``how``
    (``named``, ``place``, ``other``: it rules out the other of two options, ``elsewhere``: it names a
    route the question did not offer, ``declined``, or ``unclear``: it says no more than "yes", "both"
    or a place the question did not offer, and is asked again) and the answer's ``word`` that says it."""

    route: str | None
    how: str
    word: str


def _same(a: str, b: str) -> bool:
    return a == b or (min(len(a), len(b)) >= STEM and a[:STEM] == b[:STEM] and a[0].isalpha())


def _negated(tokens: list[str], at: int) -> bool:
    """Whether the word at ``at`` follows a negation within two words, no punctuation between but an
    elision's apostrophe ("not the docs", "pas d'imprimante"; "no, billing" names billing)."""
    seen = 0
    for t in reversed(tokens[:at]):
        if t in _APOSTROPHES:
            continue
        if not t[0].isalnum() or seen == 2:
            return False
        if t in NOT:
            return True
        seen += 1
    return False


_APOSTROPHES = frozenset("'’")


def read_answer(
    answer: str, options: Sequence[tuple[str, str]], others: Sequence[tuple[str, str]] = ()
) -> Answer | None:
    """The route ``answer`` picks among ``options`` (each ``(route, the words the question showed
    for it)``, in the question's order), or None when it says neither which nor "no" (module docs);
    ``others``: the config's other routes, as ``(route, shown words)``.

    An option is named by a word of its own (its shown words and its route name, function words
    aside) that no other route has; an answer naming two options picks none ("neither A nor B"
    declines them)."""
    tokens = _fold(answer)
    words = [t for t in tokens if t[0].isalnum()]
    if not words or len(options) < 2:
        return None
    common = function_words()
    own = [_content(shown, common) | _content(route, common) for route, shown in [*options, *others]]
    names = [_content(route, common) for route, _ in options]
    named: dict[str, str] = {}
    negated: dict[str, str] = {}
    for i, (route, _) in enumerate(options):
        rest = set().union(*(o for j, o in enumerate(own) if j != i))
        other_names = set().union(*(n for j, n in enumerate(names) if j != i))
        mine = [w for w in own[i] if not any(_same(w, o) for o in rest)]
        mine += [w for w in names[i] if w not in other_names]  # its own name always names it
        for at, t in enumerate(tokens):
            if t[0].isalnum() and any(_same(t, w) for w in mine):
                if _negated(tokens, at):
                    negated.setdefault(route, t)
                else:
                    named.setdefault(route, t)
    no = next((w for w in words if w in NO), None)
    elsewhere = _named_elsewhere(tokens, others, common)  # a route not offered, named whole
    picked = [r for r in named if r not in negated]
    if len(picked) == 1 and len(named) == 1:  # "not the docs, the ticket" names the ticket
        word = named[picked[0]]
        if elsewhere is not None:  # by the same word: "a billing dispute" is BILLING_DISPUTES
            its = _content(dict(others)[str(elsewhere.route)], common) | _content(
                str(elsewhere.route), common
            )
            if any(_same(word, w) for w in its):
                return elsewhere
        return Answer(picked[0], "named", word)
    if not named and negated:  # "not billing, shipping please": a route not offered, else the other one
        if elsewhere is not None:
            return elsewhere
        ((out, word),) = negated.items() if len(negated) == 1 else ((None, ""),)
        if out is not None and len(options) == 2 and _only(words, word, common):
            return Answer(next(r for r, _ in options if r != out), "other", word)
    if named or negated:  # two options, or only negated ones: "neither A nor B" declines them
        return Answer(None, "declined", no) if no is not None and no != "no" else None
    for place, said in PLACES.items():
        where = next((i for i, t in enumerate(tokens) if t in said), None)
        if where is None:
            continue
        word = tokens[where]
        if place < len(options) and _only(words, word, common):
            if _negated(tokens, where):  # "not the first": which is meant is not said
                return Answer(None, "unclear", word)
            return Answer(options[place][0], "place", word)
    if no is not None and _only(words, no, common):
        return Answer(None, "declined", no)
    if elsewhere is not None:
        return elsewhere
    vague = [w for w in words if w in VAGUE or w in _SAYING or w.isdigit()]  # "4": a place not offered
    if vague and all(w in common or w in vague for w in words):  # "yes", "both", "3" of two
        return Answer(None, "unclear", vague[0])
    return None


def _content(text: str, common: frozenset[str]) -> set[str]:
    """The words of ``text`` that can name a route: not function words, at least MIN_LETTERS long."""
    return {w for w in _words(text) if len(w) >= MIN_LETTERS and w not in common}


def _named_elsewhere(
    tokens: list[str], others: Sequence[tuple[str, str]], common: frozenset[str]
) -> Answer | None:
    """The one route of ``others`` the answer names by every word of its name or of its shown words,
    none of them negated ("a billing question" for BILLING, labelled so); None for none or several."""
    hits: dict[str, str] = {}
    for route, shown in others:
        for text in (route, shown):
            need = _content(text, common)
            at = [next((k for k, t in enumerate(tokens) if _same(t, w)), None) for w in need]
            if need and all(k is not None and not _negated(tokens, k) for k in at):
                hits.setdefault(route, tokens[min(k for k in at if k is not None)])
    if len(hits) != 1:
        return None
    ((route, word),) = hits.items()
    return Answer(route, "elsewhere", word)


#: Every word that says a place or a "no".
_SAYING = frozenset().union(*PLACES.values()) | NO


def _only(words: list[str], word: str, common: frozenset[str]) -> bool:
    """Whether every word of the answer but ``word`` is a function word, a place, a "no" or a "yes" (an
    elided article's letter too: "d'imprimante")."""
    return all(
        w == word or w in common or w in _SAYING or w in YES or (len(w) == 1 and w.isalpha()) for w in words
    )
