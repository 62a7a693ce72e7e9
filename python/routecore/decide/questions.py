"""The clarification question, in the language of the config whose routes it names.

A question reads "Do you mean a refund or a billing question?" with the routes' own words (their
``label``, else description, else name), so its frame must be in their language: a French config
gets "Voulez-vous dire une question de paie ou un problème informatique ?", not an English frame
around French labels. The language is read from the words of the routes the question names,
among the languages the config's routes are written in (labels, descriptions and exemplars:
:func:`config_languages`); a config in none of the known languages gets the English frame.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from routecore.config.specs import RouteSpec
from routecore.decide.words import LANGUAGES, common_words, languages_of


@dataclass(frozen=True)
class Frame:
    """How a language asks "do you mean A, B or C?"."""

    #: The question around one option: ``one.format(a)``.
    one: str
    #: Before the options, between all but the last two, before the last one, after them.
    start: str
    comma: str
    last: str
    end: str
    #: After three or more options, where the language says it otherwise (Japanese).
    end_many: str | None = None


#: The frames of the languages a question can be asked in (the bundled word tables' and two CJK ones).
FRAMES: dict[str, Frame] = {
    "en": Frame("Do you mean {}?", "Do you mean ", ", ", " or ", "?"),
    "fr": Frame("Voulez-vous dire {} ?", "Voulez-vous dire ", ", ", " ou ", " ?"),
    "de": Frame("Meinen Sie {}?", "Meinen Sie ", ", ", " oder ", "?"),
    "es": Frame("¿Quiere decir {}?", "¿Quiere decir ", ", ", " o ", "?"),
    "it": Frame("Intende {}?", "Intende ", ", ", " o ", "?"),
    "pt": Frame("Quer dizer {}?", "Quer dizer ", ", ", " ou ", "?"),
    "zh": Frame("您是指{}吗？", "您是指", "、", "还是", "？"),
    "ja": Frame("{}ですか？", "", "、", "と", "のどちらですか？", "のどれですか？"),
}
#: The frame of a config written in no language of :data:`FRAMES`.
DEFAULT = "en"
#: Frequent words a text needs before its language is read from them.
MIN_WORDS = 3

_WORD = re.compile(r"[^\W\d_]+")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")


def _scripts(text: str) -> str | None:
    """Japanese ("ja") for text mostly in CJK characters with kana among them, Chinese ("zh") for
    one mostly in Han characters without kana, else None (a Chinese name among English labels is
    no Chinese config)."""
    kana, han = len(_KANA.findall(text)), len(_HAN.findall(text))
    if not kana + han or 2 * (kana + han) < len(_LATIN.findall(text)):
        return None
    return "ja" if kana else "zh"


@functools.lru_cache(maxsize=1)
def _frequent() -> frozenset[str]:
    """The most frequent words of every bundled language."""
    return frozenset().union(*(common_words(lang) for lang in LANGUAGES))


def _languages(texts: Iterable[str]) -> tuple[str, ...]:
    """The languages ``texts`` are written in; none when fewer than :data:`MIN_WORDS` of their words
    are frequent words of a known language (one "e" does not make test names Italian)."""
    joined = " ".join(texts)
    cjk = _scripts(joined)
    if cjk:
        return (cjk,)
    words = [w.lower() for w in _WORD.findall(joined) if len(w) > 1]  # "e0", "a": no evidence
    frequent = _frequent()
    if sum(w in frequent for w in words) < MIN_WORDS:
        return ()
    return languages_of(words)


def config_languages(specs: Sequence[RouteSpec]) -> tuple[str, ...]:
    """The languages of :data:`FRAMES` a config's routes are written in, most used first: those of
    the words its questions show (labels, else descriptions), else of its exemplars."""
    shown = [s.label or s.description for s in specs if s.label or s.description]
    return _languages(shown) or _languages(u for s in specs for u in s.utterances)


def question_language(shown: Sequence[str], languages: Sequence[str]) -> str:
    """The language to ask about the options ``shown`` in: the first of the config's ``languages``
    that their own words are written in (a config of French and English routes asks about English
    labels in English), else the config's first, else :data:`DEFAULT`."""
    own = _languages(shown)
    for lang in own:
        if lang in languages:
            return lang
    return languages[0] if languages else DEFAULT


#: How each language quotes an option, when the options hold the words that join them.
QUOTES: dict[str, tuple[str, str]] = {
    "fr": ("« ", " »"),
    "de": ("„", "“"),
    "ja": ("「", "」"),
    "zh": ("“", "”"),
}


def in_sentence(description: str) -> str:
    """A route's description as an option inside a question: a sentence of three words or more
    whose first word is a plain capitalised word starts lower-case ("Look up the docs" → "look up the
    docs"); "VPN access problems", "iPhone" and a name alone ("Outlook") stay."""
    words = description.split()
    first = words[0] if words else ""
    if len(words) >= 3 and len(first) > 1 and first[0].isupper() and first[1:].islower():
        return description[0].lower() + description[1:]
    return description


#: Languages whose nouns keep their capital inside a sentence: their descriptions are shown as written.
CAPITALISED_NOUNS = frozenset({"de"})


@functools.lru_cache(maxsize=4096)
def asked(shown: tuple[str, ...], languages: tuple[str, ...], described: tuple[bool, ...]) -> str:
    """:func:`question` about ``shown`` in :func:`question_language`'s language, the options that
    are descriptions (``described``) read :func:`in_sentence` but in German; remembered: a router
    asks the same few questions again and again."""
    language = question_language(shown, languages)
    if language not in CAPITALISED_NOUNS:
        shown = tuple(in_sentence(o) if d else o for o, d in zip(shown, described))
    return question(shown, language)


def question(shown: Sequence[str], language: str) -> str:
    """The question that offers ``shown`` (one or more), in ``language`` (:data:`FRAMES`; another
    language gets the English frame). Options that hold the frame's own joining words ("commit,
    branch or diff") are quoted, so the list still reads as its options."""
    f = FRAMES.get(language, FRAMES[DEFAULT])
    joins = [j.strip() for j in (f.comma, f.last) if j.strip()]
    if len(shown) > 1 and any(_joins(o, joins) for o in shown):
        left, right = QUOTES.get(language, ('"', '"'))
        shown = [f"{left}{o}{right}" for o in shown]
    if len(shown) == 1:
        return f.one.format(shown[0])
    end = f.end_many if len(shown) > 2 and f.end_many else f.end
    return f.start + f.comma.join(shown[:-1]) + f.last + shown[-1] + end


def _joins(option: str, joins: Sequence[str]) -> bool:
    """Whether ``option`` holds one of a frame's joining words (a comma, "or", "ou", "还是")."""
    words = re.findall(r"\w+", option.casefold())
    return any(j in words if j.isascii() and j.isalpha() else j in option for j in joins)
