"""Building the routing query from a conversation.

A conversation is a list of OpenAI-style message dicts (``{"role": "user",
"content": ...}``), LangChain message objects (``HumanMessage``, ``AIMessage``,
``ToolMessage``, ``SystemMessage``, ``ChatMessage``, their chunks ...), or a mix
of both. LangChain is never imported here: its messages are recognised by their
``type`` and ``content`` attributes.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, Mapping, Sequence

from routecore.decide.spelling import notes_of
from routecore.errors import InvalidArgumentError

__all__ = [
    "HUMAN_ROLES",
    "LONG_QUERY_CHARS",
    "head_of",
    "tail_of",
    "normalize_query",
    "read_query",
    "routing_text",
    "routing_query",
    "without_asides",
]

#: A query longer than this many characters (a pasted report, a log) is routed by its start:
#: its first paragraph when that fits, else its first LONG_QUERY_CHARS characters. The encoder
#: would otherwise mean-pool a few words of request with hundreds of tokens of paste, and
#: spend about half a second on them (BENCHMARKS.md, robustness).
LONG_QUERY_CHARS = 1000


#: Runs of a sentence's marks fold to one ("??"); runs of marks code also writes ("==", "--hard", "__init__",
#: "..", "::") are folded only from four on, to three (a "-----" rule). "!" is dropped first (_BANG).
_PUNCT_RUN = re.compile(r"([?,;])\1+")
_LONG_RUN = re.compile(r"([.:~*#=_-])\1{3,}")
#: Exclamation marks say how loud, not what: a "!" after CLINC150's dev queries cost 10 points of right routes
#: (e5, k = 10; BENCHMARKS.md, robustness). Those before anything but a letter, a digit, "=" or "/" go,
#: an opening "¡" too, those inside a word leave a space; one that opens an operator or a path ("!=",
#: "#!/bin/sh", "!x") stays.
_BANG_EDGE = re.compile(r"[!\u00a1]+(?![=/\w])|(?<![\w#])\u00a1+")
_BANG = re.compile(r"(?<=\w)[!\u00a1]+(?=\w)")
_SPACE = re.compile(r"[^\S\n]+")
_REPEAT = re.compile(r"\b(\w+)(\s+\1\b)+", re.IGNORECASE)
#: A token said twice with its punctuation ("card? card?", "I'm I'm"), on one line.
_REPEAT_TOKEN = re.compile(r"(?<!\S)(\S+)([^\S\n]+\1)+(?!\S)", re.IGNORECASE)
#: Where a sentence ends: an aside ("help!!", "thanks!") is a one-word sentence.
_STOPS = frozenset(".!?\u00a1\u00bf\u3002\uff01\uff1f")
_LOUD = frozenset("!\u00a1\uff01")
_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")


def _pictograph(ch: str) -> bool:
    """An emoji or another pictograph (arrows on: U+2190), not a letterlike sign such as "™" or "©"."""
    return ord(ch) >= 0x2190 and unicodedata.category(ch) == "So"


def _words(text: str) -> int:
    """Words in ``text``: runs of letters and digits, each Chinese or Japanese character one word."""
    return sum(max(1, len(_CJK.findall(w))) for w in _WORD.findall(text))


def _ends_sentence(text: str, i: int) -> bool:
    """Whether the "!" at ``i`` ends a sentence: not one before a letter, a digit, "=" or "/" ("!=",
    "#!/bin", "!x"), as :data:`_BANG_EDGE` reads it."""
    after = text[i + 1 : i + 2]
    return not (after.isalnum() or after == "_" or after in "=/") if after else True


def without_asides(text: str) -> str:
    """``text`` without its loud one-word sentences: a word set off by an emoji or a "!" ("... 😱 help!!",
    "Hi! ...", "... thanks!") says how the user feels, not what they ask, and pulls the encoder's vector
    away from the request (BENCHMARKS.md, robustness). Kept when the rest has under three words, and in a
    text of several lines (a clarified query is "question\nanswer", where one word answers)."""
    if "\n" in text or (text.isascii() and "!" not in text):
        return text
    parts: list[list[str]] = [[]]  # the sentences' characters; marks[i] ends sentence i - 1 (marks[0]: none)
    marks = [""]
    for i, ch in enumerate(text):
        if (ch in _STOPS and (ch != "!" or _ends_sentence(text, i))) or _pictograph(ch):
            marks.append(ch)
            parts.append([])
        else:
            parts[-1].append(ch)
    texts = ["".join(p) for p in parts]

    def loud(mark: str) -> bool:
        return mark in _LOUD or (bool(mark) and _pictograph(mark))

    aside = [
        _words(t) == 1
        and not _CJK.search(t)
        and (loud(marks[i]) or loud(marks[i + 1] if i + 1 < len(marks) else ""))
        for i, t in enumerate(texts)
    ]
    if not any(aside) or sum(_words(t) for t, a in zip(texts, aside) if not a) < 3:
        return text
    out = [marks[0]]
    for i, t in enumerate(texts):
        out.append(" " if aside[i] else t)
        if i + 1 < len(marks):
            out.append(marks[i + 1])
    return "".join(out)


def _first(m: re.Match[str]) -> str:
    return m.group(1)


def _three(m: re.Match[str]) -> str:
    return m.group(1) * 3


_NOT_WORD = re.compile(r"[^\w\s]")


def _unless_symbol(m: re.Match[str]) -> str:
    """The matched character, or nothing for a pictograph (``So``), a lone surrogate or an emoji joiner."""
    ch = m.group()
    return "" if unicodedata.category(ch) in ("So", "Cs") or ch in "\u200d\ufe0f\ufe0e" else ch


def _may_repeat(text: str) -> bool:
    """Whether ``_REPEAT`` or ``_REPEAT_TOKEN`` can match: some word or token occurs twice (checked
    on ASCII text, where their IGNORECASE is ``lower()``; other text always runs them)."""
    if not text.isascii():
        return True
    low = text.lower()
    tokens = low.split()
    words = _WORD.findall(low)
    return len(set(tokens)) < len(tokens) or len(set(words)) < len(words)


def normalize_query(text: str) -> str:
    """``text`` as the encoder should read it: emoji and other pictographs and exclamation marks
    dropped, runs of one punctuation mark (``??``), of one word said twice (``down down``) and of one
    token said twice on a line (``card? card?``) folded,
    white space folded, and a shouted text (four letters in five upper case) put in lower case. A clean
    query is left as it is; loud one-word sentences go (:func:`without_asides`). (BENCHMARKS.md,
    robustness: each fold measured on dev queries.)"""
    text = without_asides(text)
    # ASCII holds no pictograph, joiner or surrogate; elsewhere only characters that are neither word
    # nor space can be one (the callback reads their category).
    out = text if text.isascii() else _NOT_WORD.sub(_unless_symbol, text)
    if "!" in out or "\u00a1" in out:
        out = _BANG.sub(" ", _BANG_EDGE.sub("", out))
    out = _LONG_RUN.sub(_three, _PUNCT_RUN.sub(_first, out))
    if _may_repeat(out):
        out = _REPEAT_TOKEN.sub(_first, _REPEAT.sub(_first, out))
    if "  " in out or not out.isascii() or not out.replace("\n", "").isprintable():
        out = _SPACE.sub(" ", out)  # in ASCII, every space but " " and "\n" is unprintable
    out = out.strip()  # line breaks are kept: a clarified query is "question\nanswer"
    if out.lower() == out:  # nothing in upper case
        return out
    letters = [ch for ch in out if ch.isalpha()]
    if len(letters) >= 4 and sum(ch.isupper() for ch in letters) >= 0.8 * len(letters):
        out = out.lower()
    return out


def routing_text(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The text a router encodes for ``text`` (:func:`normalize_query` of :func:`head_of`; empty when
    nothing is left) and the alerts it calls for, as ``(kind, message)``: ``long_query`` (routed by
    its start), ``invalid_text`` (lone surrogates, which no encoder can read, were removed)."""
    head, long = head_of(text)
    notes: list[tuple[str, str]] = [("long_query", long)] if long else []
    bad = 0 if head.isascii() else sum(1 for ch in head if unicodedata.category(ch) == "Cs")
    if bad:
        notes.append(("invalid_text", f"{bad} lone surrogate(s) removed: they are not valid Unicode text"))
    return normalize_query(head), tuple(notes)


def read_query(text: str, speller: Any, repair: bool = True) -> tuple[str, tuple[tuple[str, str], ...]]:
    """What a router encodes for ``text`` and the alerts that say so: :func:`routing_text`, then the
    typos ``speller`` (a :class:`routecore.decide.spelling.Speller` of the router's own words) repairs,
    unless ``repair`` is off (routes and tool belts read a query alike)."""
    text, notes = routing_text(text)
    if not text or not repair:
        return text, notes
    text, repairs = speller.repair(text)
    return text, notes + notes_of(repairs)


def head_of(text: str, limit: int = LONG_QUERY_CHARS) -> tuple[str, str | None]:
    """(the part of ``text`` to route by, an alert line or None): ``text`` itself when it
    has at most ``limit`` characters, else its first paragraph when that is shorter, else
    its first ``limit`` characters cut at a space."""
    if len(text) <= limit:
        return text, None
    first = text.lstrip().split("\n\n", 1)[0].strip()
    if not first or len(first) > limit:
        cut = text[:limit]
        first = cut.rsplit(None, 1)[0] if " " in cut.strip() else cut
        what = f"its first {len(first)} characters"
    else:
        what = f"its first paragraph ({len(first)} characters)"
    return first, f"a long query ({len(text)} characters) was routed by {what}"


def tail_of(text: str, limit: int = LONG_QUERY_CHARS) -> str | None:
    """The end of a long ``text`` a router also reads (a request often closes a pasted report):
    its last paragraph when that fits in ``limit`` characters, else its last ``limit`` characters
    cut at a space; None when ``text`` is not long or its end is its start (:func:`head_of`)."""
    if len(text) <= limit:
        return None
    last = text.rstrip().rsplit("\n\n", 1)[-1].strip()
    if not last or len(last) > limit:
        cut = text.rstrip()[-limit:]
        last = cut.split(None, 1)[-1] if " " in cut.strip() else cut
    return None if last == head_of(text, limit)[0] else last


#: Roles (dicts) and types (LangChain messages) that mark a human turn.
HUMAN_ROLES = ("user", "human")
_HUMAN = frozenset(HUMAN_ROLES + ("HumanMessageChunk",))
_MISSING = object()


def _is_json_payload(text: str) -> bool:
    t = text.strip()
    if not t or t[0] not in "[{":
        return False
    try:
        return isinstance(json.loads(t), (dict, list))
    except ValueError:
        return False


def _text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of a list of content parts
    (strings and ``{"type": "text", "text": ...}`` blocks, as OpenAI and LangChain
    write them; images and other parts are skipped). ``None`` when ``content`` is
    neither a string nor a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = [
            p
            if isinstance(p, str)
            else p.get("text")
            if isinstance(p, Mapping) and p.get("type") == "text"
            else None
            for p in content
        ]
        return "\n".join(t for t in parts if isinstance(t, str) and t.strip())
    return None


def _bad(i: int, m: Any, why: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"routing_query: message {i} ({type(m).__name__}) {why}")


def _role_and_content(i: int, m: Any) -> tuple[str, Any]:
    """The role (``user``, ``assistant``, ``human``, ``ai``, ``tool`` ...) and the raw
    content of message ``i``; raises InvalidArgumentError when it is no message."""
    if isinstance(m, Mapping):
        role = m.get("role", _MISSING)
        if role is _MISSING:  # LangChain's dict form: {"type": "human", "content": ...}
            role = m.get("type", _MISSING)
        if not isinstance(role, str):
            raise _bad(
                i,
                m,
                'has no "role" string' if role is _MISSING else f'has a "role" of type {type(role).__name__}',
            )
        return role, m.get("content", _MISSING)
    role = getattr(m, "type", None)
    if isinstance(role, str) and hasattr(m, "content"):  # a LangChain BaseMessage
        if role == "chat":  # ChatMessage: the role is an attribute of its own
            role = getattr(m, "role", role)
        return role, m.content
    raise _bad(i, m, "is neither a message dict nor a message object (with .type and .content)")


def routing_query(messages: Sequence[Any], last_n: int = 3) -> str:
    """The last ``last_n`` human messages joined by newlines, oldest first (one text: a change of topic
    is read with the turns before it; ``Router.route(previous_query=)`` reads a turn alone first).

    ``messages`` may mix OpenAI-style dicts (``role`` ``user``/``human`` is a human
    turn; LangChain's ``{"type": "human", ...}`` form too) and LangChain message
    objects (``HumanMessage`` and ``ChatMessage(role="user")`` are human turns).
    Assistant, system and tool messages and JSON payloads are left out; a message
    given as content parts contributes its text parts.

    Messages are read newest first and reading stops after ``last_n`` human
    texts, so the cost does not grow with the length of the conversation (older
    messages are not checked either).

    Returns ``""`` for an empty conversation. Raises
    :class:`~routecore.errors.InvalidArgumentError` when ``last_n < 1``, when
    ``messages`` is not a list, when a message is neither a dict with a ``role``
    nor a message object, when a human message has no content or content that is
    neither a string nor a list of parts (naming the message's position and type),
    and when no human message has any text (rather than routing an empty query).
    """
    return "\n".join(human_texts(messages, last_n))


def human_texts(messages: Sequence[Any], last_n: int = 3) -> list[str]:
    """The texts of the last ``last_n`` human messages, oldest first (:func:`routing_query` documents
    which messages count and what raises)."""
    if isinstance(last_n, bool) or not isinstance(last_n, int) or last_n < 1:
        raise InvalidArgumentError(f"last_n must be a whole number >= 1, got {last_n!r}")
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise InvalidArgumentError(
            f"routing_query: messages must be a list of messages, got {type(messages).__name__}"
        )
    picked: list[str] = []
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        role, content = _role_and_content(i, m)
        if role not in _HUMAN:
            continue
        text = _text(content)
        if text is None:
            why = (
                "has no content"
                if content is _MISSING
                else f"has content of type {type(content).__name__}, not a string or a list of parts"
            )
            raise _bad(i, m, why)
        if not text.strip() or _is_json_payload(text):
            continue
        picked.append(text.strip())
        if len(picked) == last_n:
            break
    if not picked and len(messages):
        raise InvalidArgumentError(
            f"routing_query: no human message with text among the {len(messages)} messages"
        )
    return picked[::-1]
