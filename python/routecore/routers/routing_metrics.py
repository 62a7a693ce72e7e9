"""Routing metrics: a sink called for every decision, and what it reports once
feedback arrives.

    from routecore import Router, RoutingMetrics

    metrics = RoutingMetrics(log="decisions.jsonl")   # the JSONL log is optional
    router = Router.from_config("routes.yaml", metrics=metrics)
    d = router.route("my invoice is wrong")
    metrics.feedback(d, route="BILLING")              # later, when the truth is known
    print(metrics.report().routes)

The router calls the sink (any callable) with each :class:`~routecore.decision.Decision`
and :class:`~routecore.decision.ToolBelt` it returns; every other router given ``metrics=``
calls it with each result (``KnowledgeRouter``, ``LLMToolRouter``, ``ContextRouter``,
``Cascade``: docs/routers.md). Feedback names the right route (``None``: out of scope), the tools the
agent used or should have used, the right collections, and/or plain ``success``.

:meth:`RoutingMetrics.report` gives a :class:`~routecore.routers.metrics_report.MetricsReport`:
route accuracy against feedback (with the share routed, the accuracy among routed, the confidently
wrong and clarify rates), tool precision and recall, knowledge-source accuracy, latency by route,
and confidence against success (a reliability table and its expected calibration error).
``routecore eval --log decisions.jsonl`` builds the same report from a log, so
production logs can be evaluated offline. Nothing is written unless ``log`` is set.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any, Mapping, Sequence, TypeVar

# Re-exported (``X as X``): the routers' sink call lives with the results (routecore.decision).
from routecore.decision import emit as emit
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.routers.metrics_report import MetricsReport, part_feedback, report

_UNSET: Any = object()
_R = TypeVar("_R")


def turn_results(turn: Any) -> dict[str, Any]:
    """A turn's results that feedback judges, by record kind: its decision, belt and selection."""
    parts = {"route": turn.decision, "tools": turn.belt, "knowledge": turn.knowledge}
    return {k: v for k, v in parts.items() if v is not None}


def record_of(obj: Any) -> dict[str, Any]:
    """The log record of a Decision, a ToolBelt, a KnowledgeSelection, a ToolRouting (kind
    ``tools``, as a belt), a Context (kind ``context``: each layer's label) or a Turn (kind ``turn``),
    without its id."""
    from routecore.decision import Decision, ToolBelt
    from routecore.routers.context_result import Context
    from routecore.routers.knowledge import KnowledgeSelection
    from routecore.routers.tool_routing import ToolRouting
    from routecore.routers.turn import Turn

    if isinstance(obj, Decision):
        return {
            "kind": "route",
            "query": obj.query,
            "action": obj.action,
            "route": obj.route,
            "tier": obj.tier,
            "confidence": float(obj.confidence),
            "reason": obj.reason.code if obj.reason is not None else None,
            "used_llm": bool(obj.used_llm),
            "latency_ms": float(obj.timings.total),
        }
    if isinstance(obj, ToolBelt):
        offered = [t.name for t in obj.tools if t.reason.code != "core"]
        return {
            "kind": "tools",
            "query": obj.query,
            "tools": offered,
            "no_tool": bool(obj.no_tool),
            "latency_ms": float(obj.timings.total),
        }
    if isinstance(obj, ToolRouting):
        belt_ms = float(obj.belt.timings.total) if obj.belt is not None else 0.0
        core = {t.name for t in obj.belt.tools if t.reason.code == "core"} if obj.belt is not None else set()
        return {
            "kind": "tools",
            "query": obj.query,
            "tools": [t for t in obj.tools if t not in core],  # as a belt's: the core tools are not offered
            "no_tool": not [t for t in obj.tools if t not in core],
            "source": obj.source,
            "latency_ms": belt_ms + float(obj.llm_ms),
        }
    if isinstance(obj, KnowledgeSelection):
        return {
            "kind": "knowledge",
            "query": obj.query,
            "collections": obj.names,
            "source": obj.source,
            "confidence": float(obj.confidence),
        }
    if isinstance(obj, Context):
        return {
            "kind": "context",
            "query": obj.query,
            "labels": {n: r.label for n, r in obj.layers.items()},
            "latency_ms": float(obj.timings.total),
        }
    if isinstance(obj, Turn):
        # Each part's own record too: the report judges a turn's route, belt and collections as
        # it judges a router's (metrics_report.turn_parts).
        parts = {k: record_of(v) for k, v in turn_results(obj).items()}
        return {
            "kind": "turn",
            "query": obj.query,
            "route": obj.decision.route if obj.decision is not None else None,
            "tools": parts["tools"]["tools"] if "tools" in parts else [],
            "collections": obj.knowledge.names if obj.knowledge is not None else [],
            "latency_ms": float(obj.timings.total),
            "parts": parts,
        }
    raise InvalidArgumentError(
        "RoutingMetrics records a Decision, a ToolBelt, a KnowledgeSelection, a ToolRouting, a Context "
        f"or a Turn, not {type(obj).__name__}"
    )


#: The fields of each kind of record the report reads (what :func:`record_of` writes).
RECORD_FIELDS = {
    "route": ("action", "route", "tier", "confidence", "latency_ms"),
    "tools": ("tools", "no_tool", "latency_ms"),
    "knowledge": ("collections", "confidence"),
    "context": ("labels", "latency_ms"),
    "turn": ("route", "tools", "collections", "latency_ms", "parts"),
}


def _check_record(rec: Mapping[str, Any], where: str) -> None:
    """A :class:`ConfigError` naming ``where`` unless ``rec`` is a record of a known kind with every
    field its report reads (a turn's parts too)."""
    need = RECORD_FIELDS.get(rec.get("kind"))  # type: ignore[arg-type]
    if need is None:
        raise ConfigError(f"{where}: a decision record of unknown kind {rec.get('kind')!r}")
    missing = [k for k in need if k not in rec]
    if missing:
        raise ConfigError(f"{where}: a {rec['kind']} record without {', '.join(missing)}")
    if rec["kind"] != "turn":
        return
    parts = rec["parts"]
    if not isinstance(parts, Mapping) or not all(isinstance(p, Mapping) for p in parts.values()):
        raise ConfigError(f"{where}: a turn record's parts must be a mapping of records")
    for part in parts.values():
        if "ref" not in part:  # a part its router recorded on its own line is referred to
            _check_record(part, f"{where} (a turn's part)")


class RoutingMetrics:
    """Records decisions and their feedback; thread-safe.

    Args:
        log: a JSONL file that every record and feedback line is appended to
            (created with its folder; kept open, line-buffered, until :meth:`close`
            or the end of a ``with`` block), read back by :meth:`from_log`.
        keep: records kept in memory, oldest dropped first (the log keeps all).
    """

    def __init__(self, log: str | os.PathLike[str] | None = None, *, keep: int = 100_000):
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise InvalidArgumentError(f"keep must be a whole number >= 1, got {keep!r}")
        self.keep = keep
        self.log = Path(log) if log is not None else None
        self._records: OrderedDict[str, dict[str, Any]] = OrderedDict()
        # id(object) -> (record id, weak reference): feedback may name the object itself.
        self._ids: OrderedDict[int, tuple[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self._file: Any = None
        if self.log is not None:
            self.log.parent.mkdir(parents=True, exist_ok=True)

    def close(self) -> None:
        """Close the log file (the next record opens it again)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> RoutingMetrics:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __call__(self, obj: Any) -> str:
        return self.record(obj)

    def record(self, obj: Any) -> str:
        """Record one decision, belt or selection; returns its record id. A turn's part that these
        metrics recorded already (its router shares this sink) is referred to, not counted twice."""
        rec = {"type": "decision", "id": uuid.uuid4().hex, "t": time.time(), **record_of(obj)}
        with self._lock:
            if rec["kind"] == "turn":
                for kind, part in turn_results(obj).items():
                    seen = self._recorded(part)
                    if seen is not None:
                        rec["parts"][kind] = {"ref": seen}
            self._add(rec)
            try:
                self._ids[id(obj)] = (rec["id"], weakref.ref(obj))
            except TypeError:  # not weak-referenceable: feedback by record id only
                pass
            while len(self._ids) > self.keep:
                self._ids.popitem(last=False)
            self._write(rec)
        return str(rec["id"])

    def feedback(
        self,
        decision: Any,
        *,
        route: Any = _UNSET,
        tools: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        success: bool | None = None,
    ) -> None:
        """What turned out to be right for a recorded ``decision`` (the object, or its record id).

        ``route``: the right route, ``None`` when the query was out of scope; ``tools``:
        the tools the agent used or should have used (empty: no tool fitted);
        ``collections``: the right knowledge collections; ``success``: whether the turn
        succeeded (the reliability table's outcome when given)."""
        with self._lock:
            rid = decision if isinstance(decision, str) else self._recorded(decision)
            if rid is None or rid not in self._records:
                raise InvalidArgumentError(
                    "feedback for a decision these metrics did not record (or no longer keep)"
                )
            if self._records[rid]["kind"] == "context":
                raise InvalidArgumentError(
                    "a Context's layers take no feedback: give it on the Decision, ToolBelt or Turn"
                )
            fb: dict[str, Any] = {}
            if route is not _UNSET:
                fb["route"] = route
            if tools is not None:
                fb["tools"] = list(tools)
            if collections is not None:
                fb["collections"] = list(collections)
            if success is not None:
                fb["success"] = bool(success)
            if not fb:
                raise InvalidArgumentError("feedback needs route=, tools=, collections= or success=")
            self._judge(rid, fb)
            self._write({"type": "feedback", "id": rid, "t": time.time(), **fb})

    def _judge(self, rid: str, fb: Mapping[str, Any]) -> None:
        """Put feedback ``fb`` on record ``rid``, and on the parts of a turn recorded on their own
        (each the keys that judge it: :func:`~routecore.routers.metrics_report.part_feedback`)."""
        rec = self._records[rid]
        rec.setdefault("feedback", {}).update(fb)
        for kind, part in rec.get("parts", {}).items():
            if "ref" in part and part["ref"] in self._records:
                self._records[part["ref"]].setdefault("feedback", {}).update(part_feedback(kind, fb))

    def _recorded(self, obj: Any) -> str | None:
        """The record id of ``obj`` when these metrics recorded it (and still keep it), else None."""
        rid, ref = self._ids.get(id(obj), (None, None))
        return rid if ref is not None and ref() is obj else None  # else an id() reused by another object

    def _add(self, rec: dict[str, Any]) -> None:
        self._records[rec["id"]] = rec
        while len(self._records) > self.keep:
            self._records.popitem(last=False)

    def _write(self, line: Mapping[str, Any]) -> None:
        if self.log is not None:
            if self._file is None:  # line-buffered: each line reaches the file when written
                self._file = open(self.log, "a", encoding="utf-8", buffering=1)
            self._file.write(json.dumps(line, ensure_ascii=False) + "\n")

    @classmethod
    def from_log(cls, path: str | os.PathLike[str], *, keep: int = 10_000_000) -> RoutingMetrics:
        """The metrics of a JSONL log written by ``RoutingMetrics(log=...)`` (not appended to)."""
        m = cls(keep=keep)
        try:
            if Path(path).exists() and not Path(path).is_file():  # a FIFO would block the read
                raise ConfigError(f"{path}: the decision log is not a regular file")
            lines = Path(path).read_bytes().splitlines()
        except OSError as e:
            raise ConfigError(f"{path}: cannot read the decision log: {e}") from e
        for n, raw in enumerate(lines, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                msg = f"{path}:{n}: not UTF-8 text (byte {e.start} of the line: {e.reason})"
                raise ConfigError(msg) from None
            if not text.strip():
                continue
            try:
                line = json.loads(text)
                kind, rid = line["type"], line["id"]
            except (ValueError, KeyError, TypeError) as e:
                raise ConfigError(f"{path}:{n}: not a decision-log line ({e})") from e
            if kind == "decision":
                _check_record(line, f"{path}:{n}")
                m._add(line)
            elif kind == "feedback" and rid in m._records:
                m._judge(
                    rid, {k: v for k, v in line.items() if k in ("route", "tools", "collections", "success")}
                )
            elif kind != "feedback":
                raise ConfigError(f"{path}:{n}: unknown line type {kind!r}")
        return m

    def records(self) -> list[dict[str, Any]]:
        """Copies of the records kept, oldest first (each with its ``feedback``, if any)."""
        with self._lock:
            return [json.loads(json.dumps(r)) for r in self._records.values()]

    def report(self) -> MetricsReport:
        """Every figure (see the module docstring); ``.to_dict()`` for JSON."""
        return report(self.records())
