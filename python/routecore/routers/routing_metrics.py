"""Routing metrics: a sink called for every decision, and what it reports once
feedback arrives.

    from routecore import Router, RoutingMetrics

    metrics = RoutingMetrics(log="decisions.jsonl")   # the JSONL log is optional
    router = Router.from_config("routes.yaml", metrics=metrics)
    d = router.route("my invoice is wrong")
    metrics.feedback(d, route="BILLING")              # later, when the truth is known
    print(metrics.report())

The router calls the sink (any callable) with each :class:`~routecore.decision.Decision`
and :class:`~routecore.decision.ToolBelt` it returns; every other router given ``metrics=``
calls it with each result (``KnowledgeRouter``, ``LLMToolRouter``, ``ContextRouter``,
``Cascade``: docs/routers.md). Feedback names the right route (``None``: out of scope), the tools the
agent used or should have used, the right collections, and/or plain ``success``.

:meth:`RoutingMetrics.report` gives: route accuracy against feedback (with the share
routed, the accuracy among routed, the confidently wrong and clarify rates), tool
precision and recall, knowledge-source accuracy, latency by route, and confidence
against success (a reliability table and its expected calibration error).
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
from typing import Any, Iterable, Mapping, Sequence, TypeVar

import numpy as np

from routecore.decide.figures import decision_figures

# Re-exported (``X as X``): the routers' sink call lives with the results (routecore.decision).
from routecore.decision import emit as emit
from routecore.errors import ConfigError, InvalidArgumentError

#: Reliability bins over the confidence [0, 1].
BINS = 10
_UNSET: Any = object()
_R = TypeVar("_R")


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
            "latency_ms": float(obj.timings.total),
        }
    if isinstance(obj, ToolBelt):
        offered = [t.name for t in obj.tools if t.reason != "core"]
        return {
            "kind": "tools",
            "query": obj.query,
            "tools": offered,
            "no_tool": bool(obj.no_tool),
            "latency_ms": float(obj.timings.total),
        }
    if isinstance(obj, ToolRouting):
        belt_ms = float(obj.belt.timings.total) if obj.belt is not None else 0.0
        return {
            "kind": "tools",
            "query": obj.query,
            "tools": list(obj.tools),
            "no_tool": not obj.tools,
            "source": obj.source,
            "latency_ms": belt_ms + float(obj.llm_ms),
        }
    if isinstance(obj, KnowledgeSelection):
        return {
            "kind": "knowledge",
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
        return {
            "kind": "turn",
            "query": obj.query,
            "route": obj.decision.route if obj.decision is not None else None,
            "tools": obj.belt.names if obj.belt is not None else [],
            "collections": obj.knowledge.names if obj.knowledge is not None else [],
            "latency_ms": float(obj.timings.total),
        }
    raise InvalidArgumentError(
        "RoutingMetrics records a Decision, a ToolBelt, a KnowledgeSelection, a ToolRouting, a Context "
        f"or a Turn, not {type(obj).__name__}"
    )


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
        """Record one decision, belt or selection; returns its record id."""
        rec = {"type": "decision", "id": uuid.uuid4().hex, "t": time.time(), **record_of(obj)}
        with self._lock:
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
            rid: str | None
            if isinstance(decision, str):
                rid = decision
            else:
                rid, ref = self._ids.get(id(decision), (None, None))
                if ref is None or ref() is not decision:  # an id() reused by another object
                    rid = None
            if rid is None or rid not in self._records:
                raise InvalidArgumentError(
                    "feedback for a decision these metrics did not record (or no longer keep)"
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
            self._records[rid].setdefault("feedback", {}).update(fb)
            self._write({"type": "feedback", "id": rid, "t": time.time(), **fb})

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
                m._add(line)
            elif kind == "feedback" and rid in m._records:
                fb = {k: v for k, v in line.items() if k in ("route", "tools", "collections", "success")}
                m._records[rid].setdefault("feedback", {}).update(fb)
            elif kind != "feedback":
                raise ConfigError(f"{path}:{n}: unknown line type {kind!r}")
        return m

    def records(self) -> list[dict[str, Any]]:
        """Copies of the records kept, oldest first (each with its ``feedback``, if any)."""
        with self._lock:
            return [json.loads(json.dumps(r)) for r in self._records.values()]

    def report(self) -> dict[str, Any]:
        """Every figure, as plain JSON-ready values (see the module docstring)."""
        return report(self.records())


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


def _route_right(r: Mapping[str, Any], truth: Any) -> bool:
    return (
        bool(r["action"] == "route" and r["route"] == truth)
        if truth is not None
        else bool(r["action"] != "route")
    )


def _routes(recs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    judged = [r for r in recs if "route" in r.get("feedback", {})]
    right = sum(_route_right(r, r["feedback"]["route"]) for r in judged)
    figures = decision_figures(
        [(r["action"], r["route"], r["tier"]) for r in judged], [r["feedback"]["route"] for r in judged]
    ).to_dict()
    return {
        "decisions": len(recs),
        "with_feedback": len(judged),
        "accuracy": _rate(right, len(judged)),
        # the decision figures of eval and fit (none measured without feedback)
        **{k: round(v, 6) if judged and v is not None else None for k, v in figures.items()},
    }


def _tools(recs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    judged = [r for r in recs if "tools" in r.get("feedback", {})]
    hit = offered = used = 0
    none_right = none_rows = 0
    for r in judged:
        truth, belt = set(r["feedback"]["tools"]), set(r["tools"])
        hit, offered, used = hit + len(truth & belt), offered + len(belt), used + len(truth)
        if not truth:
            none_rows += 1
            none_right += bool(r["no_tool"])
    return {
        "belts": len(recs),
        "with_feedback": len(judged),
        "precision": _rate(hit, offered),
        "recall": _rate(hit, used),
        "no_tool_rows": none_rows,
        "no_tool_right": _rate(none_right, none_rows),
    }


def _knowledge(recs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    judged = [r for r in recs if "collections" in r.get("feedback", {})]
    anyhit = sum(bool(set(r["collections"]) & set(r["feedback"]["collections"])) for r in judged)
    first = sum(
        bool(r["collections"]) and r["collections"][0] in r["feedback"]["collections"] for r in judged
    )
    return {
        "selections": len(recs),
        "with_feedback": len(judged),
        "accuracy": _rate(anyhit, len(judged)),
        "top1_accuracy": _rate(first, len(judged)),
    }


def _latency(recs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    by: dict[str, list[float]] = {}
    for r in recs:
        key = (
            r["route"]
            if r["kind"] == "route" and r["action"] == "route"
            else (r["action"] if r["kind"] == "route" else "tools")
        )
        by.setdefault(str(key), []).append(r["latency_ms"])
    return {
        k: {
            "n": len(v),
            "p50_ms": round(float(np.percentile(v, 50)), 3),
            "p95_ms": round(float(np.percentile(v, 95)), 3),
        }
        for k, v in sorted(by.items())
    }


def _outcome(r: Mapping[str, Any]) -> bool | None:
    fb = r.get("feedback", {})
    if "success" in fb:
        return bool(fb["success"])
    if r["kind"] == "route" and "route" in fb:
        return _route_right(r, fb["route"])
    if r["kind"] == "knowledge" and "collections" in fb:
        return bool(r["collections"]) and r["collections"][0] in fb["collections"]
    return None


def _reliability(recs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    pairs = [(r["confidence"], o) for r in recs if "confidence" in r and (o := _outcome(r)) is not None]
    table, ece = [], 0.0
    for b in range(BINS):
        lo, hi = b / BINS, (b + 1) / BINS
        inside = [(c, o) for c, o in pairs if lo <= c < hi or (b == BINS - 1 and c == 1.0)]
        if not inside:
            continue
        conf = float(np.mean([c for c, _ in inside]))
        rate = float(np.mean([o for _, o in inside]))
        ece += len(inside) / len(pairs) * abs(rate - conf)
        table.append(
            {
                "bin": [lo, hi],
                "n": len(inside),
                "mean_confidence": round(conf, 6),
                "success_rate": round(rate, 6),
            }
        )
    return {"n": len(pairs), "table": table, "ece": round(ece, 6) if pairs else None}


def report(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The report of plain records (as :meth:`RoutingMetrics.records` gives them)."""
    kinds = {k: [r for r in records if r.get("kind") == k] for k in ("route", "tools", "knowledge")}
    return {
        "records": len(records),
        "routes": _routes(kinds["route"]),
        "tools": _tools(kinds["tools"]),
        "knowledge": _knowledge(kinds["knowledge"]),
        "latency_by_route": _latency(kinds["route"] + kinds["tools"]),
        "reliability": _reliability(kinds["route"] + kinds["knowledge"]),
    }
