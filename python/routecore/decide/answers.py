"""Reading the user's answer to a clarification question (``route(answer, clarify=d)``).

A question offers two or three routes by their own words ("Voulez-vous dire une demande de logiciel
ou un problème d'imprimante ?"). An answer that names one of them ("logiciel"), says which by its
place ("the first one", "le deuxième") or declines them all ("neither", "non, rien de tout ça") is
read as such before any score: the embedding of a one-word answer beside the first query says
little, and said the wrong option for "logiciel" above. Any other answer is scored among the
offered routes as before (:meth:`routecore.decide.route_decide.Decider.decide_step`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Sequence

#: Words that name an option by its place, in the languages questions are asked in
#: (:data:`routecore.decide.questions.FRAMES`); "last" is -1.
PLACES: dict[int, frozenset[str]] = {
    0: frozenset(
        "1 1st first premier premiere erste ersten erster primero primera primo prima primeiro"
        " 第一 第一个 最初 一番目".split()
    ),
    1: frozenset(
        "2 2nd second deuxieme second seconde zweite zweiten zweiter segundo segunda secondo"
        " seconda 第二 第二个 二番目".split()
    ),
    2: frozenset(
        "3 3rd third troisieme dritte dritten tercero tercera terzo terza terceiro 第三 三番目".split()
    ),
    -1: frozenset("last latter dernier derniere letzte letzten ultimo ultima 最后 最後".split()),
}
#: Words that decline every option ("neither", "aucun des deux"), and a bare "no" (an answer of at
#: most two words: "no, the software one" says more than no).
NO = frozenset(
    "neither none nothing aucun aucune rien ni keine keiner keines nichts weder ninguno ninguna nada"
    " nessuno nessuna niente nenhum nenhuma nem 都不是 没有 どれでもない".split()
)
BARE_NO = frozenset("no nope non nein いいえ".split())
#: An answer of more words than this is a new request, not a choice by place or a "no".
SHORT = 6
#: Option words shorter than this name nothing alone ("de", "un", "my").
MIN_LETTERS = 3
#: Words that share this many first letters name the same option ("logiciels", "logiciel").
STEM = 5

_WORD = re.compile(r"\w+")


def _fold(text: str) -> list[str]:
    """Lower-case words without accents ("Deuxième" → "deuxieme"); "_" and "-" split words."""
    bare = unicodedata.normalize("NFKD", text.replace("_", " ").replace("-", " ").casefold())
    return _WORD.findall("".join(c for c in bare if not unicodedata.combining(c)))


@dataclass(frozen=True)
class Answer:
    """What an answer says: the offered ``route`` it picks (None: none of them), ``how``
    (``named``, ``place`` or ``declined``) and the answer's ``word`` that says it."""

    route: str | None
    how: str
    word: str


def _same(a: str, b: str) -> bool:
    return a == b or (min(len(a), len(b)) >= STEM and a[:STEM] == b[:STEM] and a[0].isalpha())


def read_answer(answer: str, options: Sequence[tuple[str, str]]) -> Answer | None:
    """The option ``answer`` picks among ``options`` (each ``(route, the words the question showed
    for it)``, in the question's order), or None when it says neither which nor "no".

    An option is named by a word of its own (its shown words and its route name) that no other
    option has; an answer naming two options picks none. A short answer may say the place ("the
    second one") or decline them all ("neither"); a name wins over a "no" ("no, the refund")."""
    words = _fold(answer)
    if not words or len(options) < 2:
        return None
    own = [set(_fold(shown)) | set(_fold(route)) for route, shown in options]
    named: dict[str, str] = {}
    for i, (route, _) in enumerate(options):
        others = set().union(*(o for j, o in enumerate(own) if j != i))
        mine = [w for w in own[i] if len(w) >= MIN_LETTERS and not any(_same(w, o) for o in others)]
        hit = next((a for a in words if any(_same(a, w) for w in mine)), None)
        if hit is not None:
            named[route] = hit
    if len(named) == 1:
        route, hit = next(iter(named.items()))
        return Answer(route, "named", hit)
    if named or len(words) > SHORT:
        return None
    for place, said in PLACES.items():
        at = next((w for w in words if w in said), None)
        if at is not None and place < len(options):
            return Answer(options[place][0], "place", at)
    no = next((w for w in words if w in NO or (w in BARE_NO and len(words) <= 2)), None)
    return Answer(None, "declined", no) if no is not None else None
