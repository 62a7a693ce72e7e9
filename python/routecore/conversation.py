"""Building the routing query from a conversation."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

HUMAN_ROLES = ("user", "human")


def _is_json_payload(text: str) -> bool:
    t = text.strip()
    if not t or t[0] not in "[{":
        return False
    try:
        return isinstance(json.loads(t), (dict, list))
    except ValueError:
        return False


def routing_query(messages: Sequence[Mapping[str, Any]], last_n: int = 3) -> str:
    """The last ``last_n`` human messages joined by newlines, oldest first.

    Assistant and tool messages and JSON payloads are left out.
    """
    picked: list[str] = []
    for m in reversed(messages):
        if m.get("role") not in HUMAN_ROLES:
            continue
        content = m.get("content")
        if not isinstance(content, str) or not content.strip() or _is_json_payload(content):
            continue
        picked.append(content.strip())
        if len(picked) == last_n:
            break
    return "\n".join(reversed(picked))
