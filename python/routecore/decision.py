"""Frozen, JSON-serialisable results of routing and tool selection."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from routecore.errors import InvalidArgumentError
from routecore.result_json import JsonResult as JsonResult
from routecore.result_json import ScoreMap as ScoreMap
from routecore.result_json import plain as plain
from routecore.result_json import scores_from_json

log = logging.getLogger("routecore")

#: The pseudo-route of a ``clarify`` decision: the route a bias rule or the LLM fallback names to ask
#: the user (reserved: no route may be called so).
CLARIFY = "CLARIFY"
_R = TypeVar("_R")


def trace(what: str, result: _R) -> _R:
    """Log ``result`` (a decision, a tool belt, ...) as JSON at DEBUG on the
    ``routecore`` logger: the same trace the caller gets back. Returns it."""
    if log.isEnabledFor(logging.DEBUG):
        body = result.to_dict() if hasattr(result, "to_dict") else plain(result)
        log.debug("%s %s", what, json.dumps(body, ensure_ascii=False))
    return result


def emit(sink: Any, result: _R) -> _R:
    """Hand ``result`` to ``sink`` (when set) and return it; a failing sink is logged on the
    ``routecore`` logger, never raised: a decision does not fail because of its metrics.

    Every router calls it with each result it returns (the sink is usually a
    :class:`routecore.routers.routing_metrics.RoutingMetrics`); it lives beside :func:`trace` so that the
    routers need not import the metrics, which read their result types."""
    if sink is not None:
        try:
            sink(result)
        except Exception as e:  # noqa: BLE001
            log.warning("routing metrics sink failed: %s: %s", type(e).__name__, e)
    return result


def _reason(r: Any, optional: bool = False) -> Reason | None:
    """A reason read back from JSON: a mapping of code and message (None only when ``optional``)."""
    if isinstance(r, Mapping):
        return Reason(**r)
    if r is None and optional:
        return None
    raise TypeError(f"reason must be a mapping of code and message, got {r!r}")


def _tool_choice(x: Mapping[str, Any]) -> ToolChoice:
    """A belt's tool read back from JSON: its reason a mapping, a ``null`` score the ``-inf`` written."""
    scores = {k: -math.inf for k in ("score", "raw_score", "lexical_score") if k in x and x[k] is None}
    return ToolChoice(**{**x, **scores, "reason": _reason(x.get("reason"))})


@dataclass(frozen=True)
class Entity:
    """One entity found in a query (routecore.core.entities): its type, the dictionary term
    (or the matched text of a pattern), and its character span in the query."""

    kind: str
    value: str
    start: int
    end: int


@dataclass(frozen=True)
class Alert:
    """Something a decision or a tool belt wants its caller to know: a ``kind`` to branch on, a
    human ``message``, and the numbers behind it in ``data``."""

    kind: str  # "collision", "circuit_breaker", "fallback", "truncated", ...
    message: str
    data: dict[str, Any] = field(default_factory=dict)


#: Every reason code a :class:`Decision` or a :class:`ToolBelt` can carry, with what it means
#: (README.md, "Actions and reasons", lists the same).
REASON_CODES: dict[str, str] = {
    "confident": "routed: the best route clears the high tier",
    "likely": "routed: the best route clears the routing cut, below the high tier",
    "previous_route": "routed: the previous route's own (lower) tier lets the conversation continue there",
    "bias_rule": "routed (or clarified) by a bias rule of the config between two plausible routes",
    "entity": "routed to a route that prefers an entity type the query holds, "
    "though the scores alone were out of scope",
    "follow_up": "routed: alone the query was not, read after the previous turn it names its own best route",
    "learned": "routed: learn() was given this query for the route (the head's own high tier wins)",
    "llm": "the LLM fallback chose the route (or asked to clarify)",
    "tie": "clarify: two or three routes are all plausible and none clears the routing cut",
    "low_confidence": "clarify or none: no route clears the routing cut, "
    "and nothing says the query is out of scope",
    "out_of_scope": "none: the query looks like none of the routes (the out-of-scope evidence is named)",
    "llm_failed": "the LLM fallback failed: the decision is the one a router without an LLM makes",
    "empty_query": "none: the query is empty or blank",
    "error": "error: the encoder failed and no LLM could answer",
    "tools": "tool belt: the tools that clear the floor",
    "no_tool": "tool belt: no candidate tool clears the floor (core or fallback tools only)",
}

#: Why one tool is in a belt (``ToolChoice.reason.code``) -> what it means.
TOOL_REASON_CODES: dict[str, str] = {
    "core": "a core tool: in every belt",
    "top_k": "one of the best top_k candidates (the best one clears the floor; with tool_floor: each, "
    "each one does)",
    "threshold": "its own score clears the floor (threshold selection, or a threshold given to tools())",
    "discovery": "a discovery tool (its name starts with one of policy.tools.discovery_prefixes) of a "
    "chosen tool's domain",
    "fallback": "no candidate clears the floor: policy.tools.fallback_tool stands in",
    "more": "offered by request_more_tools after the first belt",
}


@dataclass(frozen=True)
class Reason:
    """Why a decision (or a tool belt) came out as it did: a stable ``code`` (one of
    :data:`REASON_CODES`) and one human line that names the numbers compared."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class Timings:
    """Milliseconds per stage.

    ``tokenize`` is the tokenizer's time; ``encode`` the rest of the encoder call
    (ONNX Runtime, pooling, the encoder's cache and binding), so ``tokenize +
    encode`` is the wall time of the encoder call. ``score`` is the native scoring
    step, ``policy`` the decision rules (without ``llm``, the LLM router's time).
    """

    tokenize: float = 0.0
    encode: float = 0.0
    score: float = 0.0
    policy: float = 0.0
    llm: float = 0.0
    total: float = 0.0


@dataclass(frozen=True)
class Exemplar:
    """One of the config's utterances near the query: its ``route``, its ``text`` and its cosine
    ``score`` to the query (``Decision.top_exemplars``, best first)."""

    route: str
    text: str
    score: float


@dataclass(frozen=True)
class Decision(JsonResult):
    """What to do with a user turn.

    ``action`` is ``route`` (use ``route``), ``clarify`` (ask ``question``, choosing
    among ``candidates``), ``none`` (out of scope, or declined) or ``error``; ``reason``
    says why, with the numbers compared. ``confidence`` is the best route's probability
    *among the routes* (``probabilities``), ``margin`` its lead over the second; with a head,
    ``out_of_scope`` is the probability that the query is none of them, so a ``none`` decision
    may show a high ``confidence``: read ``action`` and ``reason`` first.
    """

    action: str
    route: str | None
    tier: str
    confidence: float
    margin: float
    probabilities: Mapping[str, float]
    raw_scores: Mapping[str, float]
    adjusted_scores: Mapping[str, float]
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
    #: The text the router read: the query with emoji, "!" and repeats folded and likely typos repaired
    #: (the ``spelling`` alert names them), or a clarified query and its answer on two lines.
    query: str = ""
    #: Routes whose raw score is an int8 estimate (large tables only), with the
    #: bound on its error; every route that can change the decision is exact.
    score_bounds: Mapping[str, float] = field(default_factory=dict)
    #: Where the policy's thresholds come from: ``prior`` (the model's decision prior, measured on
    #: dev sets, at the config's numbers), ``zero-label`` (fitted from the exemplars when the router
    #: was built), ``fitted`` (``routecore fit``) or ``manual`` (every threshold set in code or config).
    calibrated: str = "manual"
    #: Hybrid scoring: what each route's cosine gained from its lexical (BM25) score
    #: before anything was decided; ``raw_scores`` are the cosines alone.
    lexical_scores: Mapping[str, float] = field(default_factory=dict)
    #: The query's entities (routecore.core.entities), when the router has an ``entities:`` section.
    entities: tuple[Entity, ...] = ()
    #: Why: a code of :data:`REASON_CODES` and a line with the numbers compared.
    reason: Reason | None = None
    #: The exemplar head's probability that the query is none of the routes (``probabilities``
    #: are the routes' share of the rest); None without a head.
    out_of_scope: float | None = None
    #: The generation of the router's routes that decided: 0 as built (or loaded, or last
    #: changed by a live update), then one more per learned or forgotten exemplar and per
    #: background refit (routecore.updates.learning).
    generation: int = 0

    @property
    def collision(self) -> bool:
        """True when the best two routes are from different domains within
        ``policy.collision_gap`` (a ``collision`` alert is then in ``alerts``)."""
        return _collision(self.alerts) is not None

    @property
    def system_prompt_alert(self) -> str | None:
        """The collision alert's text, ready to inject into a system prompt."""
        return _collision(self.alerts)

    def to_dict(self) -> dict[str, Any]:
        """Every field, plus ``collision`` and ``system_prompt_alert``."""
        d: dict[str, Any] = plain(self)
        d["collision"], d["system_prompt_alert"] = self.collision, self.system_prompt_alert
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Decision":
        """The decision :meth:`to_dict` (or ``/v1/route``, or a decision log) wrote.

        Raises:
            InvalidArgumentError: not a mapping, a required field missing, an unknown key,
                or a nested value of the wrong shape (named).
        """
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(f"a decision must be a mapping, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known - {"collision", "system_prompt_alert"}
        if unknown:
            raise InvalidArgumentError(f"decision: unknown keys {sorted(unknown)}")
        missing = [
            f.name
            for f in fields(cls)
            if f.name not in d and f.default is MISSING and f.default_factory is MISSING
        ]
        if missing:
            raise InvalidArgumentError(f"decision: missing keys {missing}")
        kw = {k: v for k, v in d.items() if k in known}
        try:
            for k, item in (("top_exemplars", Exemplar), ("alerts", Alert), ("entities", Entity)):
                if k in kw:
                    kw[k] = tuple(item(**x) for x in kw[k])
            kw["reason"] = _reason(kw.get("reason"), optional=True)
            for k in ("candidates", "fallback_chain"):
                if k in kw:
                    v = kw[k]
                    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
                        raise TypeError(f"{k} must be a list of route names, got {v!r}")
                    kw[k] = tuple(v)
            for k in ("probabilities", "raw_scores", "adjusted_scores", "lexical_scores", "score_bounds"):
                if isinstance(kw.get(k), Mapping):
                    kw[k] = scores_from_json(kw[k])
            if "timings" in kw:
                kw["timings"] = Timings(**kw["timings"])
            return cls(**kw)
        except TypeError as e:
            raise InvalidArgumentError(f"decision: {e}") from None


@dataclass(frozen=True)
class ToolChoice:
    """One tool in a :class:`ToolBelt`: its ``name`` and ``domain``, its ``score`` (what ranked it)
    and ``raw_score`` (its cosine), and why it is in the belt (``reason``: a code of
    :data:`TOOL_REASON_CODES` and a line with the numbers compared)."""

    name: str
    domain: str
    score: float
    raw_score: float
    reason: Reason
    #: What the tool's cosine (``raw_score``) gained from its lexical (BM25) score.
    lexical_score: float = 0.0


def _collision(alerts: Sequence[Alert]) -> str | None:
    """The text of the ``collision`` alert among ``alerts``, if there is one."""
    return next((a.message for a in alerts if a.kind == "collision"), None)


@dataclass(frozen=True)
class ToolBelt(JsonResult):
    """The tools offered to the LLM for one turn."""

    tools: tuple[ToolChoice, ...]
    alerts: tuple[Alert, ...] = ()
    #: Adjusted and raw scores of the best ``policy.report_scores`` tools, best first.
    scores: Mapping[str, float] = field(default_factory=dict)
    raw_scores: Mapping[str, float] = field(default_factory=dict)
    #: Reported tools whose raw score is an int8 estimate (large catalogs only),
    #: with the bound on its error. Every selected tool is exact; so are the best
    #: ``policy.exact_top``, which decide the collision alert.
    score_bounds: Mapping[str, float] = field(default_factory=dict)
    timings: Timings = field(default_factory=Timings)
    query: str = ""
    #: No candidate tool passed the floor (``Policy.tool_threshold``): only the core
    #: tools, if any, are in the belt, and a ``no_tool`` alert says so.
    no_tool: bool = False
    #: What the reported tools' cosines gained from their lexical (BM25) scores.
    lexical_scores: Mapping[str, float] = field(default_factory=dict)
    #: The query's entities (routecore.core.entities), which tools may prefer or require.
    entities: tuple[Entity, ...] = ()
    #: Why: ``tools``, ``no_tool``, ``empty_query`` or ``error``, with the numbers compared.
    reason: Reason | None = None

    @property
    def names(self) -> list[str]:
        """The belt's tool names, in its order."""
        return [t.name for t in self.tools]

    @property
    def collision(self) -> bool:
        """True when two offered tools of different domains are within ``policy.collision_gap``
        (a ``collision`` alert is then in ``alerts``), as :attr:`Decision.collision`."""
        return _collision(self.alerts) is not None

    @property
    def system_prompt_alert(self) -> str | None:
        """The collision alert's text, ready to inject into a system prompt."""
        return _collision(self.alerts)

    def to_dict(self) -> dict[str, Any]:
        """Every field, plus ``collision`` and ``system_prompt_alert`` (as :meth:`Decision.to_dict`) and
        ``names``."""
        d: dict[str, Any] = plain(self)
        d["collision"], d["system_prompt_alert"] = self.collision, self.system_prompt_alert
        d["names"] = self.names
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ToolBelt":
        """The belt :meth:`to_dict` (or ``/v1/tools``) wrote.

        Raises:
            InvalidArgumentError: not a mapping, an unknown key, or a nested value of the wrong shape.
        """
        if not isinstance(d, Mapping):
            raise InvalidArgumentError(f"a tool belt must be a mapping, got {type(d).__name__}")
        # from the alerts and the tools
        kw = {k: v for k, v in d.items() if k not in ("collision", "system_prompt_alert", "names")}
        try:
            for k, item in (("alerts", Alert), ("entities", Entity)):
                if k in kw:
                    kw[k] = tuple(item(**x) for x in kw[k])
            if "tools" in kw:
                kw["tools"] = tuple(_tool_choice(x) for x in kw["tools"])
            for k in ("scores", "raw_scores", "lexical_scores", "score_bounds"):
                if isinstance(kw.get(k), Mapping):
                    kw[k] = scores_from_json(kw[k])
            kw["reason"] = _reason(kw.get("reason"), optional=True)
            if "timings" in kw:
                kw["timings"] = Timings(**kw["timings"])
            return cls(**kw)
        except TypeError as e:
            raise InvalidArgumentError(f"tool belt: {e}") from None
