"""Building the routing query from a conversation."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from routecore.errors import InvalidArgumentError

HUMAN_ROLES = ("user", "human")


def _is_json_payload(text: str) -> bool:
    t = text.strip()
    if not t or t[0] not in "[{":
        return False
    try:
        return isinstance(json.loads(t), (dict, list))
    except ValueError:
        return False


def _text(content: Any) -> str | None:
    """A message's text: a string, or the text parts of an OpenAI-style list of
    content parts (``{"type": "text", "text": ...}``; images and the like are skipped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        return "\n".join(t for t in parts if isinstance(t, str)) or None
    return None


def routing_query(messages: Sequence[Mapping[str, Any]], last_n: int = 3) -> str:
    """The last ``last_n`` human messages joined by newlines, oldest first.

    Assistant and tool messages and JSON payloads are left out; a message given
    as content parts contributes its text parts.
    """
    if last_n < 1:
        raise InvalidArgumentError(f"last_n must be >= 1, got {last_n}")
    picked: list[str] = []
    for m in reversed(messages):
        if not isinstance(m, Mapping) or m.get("role") not in HUMAN_ROLES:
            continue
        content = _text(m.get("content"))
        if content is None or not content.strip() or _is_json_payload(content):
            continue
        picked.append(content.strip())
        if len(picked) == last_n:
            break
    return "\n".join(reversed(picked))
