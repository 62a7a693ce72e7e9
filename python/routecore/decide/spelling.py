"""Typo repair against a router's own vocabulary and a language's word frequencies (issue 34 §4).

A subword encoder reads "pasword resset" as other pieces than "password reset", and a typo on
one word in ten cost 4-41 points of right routes on dev queries (BENCHMARKS.md, robustness).
A :class:`Speller` knows the words of a router's exemplars and, for the languages they are
written in (:func:`routecore.decide.words.languages_of`), how often each word of the language is
used. A query word is read as another when that reading is more likely, the slip included:

- the readings of a word are the words one keyboard slip away from it (two neighbouring letters
  swapped, a key held down, a letter dropped, a key beside hit on a QWERTY, AZERTY or QWERTZ
  keyboard), the exemplars' words two such slips away from :data:`TWO_SLIPS` letters on, and
  two edits of any kind away from :data:`TWO_EDITS` letters on;
- a reading scores its word's log frequency, plus :data:`EXEMPLAR_BOOST` when the exemplars use
  it, minus :data:`EDIT_COST` per slip; the word as typed scores its own log frequency, plus
  :data:`REAL_WORD_COST` when the language has that word too ("gave" is not "have");
- a word no table lists but the encoder's tokenizer knows whole (a name, another language's word)
  is left alone, unless it is no frequent word of any bundled language and one keyboard slip
  gives it on one of the exemplars' language's 200 most frequent words, when it has under
  :data:`MIN_LETTERS` letters ("rhe", "dor", "wil"; "is" stays in a French config), or on one of
  the exemplars' words, when it is longer ("liek", "timme"); so are an
  exemplar's word, a word of one letter, and another form of the reading ("crashed", "crashes").

Without a table for the exemplars' language (Chinese, say) the exemplars' words alone are read:
one edit (two from :data:`TWO_EDITS` letters on) away from exactly one of them, unknown to the
tokenizer as a whole word; words of 2-3 letters through a swap, a doubled letter or a key beside.
A word the tokenizer knows in upper case is an acronym ("AMD"), not a typo. Lookups go through the
deletions of each exemplar word (symmetric delete) and the slips of each query word, so a query
costs O(words x length x letters) dictionary reads, and each word's reading is remembered.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from routecore.decide.words import (
    LANGUAGES,
    WordTable,
    common_words,
    languages_of,
    languages_of_texts,
    word_table,
)

#: Without a word table, shorter words are read only through a swap of two neighbouring letters, a
#: doubled letter or a key beside ("teh", "yuo", "mmy", "thw"): any edit reaches too many of them.
#: With one, shorter words the tokenizer knows are read so as the language's most frequent words.
MIN_LETTERS = 4
#: Words under this many letters are left alone.
SHORT_LETTERS = 2
#: Nor are words over this many (a run of unspaced text, Chinese: their lookups grow with their length,
#: and no table's word is this long).
LONG_LETTERS = 30
#: From this many letters, two edits are repaired.
TWO_EDITS = 8
#: From this many letters (and under :data:`TWO_EDITS`), two keyboard slips are repaired, with word
#: tables, to an exemplar's word: two edits of any kind read names as words ("gérard" -> "grand").
TWO_SLIPS = 5
#: Query words whose reading a speller remembers (their lookups cost 10-50 µs each); it starts
#: over when full.
MEMO_WORDS = 20_000
_UNSEEN = ""  # never a repair: those are vocabulary words
#: With word tables: the log-odds one keyboard slip costs a reading (chosen on dev splits with
#: typos on 10 % of letters, BENCHMARKS.md, robustness).
EDIT_COST = 5.5
#: With word tables: the log-odds a reading gains when the exemplars use its word.
EXEMPLAR_BOOST = 4.0
#: With word tables: the log-odds a word as typed gains when its language has it (a slip that
#: makes another word is rarer than one that makes none).
REAL_WORD_COST = 2.0
#: With word tables: how much less likely (log-odds) a word no table lists is meant as typed than the
#: rarest word a table keeps (an exemplar's word no table lists scores as that rarest word).
UNLISTED_COST = 9.0


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


def _swaps(word: str) -> set[str]:
    """``word`` with two neighbouring letters swapped, at each place."""
    return {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}


def _undoublings(word: str) -> set[str]:
    """``word`` with one of its doubled letters single (a key held down, undone)."""
    return {word[:i] + word[i + 1 :] for i in range(1, len(word)) if word[i] == word[i - 1]}


def _keys_beside(word: str) -> set[str]:
    """``word`` with one letter replaced by a key beside it (:data:`_BESIDE`)."""
    return {word[:i] + c + word[i + 1 :] for i, ch in enumerate(word) for c in _BESIDE.get(ch, "")}


def _slipped(word: str) -> set[str]:
    """The typos one keyboard slip makes of ``word``: two neighbouring letters swapped, a letter
    doubled or dropped, a key beside hit instead."""
    out = _swaps(word) | _keys_beside(word)
    out |= {word[:i] + word[i] + word[i:] for i in range(len(word))}
    out |= {word[:i] + word[i + 1 :] for i in range(len(word))}
    return out


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
        self,
        texts: Iterable[str],
        known: Callable[[Sequence[str]], Sequence[bool]] | None = None,
        languages: Sequence[str] | None = None,
    ) -> None:
        # Without a tokenizer nothing is repaired: no index to build.
        each = [_WORD.findall(t.lower()) for t in texts] if known is not None else []
        said = [w for t in each for w in t]
        self._uses: Counter[str] = Counter(w for w in said if len(w) >= SHORT_LETTERS)
        self.words = frozenset(self._uses)
        #: The languages whose word tables readings are weighed by (``languages``: None, those of the
        #: exemplars); each table is read when a query first needs it (:attr:`tables`).
        self.languages: tuple[str, ...] = (
            (languages_of_texts(each) if languages is None else tuple(languages)) if known is not None else ()
        )
        self._tables: tuple[WordTable, ...] | None = None
        # The most frequent words of those languages (short words the tokenizer knows may be them mistyped).
        self._common = frozenset().union(*(common_words(lang) for lang in self.languages))
        self._letters, self._rarest = "", 0.0  # the tables' letters and their rarest word's log share
        self._index: dict[str, set[str]] = {}
        # two-slip readings need word tables: without them two edits start at TWO_EDITS letters
        deep = (TWO_SLIPS if self.languages else TWO_EDITS) - 1
        for w in self.words:
            if len(w) < MIN_LETTERS:
                continue
            for d in _deletes(w, 2 if len(w) >= deep else 1):
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
            found = self._weighed(todo) if self.languages else self._by_exemplars(todo)
            got.update(found)
            if len(memo) + len(found) > MEMO_WORDS:
                memo.clear()
            memo.update(found)
        return [got[w] for w in words]

    @property
    def tables(self) -> tuple[WordTable, ...]:
        """The word tables of :attr:`languages`, read on first use (once per process)."""
        if self._tables is None:
            tables = tuple(word_table(lang) for lang in self.languages)
            self._letters = "".join(sorted({c for t in tables for c in t.letters}))
            self._rarest = min((t.floor for t in tables), default=0.0)
            self._tables = tables
        return self._tables

    def _share(self, word: str) -> float | None:
        """The highest log share of ``word`` over the tables (None: no table lists it)."""
        got = [v for v in (t.log_share.get(word) for t in self.tables) if v is not None]
        return max(got) if got else None

    def _by_exemplars(self, todo: list[str]) -> dict[str, str | None]:
        """Readings without a word table: an exemplar's word, unless the tokenizer knows the word."""
        found = {w: self._candidate(w) for w in todo}
        picked = [w for w in todo if found[w] is not None]
        assert self._known is not None
        for w, k in zip(picked, self._known(picked) if picked else ()):
            if k:  # a word the tokenizer knows is a word, not a typo
                found[w] = None
        return found

    def _weighed(self, todo: list[str]) -> dict[str, str | None]:
        """Readings weighed by the word tables. A word no table lists that the tokenizer knows stays,
        unless it is a frequent word or an exemplar's word mistyped (:meth:`_common_slip`)."""
        unlisted = [w for w in todo if self._share(w) is None]
        assert self._known is not None
        kept = {w for w, k in zip(unlisted, self._known(unlisted) if unlisted else ()) if k}
        return {w: self._common_slip(w) if w in kept else self._likeliest(w) for w in todo}

    def _common_slip(self, word: str) -> str | None:
        """The most frequent of the words one keyboard slip turns into ``word`` (a dropped letter
        too): of the languages' most frequent words when ``word`` is short ("wil", "th"), of the
        exemplars' words when it is longer ("liek"); None when ``word`` is a frequent word of any
        bundled language, or no slip gives it."""
        if any(word in common_words(lang) for lang in LANGUAGES):
            return None  # a frequent word of some language ("is" in a French config)
        found = self._slips(word) & (self.words if len(word) >= MIN_LETTERS else self._common)
        # not another form of the word ("temp" beside "temps")
        found = {w for w in found if len(word) < MIN_LETTERS or not _inflected(word, w)}
        return max(sorted(found), key=lambda w: self._share(w) or self._rarest) if found else None

    def _slips(self, word: str) -> set[str]:
        """The words one keyboard slip away from ``word`` (what it was before the slip)."""
        out = _swaps(word) | _undoublings(word) | _keys_beside(word)
        out |= {word[:i] + c + word[i:] for i in range(len(word) + 1) for c in self._letters}
        out.discard(word)
        return out

    def _likeliest(self, word: str) -> str | None:
        """The likeliest reading of ``word`` when it is not ``word`` itself (None)."""
        tables = self.tables  # read before their rarest word's share is
        share, words, rarest = self._share, self.words, self._rarest
        own = share(word)
        best = rarest - UNLISTED_COST if own is None else own + REAL_WORD_COST
        pick = None
        slips = self._slips(word)
        found = {c for c in slips if c in words}
        for t in tables:
            found |= {c for c in slips if c in t.log_share}
        for cand in sorted(found):  # sorted: ties go the same way every time
            listed = share(cand)
            v = (rarest if listed is None else listed) + EXEMPLAR_BOOST * (cand in words) - EDIT_COST
            if v > best:
                best, pick = v, cand
        if len(word) >= TWO_SLIPS:
            for d in _deletes(word, 2):
                for cand in self._index.get(d, ()):
                    listed = share(cand)
                    v = (rarest if listed is None else listed) + EXEMPLAR_BOOST - 2 * EDIT_COST
                    # two slips: one of cand's typos is one slip from word (one of its readings)
                    if (
                        v > best
                        and _distance(word, cand) == 2
                        and (len(word) >= TWO_EDITS or not slips.isdisjoint(_slipped(cand)))
                    ):
                        best, pick = v, cand
        if pick is None or own is None:
            # A word no table lists and the tokenizer does not know is no form of its reading
            # ("aroun", "schedul", "nees"; a key held down: "metss").
            return pick
        return None if _inflected(word, pick) else pick  # another form of it ("ann" is no "an")

    def _candidate(self, word: str) -> str | None:
        undoubled = _undoublings(word)
        if undoubled & self.words:  # a key held down: no inflection doubles a letter
            return self._most_used(undoubled & self.words)
        if len(word) < MIN_LETTERS:  # "teh": two neighbouring letters swapped, else a key beside ("thw")
            swapped = self._most_used(_swaps(word))
            return swapped if swapped is not None else self._most_used(_keys_beside(word))
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

    def _in_languages(self, text: str) -> bool:
        """Whether ``text`` may be in the exemplars' languages: its frequent words name no other
        bundled language alone ("le temps, si tu veux" in an English config is French: not read)."""
        said = languages_of(_WORD.findall(text.lower()))
        return not said or any(lang in self.languages for lang in said)

    def repair(self, text: str) -> tuple[str, tuple[Repair, ...]]:
        """``text`` with its repairable words read as the vocabulary's, and the repairs. A word in
        capitals is an acronym ("AMD"), and a capitalised word inside a sentence a name ("12 Main St",
        "play Hurts Like Heaven"): both are left as typed (a shouted query is in lower case by now);
        with word tables, a query in another language is left as typed."""
        if not self.words or self._known is None:
            return text, ()
        words = self.words
        if all(len(w) < SHORT_LETTERS or w.lower() in words for w in _WORD.findall(text)):
            return text, ()  # every word is the exemplars' (most queries): no span to build
        code = _code_spans(text)
        spans = [
            (m.start(), m.end(), m.group().lower())
            for m in _WORD.finditer(text)
            if SHORT_LETTERS <= len(m.group()) <= LONG_LETTERS
            and not (code and any(a <= m.start() < b for a, b in code))
            and not m.group().isupper()
            and not (m.group()[0].isupper() and not _starts_sentence(text, m.start()))
            and m.group().lower() not in self.words
        ]
        if not spans or self.languages and not self._in_languages(text):
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


#: Inline code, and a token that reads as code or a name ("parse_args", "bar.baz()", "--hard", "v2",
#: "camelCase", "~/.env"): its words are left as typed.
_INLINE_CODE = re.compile(r"`[^`]*`")
_TOKEN = re.compile(r"\S+")
_CODE_MARK = re.compile(r"[_/\\=(){}\[\]<>$@#~|]|\w\.\w|\d|[a-z][A-Z]|^-")


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Where ``text`` holds inline code or code-like tokens (:data:`_CODE_MARK`), as (start, end);
    one pass over its tokens."""
    spans = [m.span() for m in _INLINE_CODE.finditer(text)] if "`" in text else []
    return spans + [m.span() for m in _TOKEN.finditer(text) if _CODE_MARK.search(m.group())]


def _starts_sentence(text: str, at: int) -> bool:
    """Whether the word at ``at`` opens ``text`` or a sentence of it (after ".", "!", "?" or a new line)."""
    before = text[:at].rstrip()
    return not before or before[-1] in ".!?\n:;\"'«“(¿¡"


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
    return (("spelling", f"read {said}: the likelier words the query seems to mistype"),)
