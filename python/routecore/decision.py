"""Frozen, JSON-serialisable results of routing and tool selection."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Alert:
    kind: str  # "collision", "circuit_breaker", "fallback", "truncated", ...
    message: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Timings:
    """Milliseconds per stage."""

    tokenize: float = 0.0
    encode: float = 0.0
    score: float = 0.0
    policy: float = 0.0
    llm: float = 0.0
    total: float = 0.0


@dataclass(frozen=True)
class Exemplar:
    route: str
    text: str
    score: float


@dataclass(frozen=True)
class Decision:
    """What to do with a user turn.

    ``action`` is ``route`` (use ``route``), ``clarify`` (ask ``question``, choosing
    among ``candidates``), ``none`` (out of scope) or ``error``.
    """

    action: str
    route: str | None
    tier: str
    confidence: float
    margin: float
    probabilities: dict[str, float]
    raw_scores: dict[str, float]
    adjusted_scores: dict[str, float]
    top_exemplars: tuple[Exemplar, ...] = ()
    alerts: tuple[Alert, ...] = ()
    candidates: tuple[str, ...] = ()
    question: str | None = None
    hint: str | None = None
    used_llm: bool = False
    fallback: str | None = None
    bias_rule: str | None = None
    previous_route: str | None = None
    fallback_chain: tuple[str, ...] = ()
    error_message: str = ""  # the end of the fallback chain, after its last route
    timings: Timings = field(default_factory=Timings)
    query: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kw)


@dataclass(frozen=True)
class ToolChoice:
    name: str
    domain: str
    score: float
    raw_score: float
    reason: str  # "core", "top_k", "threshold", "discovery", "more", "lesson"


@dataclass(frozen=True)
class ToolBelt:
    """The tools offered to the LLM for one turn."""

    tools: tuple[ToolChoice, ...]
    alerts: tuple[Alert, ...] = ()
    collision: bool = False
    system_prompt_alert: str | None = None
    #: Adjusted and raw scores of the best ``policy.report_scores`` tools, best first.
    scores: dict[str, float] = field(default_factory=dict)
    raw_scores: dict[str, float] = field(default_factory=dict)
    timings: Timings = field(default_factory=Timings)
    query: str = ""

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kw)
