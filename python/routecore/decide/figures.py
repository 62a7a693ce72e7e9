"""What a router's decisions on labelled queries amount to, measured one way everywhere:
``routecore eval``, ``routecore fit``, the decision log's report
(:mod:`routecore.routers.metrics_report`) and the benches.

:func:`decision_figures` reads each decision as ``(action, route, tier)`` beside the right route
(``None``, or a label no route has, for a query that should be declined) and returns
:class:`DecisionFigures`: the routed share, precision among routed, the high tier's wrong routes,
the clarify and ``none`` shares, and, when the caller measured them, the raw top-1 accuracies the
decision layer starts from. :func:`reliability` bins decisions' confidence against their success,
one way for ``routecore eval`` and the decision log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from routecore.errors import InvalidArgumentError


@dataclass(frozen=True)
class DecisionFigures:
    """The decision figures of ``n`` labelled queries (every rate is a share of the ``n``, but
    ``routed_accuracy``: precision among the routed ones, None when none was routed).

    ``routed_share`` + ``clarify_rate`` + ``none_rate`` = 1. ``confident_wrong_rate``: routed
    at the high tier and wrong. ``right_of_routed``: how many routed decisions were right.
    ``raw_top1_accuracy`` / ``dense_top1_accuracy``: the best route before the decision (cosine
    plus lexical score, and the cosine alone) on the in-scope queries, when measured."""

    n: int
    routed_share: float
    routed_accuracy: float | None
    confident_wrong_rate: float
    clarify_rate: float
    none_rate: float
    right_of_routed: int
    raw_top1_accuracy: float | None = None
    dense_top1_accuracy: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``routecore eval --json``'s ``decisions``): the rates; the raw top-1
        accuracies when measured."""
        out: dict[str, Any] = {
            "routed_share": self.routed_share,
            "routed_accuracy": self.routed_accuracy,
            "confident_wrong_rate": self.confident_wrong_rate,
            "clarify_rate": self.clarify_rate,
            "none_rate": self.none_rate,
        }
        if self.raw_top1_accuracy is not None or self.dense_top1_accuracy is not None:
            out.update(raw_top1_accuracy=self.raw_top1_accuracy, dense_top1_accuracy=self.dense_top1_accuracy)
        return out


def decision_figures(
    decisions: Sequence[tuple[str, str | None, str]],
    gold: Sequence[str | None],
    *,
    raw_top1: float | None = None,
    dense_top1: float | None = None,
) -> DecisionFigures:
    """:class:`DecisionFigures` of ``decisions`` (``(action, route, tier)`` each) against the right
    routes ``gold`` (one per decision; None or an unknown label: the query should be declined, so
    routing it is wrong). ``raw_top1`` / ``dense_top1``: the caller's raw top-1 accuracies."""
    if len(decisions) != len(gold):
        raise InvalidArgumentError(f"decision_figures: {len(decisions)} decisions for {len(gold)} labels")
    n = len(gold)
    den = max(n, 1)
    routed = [(r, g, t) for (a, r, t), g in zip(decisions, gold) if a == "route"]
    right = sum(r == g for r, g, _ in routed)
    return DecisionFigures(
        n=n,
        routed_share=len(routed) / den,
        routed_accuracy=right / len(routed) if routed else None,
        confident_wrong_rate=sum(t == "high" and r != g for r, g, t in routed) / den,
        clarify_rate=sum(a == "clarify" for a, _, _ in decisions) / den,
        none_rate=sum(a == "none" for a, _, _ in decisions) / den,
        right_of_routed=right,
        raw_top1_accuracy=raw_top1,
        dense_top1_accuracy=dense_top1,
    )


#: Reliability bins over the confidence [0, 1].
BINS = 10


@dataclass(frozen=True)
class ReliabilityBin:
    """A confidence bin ``[lo, hi)`` (the last one holds 1.0): its decisions, their mean confidence
    and the share that succeeded."""

    lo: float
    hi: float
    n: int
    mean_confidence: float
    success_rate: float


@dataclass(frozen=True)
class Reliability:
    """Confidence against success: ``n`` decisions, the non-empty bins, and the expected calibration
    error (the bins' gaps weighted by their share; None without any decision)."""

    n: int
    bins: tuple[ReliabilityBin, ...]
    ece: float | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``routecore eval --json``'s ``calibration``, ``eval --log``'s ``reliability``),
        rounded to 6 places."""
        table = [
            {"bin": [b.lo, b.hi], "n": b.n, "mean_confidence": round(b.mean_confidence, 6)}
            | {"success_rate": round(b.success_rate, 6)}
            for b in self.bins
        ]
        return {"n": self.n, "table": table, "ece": round(self.ece, 6) if self.ece is not None else None}


def reliability(confidence: Sequence[float], success: Sequence[bool], bins: int = BINS) -> Reliability:
    """The :class:`Reliability` of decisions with ``confidence`` in [0, 1] and their ``success``."""
    if len(confidence) != len(success):
        raise InvalidArgumentError(f"reliability: {len(confidence)} confidences for {len(success)} outcomes")
    c, y = np.asarray(confidence, np.float64), np.asarray(success, np.float64)
    edges = np.arange(bins + 1) / bins
    # [lo, hi) each, 1.0 in the last bin; a confidence outside [0, 1] counts in n, in no bin
    which = np.where(c == 1.0, bins - 1, np.searchsorted(edges, c, side="right") - 1)
    which[(c < 0) | (c > 1)] = -1
    out, ece = [], 0.0
    for b in range(bins):
        m = which == b
        if not m.any():
            continue
        conf, rate = float(c[m].mean()), float(y[m].mean())
        ece += m.mean() * abs(rate - conf)
        out.append(ReliabilityBin(float(edges[b]), float(edges[b + 1]), int(m.sum()), conf, rate))
    return Reliability(len(c), tuple(out), float(ece) if len(c) else None)
