"""Typo repair against a router's own vocabulary (issue 34 §4).

A subword encoder reads "pasword resset" as other pieces than "password reset", and a typo on
one word in ten cost 4-41 points of right routes on dev queries (BENCHMARKS.md, robustness).
A :class:`Speller` knows the words of a router's exemplars. A query word it does not know,
of at least :data:`MIN_LETTERS` letters, that one edit (two from :data:`TWO_EDITS` letters on)
turns into exactly one of its words, and that the encoder's tokenizer does not know as a whole
word either, is read as that word. Nothing else changes: a word the tokenizer knows is a word,
not a typo, however close it is to an exemplar's.

Edits are those of a keyboard: a letter dropped, doubled, swapped with the next, or replaced.
Lookups go through the deletions of each word (symmetric delete), so a query costs
O(words x length^2) dictionary reads. A doubled letter whose removal gives a vocabulary word
is that word (it is no inflection: "neeed", "namee"); between vocabulary words at the same
distance, the one more of the exemplars use wins, and a tie is left alone. Words of 2-3 letters
are read only through a swap, a doubled letter or, failing those, a key beside on a QWERTY,
AZERTY or QWERTZ keyboard ("teh", "mmy", "thw"). These rules add 2-5 points of right routes under
typos on the English dev sets, 1 on French, and move clean queries by at most 0.1 (e5, k = 10;
BENCHMARKS.md, robustness). A word the tokenizer knows in upper case is an acronym ("AMD"), not a typo.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

#: Shorter words are read only through a swap of two neighbouring letters, a doubled letter or a
#: key beside ("teh", "yuo", "mmy", "thw"): any edit reaches too many of them.
MIN_LETTERS = 4
#: Words under this many letters are left alone.
SHORT_LETTERS = 2
#: From this many letters, two edits are repaired.
TWO_EDITS = 8
#: Query words whose reading a speller remembers (their lookups cost 10-50 µs each); it starts
#: over when full.
MEMO_WORDS = 20_000
_UNSEEN = ""  # never a repair: those are vocabulary words


def _beside(rows: Sequence[str]) -> dict[str, set[str]]:
    near: dict[str, set[str]] = {}
    for row in rows:
        for i, c in enumerate(row):
            near.setdefault(c, set()).update(row[max(i - 1, 0) : i] + row[i + 1 : i + 2])
    return near


#: The keys beside each letter on a QWERTY, AZERTY or QWERTZ keyboard (the user's is unknown).
_BESIDE: dict[str, str] = {
    c: "".join(sorted(v))
    for c, v in _beside(
        ["qwertyuiop", "asdfghjkl", "zxcvbnm", "azertyuiop", "qsdfghjklm", "wxcvbn", "qwertzuiop", "yxcvbnm"]
    ).items()
}
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
#: Endings that make another form of a word (English, French, Spanish, German): a query word that
#: differs from an exemplar word only in such endings is that word inflected, not mistyped
#: ("crashed" beside an exemplar's "crashes").
INFLECTIONS = frozenset({"", "s", "es", "ed", "d", "ing", "er", "ers", "e", "en", "n", "ly"})


def _inflected(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ only in their :data:`INFLECTIONS`."""
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    return a[p:] in INFLECTIONS and b[p:] in INFLECTIONS


def _deletes(word: str, depth: int) -> set[str]:
    out, frontier = {word}, {word}
    for _ in range(depth):
        frontier = {w[:i] + w[i + 1 :] for w in frontier for i in range(len(w))}
        out |= frontier
    return out


def _distance(a: str, b: str) -> int:
    """Optimal string alignment distance (insert, delete, replace, adjacent swap)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


@dataclass(frozen=True)
class Repair:
    """One word read as another: ``typo`` -> ``word``."""

    typo: str
    word: str


class Speller:
    """The words of ``texts`` (lower case, letters only) and their deletions.

    ``known``: a predicate on a batch of words, true for those the encoder's tokenizer knows
    as whole words (:func:`tokenizer_words`); such words are never repaired. Without it
    nothing is: a word could not be told from a typo."""

    def __init__(
        self, texts: Iterable[str], known: Callable[[Sequence[str]], Sequence[bool]] | None = None
    ) -> None:
        # Without a tokenizer nothing is repaired: no index to build.
        self._uses: Counter[str] = (
            Counter(w for t in texts for w in _WORD.findall(t.lower()) if len(w) >= SHORT_LETTERS)
            if known is not None
            else Counter()
        )
        self.words = frozenset(self._uses)
        self._index: dict[str, set[str]] = {}
        for w in self.words:
            if len(w) < MIN_LETTERS:
                continue
            for d in _deletes(w, 2 if len(w) >= TWO_EDITS - 1 else 1):
                self._index.setdefault(d, set()).add(w)
        self._known = known
        # word -> its repair (None: none), once looked up and checked against the tokenizer.
        self._memo: dict[str, str | None] = {}

    def _reading(self, words: list[str]) -> list[str | None]:
        """The repair of each of ``words`` (None: none), remembered per word."""
        memo = self._memo  # shared by the threads that route: read once per word, never re-read
        got = {w: memo.get(w, _UNSEEN) for w in words}
        todo = [w for w, c in got.items() if c is _UNSEEN]
        if todo:
            found = {w: self._candidate(w) for w in todo}
            picked = [w for w in todo if found[w] is not None]
            assert self._known is not None
            for w, k in zip(picked, self._known(picked) if picked else ()):
                if k:  # a word the tokenizer knows is a word, not a typo
                    found[w] = None
            got.update(found)
            if len(memo) + len(found) > MEMO_WORDS:
                memo.clear()
            memo.update(found)
        return [got[w] for w in words]

    def _candidate(self, word: str) -> str | None:
        undoubled = {word[:i] + word[i + 1 :] for i in range(1, len(word)) if word[i] == word[i - 1]}
        if undoubled & self.words:  # a key held down: no inflection doubles a letter
            return self._most_used(undoubled & self.words)
        if len(word) < MIN_LETTERS:  # "teh": two neighbouring letters swapped, else a key beside ("thw")
            swapped = self._most_used(
                {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}
            )
            if swapped is not None:
                return swapped
            return self._most_used(
                {word[:i] + c + word[i + 1 :] for i, ch in enumerate(word) for c in _BESIDE.get(ch, "")}
            )
        depth = 2 if len(word) >= TWO_EDITS else 1
        found: set[str] = set()
        for d in _deletes(word, depth):
            found |= self._index.get(d, set())
        dist = {w: _distance(word, w) for w in found}
        best = [w for w, d in dist.items() if d <= depth]
        if not best or any(_inflected(word, w) for w in best):  # a form of a known word: not a typo
            return None
        top = min(dist[w] for w in best)
        return self._most_used({w for w in best if dist[w] == top})

    def _most_used(self, words: set[str]) -> str | None:
        """The vocabulary word of ``words`` the most exemplars use; None when there is none, or when
        two share the most uses."""
        ranked = sorted(words & self.words, key=lambda w: -self._uses[w])
        if not ranked or len(ranked) > 1 and self._uses[ranked[0]] == self._uses[ranked[1]]:
            return None
        return ranked[0]

    def repair(self, text: str) -> tuple[str, tuple[Repair, ...]]:
        """``text`` with its repairable words read as the vocabulary's, and the repairs."""
        if not self.words or self._known is None:
            return text, ()
        spans = [
            (m.start(), m.end(), m.group().lower())
            for m in _WORD.finditer(text)
            if len(m.group()) >= SHORT_LETTERS and m.group().lower() not in self.words
        ]
        if not spans:
            return text, ()
        reads = self._reading([w for _, _, w in spans])
        picks = [(s, e, w, c) for (s, e, w), c in zip(spans, reads) if c is not None]
        if not picks:
            return text, ()
        out, last, repairs = [], 0, []
        for s, e, _w, c in picks:
            assert c is not None
            out += [text[last:s], c]
            last = e
            repairs.append(Repair(text[s:e], c))
        out.append(text[last:])
        return "".join(out), tuple(repairs)


def tokenizer_words(encoder: object) -> Callable[[Sequence[str]], list[bool]] | None:
    """A ``known`` predicate for :class:`Speller` from an encoder's ``tokenize`` (a word is
    known when it, capitalised or in upper case, costs no more pieces than the one-letter word
    "a"), or None when the encoder has no tokenizer (then nothing is repaired: a word could not be
    told from a typo). A cased vocabulary holds names capitalised and acronyms in upper case only:
    "Thursday" is one piece of e5's, "thursday" three, and was read as "tuesday"; "AMD" is one."""
    tokenize = getattr(encoder, "tokenize", None)
    if tokenize is None:
        return None

    def known(words: Sequence[str]) -> list[bool]:
        n = len(words)
        base, *rest = tokenize(["a", *words, *(w.capitalize() for w in words), *(w.upper() for w in words)])
        one = [len(ids) <= len(base) for ids in rest]
        return [a or b or c for a, b, c in zip(one[:n], one[n : 2 * n], one[2 * n :])]

    return known


def notes_of(repairs: Sequence[Repair]) -> tuple[tuple[str, str], ...]:
    """The ``spelling`` alert for ``repairs`` (none when there are none)."""
    if not repairs:
        return ()
    said = ", ".join(f"{r.typo!r} as {r.word!r}" for r in repairs)
    return (("spelling", f"read {said}: words of the routes' exemplars the query seems to mistype"),)
