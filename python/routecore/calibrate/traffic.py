"""A routing cut adapted to the router's own queries (issue 34: few-shot decisions that decide).

A model's decision prior (:mod:`routecore.calibrate.prior`) puts the routing cut at one level of
"how often a routed decision is right" for every config, and that level is set by the hardest dev
set. How precise the routed decisions are on average depends on how the queries spread over the
head's probability: when most of them are sure, the cut can go lower and the routed ones are still
right as often as the policy asks. A router that has seen a few hundred queries knows that spread.

:class:`TrafficCut` keeps the head's best probability of the last ``window`` in-scope queries
(no text, no label) and puts the cut at the lowest best probability at which the prior's mean
:func:`~routecore.calibrate.prior.p_right` over the queries above it reaches the prior's
``traffic`` level (measured on dev: ``scripts/fit_decision_prior.py``). It only ever lowers the
calibrated cut, and it waits for ``warmup`` queries. A config that sets ``medium`` itself, a
fitted calibration, ``policy.routes.adapt_cut: false``, or a config outside the exemplars per route
and routes the prior's levels were measured on (its ``span``, and ``traffic_wide`` for configs of more
exemplars a route) keeps the cut fixed.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Sequence

import numpy as np

from routecore.calibrate.calibration_record import Calibration
from routecore.calibrate.prior import DecisionPrior, prior_for
from routecore.calibrate.stats import CalibrationStats

#: Queries seen before the cut moves; how many the cut reads; how often it is recomputed.
WARMUP, WINDOW, EVERY = 100, 2000, 25


class TrafficCut:
    """The routing cut of one route table (a new table starts a new one), from its queries.

    Args:
        prior: the model's decision prior (its weights and ``traffic`` level).
        features: the config's features (:meth:`DecisionPrior.features`).
        cut: the calibrated routing cut (``medium``): the cut before ``warmup`` queries, and its ceiling.
        level: the level the cut keeps (None: the prior's ``traffic``; a config larger than the
            prior's span: :meth:`DecisionPrior.traffic_level`).
    """

    def __init__(
        self,
        prior: DecisionPrior,
        features: Sequence[float],
        cut: float,
        *,
        warmup: int = WARMUP,
        window: int = WINDOW,
        every: int = EVERY,
        level: float | None = None,
    ) -> None:
        self.prior, self.features, self.ceiling = prior, tuple(features), float(cut)
        self.level = prior.traffic if level is None else float(level)
        self.warmup, self.every = max(int(warmup), 1), max(int(every), 1)
        self._seen: deque[float] = deque(maxlen=max(int(window), 1))
        self._count = 0
        self._counting = threading.Lock()  # the count and the window move together
        self._lock = threading.Lock()  # one recompute at a time
        self.cut: float | None = None  # None until warmup: the calibrated cut holds

    def observe(self, p1: float) -> None:
        """Record the head's best probability of an in-scope query; every ``every`` queries past
        ``warmup``, recompute the cut. Thread-safe; a reader never waits for a recompute."""
        with self._counting:
            self._seen.append(float(p1))
            self._count += 1
            due = self._count >= self.warmup and self._count % self.every == 0
            window = tuple(self._seen) if due else ()
        if due and self._lock.acquire(blocking=False):
            try:
                self.cut = self.compute(np.array(window, np.float64))
            finally:
                self._lock.release()

    def compute(self, p1: np.ndarray) -> float:
        """The lowest best probability at which the mean prior ``p_right`` of the queries at or
        above it reaches the level, capped at the calibrated cut."""
        if not len(p1):
            return self.ceiling
        order = np.sort(p1)[::-1]
        right = self.prior.p_right_many(order, self.features)
        mean = np.cumsum(right) / np.arange(1, len(order) + 1)
        last = np.append(order[:-1] > order[1:], True)  # a cut routes every query tied with it
        ok = np.flatnonzero((mean >= self.level) & last)
        return min(float(order[ok[-1]]), self.ceiling) if len(ok) else self.ceiling

    @property
    def seen(self) -> int:
        """Queries recorded so far (the window holds the last ``window`` of them)."""
        return self._count

    def lowered(self, medium: float) -> float | None:
        """The adapted cut when ``medium`` (the cut in force for a query) is the calibrated one it
        adapts and the adapted cut is under it, else None (a per-route or a hand-set cut holds)."""
        cut = self.cut
        return cut if cut is not None and medium == self.ceiling and cut < medium else None

    @classmethod
    def build(
        cls, prior: DecisionPrior | None, stats: CalibrationStats, cut: float | None
    ) -> "TrafficCut | None":
        """A traffic cut for a router whose calibration came from ``prior`` (its ``stats`` hold the
        config's numbers); None when the prior has no traffic level or the cut is unknown."""
        if prior is None or prior.traffic <= 0 or cut is None:
            return None
        top1, per_route, routes = prior.config_of(stats)
        level = prior.traffic_level(per_route, routes)
        if level <= 0:
            # No level was measured on configs of this size: CLINC150's full train fell to 94.8 %
            # precision under the level of configs of up to 20 a route (BENCHMARKS.md §4).
            return None
        z = prior.features(top1, per_route, routes)
        return cls(prior, z, cut, level=level)


def for_table(
    spec_policy: Any, calibration: Calibration | None, medium: float | None, model_id: str
) -> TrafficCut | None:
    """The traffic cut of a route table: only when the calibration is its model's prior, the config
    sets no ``medium`` and ``adapt_cut`` is on (``spec_policy``: the config's policy)."""
    if (
        calibration is None
        or calibration.source != "prior"
        or not spec_policy.adapt_cut
        or spec_policy.medium is not None
    ):
        return None
    prior = prior_for(model_id, spec_policy.route_precision)
    return TrafficCut.build(prior, calibration.stats, medium)
