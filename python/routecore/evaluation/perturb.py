"""Perturbed copies of queries, for the robustness suite (issue 34 §4; ``benches/robustness.py``).

Every function is deterministic for a given ``seed`` and keeps the query's meaning for a person:

- :func:`typos`: a share of the letters swapped with a neighbour, dropped, doubled or replaced
  by a key next to it on a QWERTY keyboard;
- :func:`emoji`: emoji and exclamation marks around the words;
- :func:`shout`: upper case;
- :func:`repeat`: some words said twice;
- :func:`long_input`: the query first, then unrelated log lines up to ``size`` bytes (a pasted report);
  :func:`long_tail`: the log lines first, the query last (a request that closes a paste).
"""

from __future__ import annotations

import random

_KEYS = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
_NEAR: dict[str, str] = {}
for _r, _row in enumerate(_KEYS):
    for _i, _c in enumerate(_row):
        _NEAR[_c] = _row[max(_i - 1, 0) : _i] + _row[_i + 1 : _i + 2]
_EMOJI = ["🔥", "😱", "🙏", "👍", "🚀", "😅", "❗", "🤔"]
_LOG = (
    "2026-11-26T08:{m:02d}:{s:02d}Z worker-{w} INFO request id={i} status=200 latency_ms={l} "
    "path=/api/v1/items/{i}\n"
)


def typos(text: str, rate: float = 0.10, seed: int = 0) -> str:
    """``text`` with about ``rate`` of its letters mistyped (swap, drop, double or a neighbouring key)."""
    rng = random.Random(f"{seed}:{text}")
    out: list[str] = []
    chars = list(text)
    i = 0
    while i < len(chars):
        c = chars[i]
        if c.isalpha() and rng.random() < rate:
            kind = rng.randrange(4)
            if kind == 0 and i + 1 < len(chars) and chars[i + 1].isalpha():
                out += [chars[i + 1], c]
                i += 2
                continue
            if kind == 1:
                i += 1
                continue
            if kind == 2:
                out += [c, c]
            else:
                near = _NEAR.get(c.lower(), "")
                out.append(rng.choice(near) if near else c)
        else:
            out.append(c)
        i += 1
    return "".join(out)


def emoji(text: str, seed: int = 0) -> str:
    """``text`` between emoji, with exclamation marks."""
    rng = random.Random(f"{seed}:{text}")
    return f"{rng.choice(_EMOJI)}{rng.choice(_EMOJI)} {text} {rng.choice(_EMOJI)} help!!"


def shout(text: str) -> str:
    """``text`` in upper case."""
    return text.upper()


def repeat(text: str, seed: int = 0) -> str:
    """``text`` with about a third of its words said twice."""
    rng = random.Random(f"{seed}:{text}")
    words = text.split()
    return " ".join(w for word in words for w in ([word, word] if rng.random() < 0.33 else [word]))


def long_input(text: str, size: int = 20_000, seed: int = 0) -> str:
    """``text``, then log lines up to ``size`` UTF-8 bytes: a query pasted above a long report."""
    rng = random.Random(seed)
    parts, n = [text, "\n\n"], len(text.encode("utf-8")) + 2
    while n < size:
        line = _LOG.format(
            m=rng.randrange(60),
            s=rng.randrange(60),
            w=rng.randrange(8),
            i=rng.randrange(10**6),
            l=rng.randrange(900),
        )
        parts.append(line)
        n += len(line)
    return "".join(parts)[:size]


def long_tail(text: str, size: int = 20_000, seed: int = 0) -> str:
    """Log lines, then ``text`` as the last paragraph, ``size`` UTF-8 bytes in all: a request under a
    pasted report."""
    paste = long_input("", size - len(text.encode("utf-8")) - 2, seed).strip()
    return f"{paste}\n\n{text}"


#: The perturbations of the suite by name (each a function of the text and a seed).
PERTURBATIONS = {
    "typos": lambda t, s: typos(t, 0.10, s),
    "emoji": emoji,
    "upper": lambda t, s: shout(t),
    "repeat": repeat,
    "long": lambda t, s: long_input(t, 20_000, s),
    "long_tail": lambda t, s: long_tail(t, 20_000, s),
}
