"""The result of the LLM tool router (:class:`routecore.routers.llm_tools.LLMToolRouter`) and the
parser of its LLM's answer, which is JSON inside ``<tool_selection>`` tags."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from routecore.decision import Alert, JsonResult, Reason, ToolBelt, plain
from routecore.errors import InvalidArgumentError, LLMError

COMPLEXITY = ("simple", "medium", "complex")
STRATEGIES = ("direct", "iterative", "parallel")
TAG = "tool_selection"

#: The reason codes of a :class:`ToolRouting`.
TOOL_ROUTING_REASONS: dict[str, str] = {
    "llm": "the LLM's answer, checked against the candidates' names, chose the tools",
    "semantic": "semantic mode: the router's belt, no LLM",
    "fallback": "the LLM failed or named no candidate: the semantic belt",
    "empty_query": "nothing to read (empty, blank, or only lone surrogates): the core tools, no LLM call",
    "error": "the encoder failed and the LLM did not answer: the core tools only",
}


@dataclass(frozen=True)
class ToolRouting(JsonResult):
    """The tools chosen for a query, with the LLM's view of the task.

    ``source`` is ``llm`` when the LLM's (validated) answer chose the tools and
    ``semantic`` when the semantic belt did: in ``semantic`` mode, or as the
    fallback whose reason is ``fallback``. ``dropped``: names the LLM gave that are
    not candidates. ``schemas``: the chosen tools' full schemas."""

    tools: tuple[str, ...]
    schemas: tuple[dict[str, Any], ...]
    mode: str
    source: str
    complexity: str | None = None
    execution_strategy: str | None = None
    reasoning: str = ""
    confidence: float | None = None
    fallback: str | None = None
    dropped: tuple[str, ...] = ()
    #: What reading the query or the LLM's answer did, as a Decision's alerts: ``invalid_text``,
    #: ``long_query``, ``spelling`` (the belt's reading), ``llm_answer`` (a field the answer got wrong),
    #: ``encoder_error``.
    alerts: tuple[Alert, ...] = ()
    #: Estimated tokens of the router prompt (summaries) and of every candidate's full schema.
    prompt_tokens: int = 0
    schema_tokens: int = 0
    llm_ms: float = 0.0
    belt: ToolBelt | None = field(default=None, repr=False)
    #: Why: a code of :data:`TOOL_ROUTING_REASONS` and one line.
    reason: Reason | None = None
    query: str = ""

    @property
    def notes(self) -> tuple[str, ...]:
        """The alerts' messages (the form of earlier versions)."""
        return tuple(a.message for a in self.alerts)

    @property
    def names(self) -> list[str]:
        """The chosen tools' names (as ``ToolBelt.names`` and ``KnowledgeSelection.names``)."""
        return list(self.tools)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (the semantic belt as :meth:`ToolBelt.to_dict` gives it)."""
        d: dict[str, Any] = plain(self)
        if (
            self.belt is not None
        ):  # with the fields only ToolBelt.to_dict adds (collision, system_prompt_alert)
            d["belt"] = self.belt.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ToolRouting":
        """The result :meth:`to_dict` wrote.

        Raises:
            InvalidArgumentError: not a mapping, or a field of the wrong shape (named).
        """
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(f"a tool routing must be a mapping, got {type(d).__name__}")
        try:
            kw = dict(d)
            for k in ("tools", "schemas", "dropped"):
                if k in kw:
                    kw[k] = tuple(kw[k])
            old = kw.pop("notes", None)  # earlier versions' plain messages
            kw["alerts"] = tuple(Alert(**a) for a in kw.get("alerts", ())) + tuple(
                Alert("note", str(m)) for m in old or ()
            )
            if kw.get("reason") is not None:
                kw["reason"] = Reason(**kw["reason"])
            if kw.get("belt") is not None:
                kw["belt"] = ToolBelt.from_dict(kw["belt"])
            return cls(**kw)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"tool routing: {type(e).__name__}: {e}") from None


def parse_selection(text: str) -> dict[str, Any]:
    """The JSON object of an answer: inside ``<tool_selection>`` tags when present, else
    the outermost braces; a bare JSON list is read as the selected tools.

    Raises:
        LLMError: nothing that parses as JSON.
    """
    m = re.search(rf"<{TAG}>(.*?)</{TAG}>", text, re.S | re.I)
    body = (m.group(1) if m else text).strip()
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", body.strip(), flags=re.I)
    for start, end in (("{", "}"), ("[", "]")):
        a, b = body.find(start), body.rfind(end)
        if a != -1 and b > a:
            try:
                got = json.loads(body[a : b + 1])
            except (json.JSONDecodeError, RecursionError):  # not JSON, or nested deeper than the stack
                continue
            return got if isinstance(got, dict) else {"selected_tools": got}
    raise LLMError("no JSON object or list in the answer")


def semantic_routing(
    belt: ToolBelt | None,
    mode: str,
    why: str | None,
    specs: Sequence[Any],
    prompt_tokens: int = 0,
    schema_tokens: int = 0,
    ms: float = 0.0,
    dropped: tuple[str, ...] = (),
) -> ToolRouting:
    """The semantic belt's tools as a ToolRouting (``why``: the LLM's failure it stands in for)."""
    by_name = {t.name: t for t in specs}
    names = tuple(n for n in belt.names if n in by_name) if belt is not None else ()
    return ToolRouting(
        names,
        tuple(by_name[n].schema() for n in names),
        mode,
        "semantic",
        fallback=why,
        dropped=dropped,
        prompt_tokens=prompt_tokens,
        schema_tokens=schema_tokens,
        llm_ms=ms,
        belt=belt,
        reason=Reason("fallback", f"the semantic belt: {why}") if why is not None else None,
    )


def validated_routing(
    answer: dict[str, Any],
    candidates: Sequence[Any],
    specs: Sequence[Any],
    mode: str,
    belt: ToolBelt | None,
    k: int,
    prompt_tokens: int,
    schema_tokens: int,
    ms: float,
) -> ToolRouting:
    """The routing an LLM's parsed ``answer`` gives among ``candidates`` (of all tools ``specs``): its
    known names, at most ``k``, and the core tools; the semantic ``belt`` when it names none it may."""
    names = answer.get("selected_tools")
    if not isinstance(names, list):
        return semantic_routing(
            belt,
            mode,
            "the answer has no selected_tools list",
            specs,
            prompt_tokens,
            schema_tokens,
            ms,
        )
    known = {t.name: t for t in candidates}
    chosen = list(dict.fromkeys(n for n in names if isinstance(n, str) and n in known))[:k]
    dropped = tuple(str(n) for n in names if not (isinstance(n, str) and n in known))
    notes: list[Alert] = []
    complexity, strategy = answer.get("complexity"), answer.get("execution_strategy")
    if complexity not in COMPLEXITY:
        if complexity is not None:  # absent: nothing to say
            notes.append(Alert("llm_answer", f"complexity {complexity!r} is not one of {COMPLEXITY}"))
        complexity = None
    if strategy not in STRATEGIES:
        if strategy is not None:
            notes.append(Alert("llm_answer", f"execution_strategy {strategy!r} is not one of {STRATEGIES}"))
        strategy = None
    conf = answer.get("confidence")
    conf = (
        float(conf)
        if isinstance(conf, (int, float)) and not isinstance(conf, bool) and 0 <= conf <= 1
        else None
    )
    if not chosen and names:
        return semantic_routing(
            belt,
            mode,
            f"every tool the LLM named is unknown: {list(dropped)}",
            specs,
            prompt_tokens,
            schema_tokens,
            ms,
            dropped,
        )
    reasoning = answer.get("reasoning")
    by_name = {t.name: t for t in specs}
    core = [t.name for t in specs if t.core and t.name not in chosen]
    picked = len(chosen)
    chosen += core  # always offered, as in every belt
    return ToolRouting(
        tuple(chosen),
        tuple(by_name[n].schema() for n in chosen),
        mode,
        "llm",
        complexity,
        strategy,
        reasoning if isinstance(reasoning, str) else "",
        conf,
        None,
        dropped,
        tuple(notes),
        prompt_tokens,
        schema_tokens,
        ms,
        belt,
        Reason(
            "llm",
            f"the LLM chose {picked} of {len(known)} candidates"
            + (f", beside {len(core)} core tool(s)" if core else "")
            + (f" (unknown names dropped: {list(dropped)})" if dropped else ""),
        ),
    )
