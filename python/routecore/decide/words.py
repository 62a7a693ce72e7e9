"""Word frequencies that typo repair weighs its readings by (:mod:`routecore.decide.spelling`).

Bundled for English, French, German, Spanish, Italian and Portuguese (``data/words/``, built by
``scripts/make_words.py`` from pyspellchecker's dictionaries, MIT, counts from OpenSubtitles): up to
100,000 of each language's most frequent words. A table is read once per process (50-60 ms), when a
router first needs it, and shared by every router; :func:`languages_of` picks the tables of the
languages a router's exemplars are written in, from each language's 200 most frequent words.
"""

from __future__ import annotations

import functools
import gzip
import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

WORDS_DIR = Path(__file__).resolve().parents[1] / "data" / "words"
#: The languages with a bundled table.
LANGUAGES = ("en", "fr", "de", "es", "it", "pt")
#: A language's table is used when at least this share of the exemplars' words are among its most
#: frequent ones (running text: about half; another language's: a few shared words, under a tenth).
MIN_SHARE = 0.2


@dataclass(frozen=True)
class WordTable:
    """One language's words and the natural log of each one's share of the source's words."""

    language: str
    log_share: Mapping[str, float]
    #: Under every word kept: the log share of a word seen half as often as the rarest one kept.
    floor: float
    #: The letters of the language's words (those a dropped letter can be).
    letters: str


@functools.lru_cache(maxsize=None)
def word_table(language: str) -> WordTable:
    """The bundled table of ``language`` (one of :data:`LANGUAGES`), read once per process."""
    lines = gzip.decompress((WORDS_DIR / f"{language}.txt.gz").read_bytes()).decode().split("\n")
    head = json.loads(lines[0])
    words, counts = lines[1].split(" "), lines[2].split(" ")
    logs = np.log(np.array(counts, dtype=np.float64)) - math.log(head["total"])
    letters = "".join(sorted(set("".join(words[:20_000]))))
    return WordTable(language, dict(zip(words, logs.tolist())), float(logs[-1]) - math.log(2), letters)


@functools.lru_cache(maxsize=1)
def _top() -> dict[str, frozenset[str]]:
    raw = json.loads((WORDS_DIR / "top.json").read_text(encoding="utf-8"))
    return {lang: frozenset(words) for lang, words in raw.items()}


def common_words(language: str) -> frozenset[str]:
    """The 200 most frequent words of ``language`` (one of :data:`LANGUAGES`)."""
    return _top()[language]


def languages_of_texts(texts: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The bundled languages texts (each its words, lower case) are written in: those of their words
    pooled (:func:`languages_of`), then any other that is the first language of at least
    :data:`MIN_SHARE` of the texts (a config with a French majority and a third of English exemplars
    is both)."""
    pooled = languages_of(w for t in texts for w in t)
    firsts = Counter(first[0] for first in (languages_of(t) for t in texts) if first)
    more = [lang for lang, c in firsts.most_common() if lang not in pooled and c >= MIN_SHARE * len(texts)]
    return pooled + tuple(more)


def languages_of(words: Iterable[str]) -> tuple[str, ...]:
    """The bundled languages ``words`` (lower case, with repeats) are written in: those whose most
    frequent words make up at least :data:`MIN_SHARE` of them and half the best language's share,
    most covered first."""
    uses = Counter(words)
    n = sum(uses.values())
    if not n:
        return ()
    share = {lang: sum(c for w, c in uses.items() if w in top) / n for lang, top in _top().items()}
    least = max(MIN_SHARE, max(share.values()) / 2)
    return tuple(sorted((lang for lang, s in share.items() if s >= least), key=lambda lang: -share[lang]))
