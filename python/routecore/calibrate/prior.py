"""Decision priors: the cuts of the exemplar head's probability measured once per model on dev
sets, shipped with routecore (``data/priors.json``; ``scripts/fit_decision_prior.py`` writes it).

A router built from a handful of exemplars per route cannot fit its own cuts: its held-out
exemplars are few and closer to each other than real queries are to them, so per-config fits
swung the routed share by 17-37 points between samples of the same config (issue 34). A prior
is one model per encoder of how often a routed decision is right, given the head's probability
and three numbers of the config, measured on the dev splits of several intent sets at 5-20
exemplars per route and 4 routes to all of them, and checked leave-one-dataset-out
(BENCHMARKS.md, few-shot decisions). Where a model has one, the router uses it (``calibrated="prior"``)
and trains its head once instead of once per fold; other models keep the out-of-fold fit (``zero-label``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence, Tuple

import numpy as np

from routecore.calibrate.stats import CalibrationStats, TierCuts
from routecore.config.schema_base import record_from_dict
from routecore.errors import ConfigError

#: The priors shipped with routecore, by model id (and by :func:`pair_key` for two encoders' combined
#: probabilities: ``scripts/fit_pair_prior.py``, :mod:`routecore.calibrate.peer_cut`).
PRIORS_FILE = Path(__file__).resolve().parents[1] / "data" / "priors.json"


def _unit(v: Any) -> bool:
    try:
        return 0.0 <= float(v) <= 1.0
    except (TypeError, ValueError):
        return False


def _logit(p: float) -> float:
    q = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(q / (1 - q))


def config_features(
    top1_dense: float, per_route: float, routes: float, span: Mapping[str, Sequence[float]] | None = None
) -> list[float]:
    """(logit top1_dense, log exemplars per route, log routes), each first brought into ``span``
    (the range the prior was measured on: it is not extrapolated)."""

    def within(key: str, v: float) -> float:
        lo, hi = (span or {}).get(key, (-math.inf, math.inf))
        return min(max(v, lo), hi)

    q = min(max(within("top1_dense", top1_dense), 1e-3), 1 - 1e-3)
    return [
        math.log(q / (1 - q)),
        math.log(max(within("per_route", per_route), 1.0)),
        math.log(max(within("routes", routes), 2.0)),
    ]


def p_right(weights: Sequence[float], p1: float, z: Sequence[float]) -> float:
    """The prior's probability that a routed decision is right, from the head's best probability
    ``p1`` and the config's features ``z``: a logistic model of ``logit(p1)``, ``z`` and their products."""
    lp = _logit(p1)
    x = [1.0, lp, *z, *(lp * v for v in z)]
    return 1.0 / (1.0 + math.exp(-sum(a * b for a, b in zip(weights, x))))


def cut_for(weights: Sequence[float], tau: float, z: Sequence[float]) -> float:
    """The head probability at which :func:`p_right` reaches ``tau`` for a config (its cut on p1).
    The model is linear in logit(p1) with slope ``w1 + w_int . z``; a slope <= 0 (the probability
    says nothing for this config) gives 1.0: nothing clears the cut."""
    n = len(z)
    slope = weights[1] + sum(a * b for a, b in zip(weights[2 + n :], z))
    if slope <= 0:
        return 1.0
    lp = (_logit(tau) - weights[0] - sum(a * b for a, b in zip(weights[2 : 2 + n], z))) / slope
    return 1.0 / (1.0 + math.exp(-max(min(lp, 50.0), -50.0)))


@dataclass(frozen=True)
class DecisionPrior:
    """A model's calibration of the exemplar head's best probability across configs.

    ``weights``: a logistic model of "the routed decision is right" on ``logit(p1)`` (the head's
    best in-scope probability), three numbers of the config known when the router is built
    (:func:`config_features`: how often an exemplar's nearest other exemplars are of its own
    route, the exemplars per route, the routes) and their products with ``logit(p1)``. The cuts
    are levels of that probability: ``medium`` routes (routed decisions right on 95 % of the dev
    queries of every set), ``high`` the high tier (99 %), ``previous_high`` the previous route's
    (90 %); the margins are 0. ``span``: the range of the config numbers on dev (never
    extrapolated). ``clarify_mass``: a clarification names the best routes until their
    probabilities add up to it (two or three routes). ``scope``: the head's scope cut
    (``LinearHead.threshold``): a query whose best in-scope probability, before the
    out-of-scope class is taken out, is under it is out of scope; the largest under which no
    dev set loses more than 0.5 % of its in-scope queries whose best route is right.
    ``traffic``: the level of the cut adapted to a router's own queries
    (:mod:`routecore.calibrate.traffic`): the lowest mean :func:`p_right` over the queries
    routed at which every dev set still met its goal; 0 turns it off. ``traffic_wide``: the levels
    of configs with more exemplars per route than ``span`` holds, each ``[up to this many a route,
    level]``, measured on dev configs of 40 and of every train utterance a route (their features
    held within ``span``); a config beyond the last keeps its cut fixed. ``source``: how it was
    measured. ``targets``: for a policy that sets ``route_precision``, the ``medium`` and
    ``traffic`` levels measured for that goal on every dev set alike (:meth:`at`); ``goal``: the
    routed precision these levels were measured for (None: 95 %, 90 % on MASSIVE fr/zh).
    ``languages``: the languages of the dev sets, when the prior holds for configs written in them
    only (a pair's: :mod:`routecore.calibrate.peer_cut`); empty, any."""

    weights: Tuple[float, ...]
    medium: float
    high: float
    previous_high: float
    span: Mapping[str, Sequence[float]]
    clarify_mass: float = 1.0
    scope: float = 0.0
    traffic: float = 0.0
    source: str = ""
    targets: Mapping[str, Sequence[float]] = field(default_factory=dict)
    goal: float | None = None
    languages: Tuple[str, ...] = ()
    traffic_wide: Tuple[Tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        w = self.weights
        if not (
            isinstance(w, (list, tuple))
            and len(w) == 8
            and all(isinstance(x, (int, float)) and math.isfinite(x) for x in w)
        ):
            raise ConfigError(f"decision prior: weights must be eight finite numbers, got {w!r}")
        object.__setattr__(self, "weights", tuple(float(x) for x in w))
        langs = self.languages
        if isinstance(langs, str) or not all(isinstance(x, str) for x in langs):
            raise ConfigError(f"decision prior: languages must be a list of language codes, got {langs!r}")
        object.__setattr__(self, "languages", tuple(langs))
        for name in ("medium", "high", "previous_high", "clarify_mass", "scope", "traffic"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise ConfigError(f"decision prior: {name} must be in [0, 1], got {v!r}")
        wide = self.traffic_wide
        if not (
            isinstance(wide, (list, tuple))
            and all(
                isinstance(x, (list, tuple))
                and len(x) == 2
                and isinstance(x[0], (int, float))
                and x[0] > 0
                and _unit(x[1])
                for x in wide
            )
        ):
            raise ConfigError(
                f"decision prior: traffic_wide must be [exemplars a route, level] pairs, got {wide!r}"
            )
        object.__setattr__(self, "traffic_wide", tuple(sorted((float(n), float(v)) for n, v in wide)))
        for goal, levels in dict(self.targets).items():
            ok = isinstance(levels, (list, tuple)) and len(levels) == 2
            if not (ok and _unit(goal) and all(_unit(v) for v in levels)):
                raise ConfigError(
                    f"decision prior: targets maps a precision to [medium, traffic], got {goal!r}: {levels!r}"
                )

    def at(self, goal: float | None) -> "DecisionPrior":
        """This prior for a policy whose routed decisions should be right on ``goal``: its
        ``medium`` and ``traffic`` levels interpolated between the goals it was measured at
        (:attr:`targets`), held at the nearest one outside them (the calibration's stats say which
        goal was used). None, or a prior without targets: the prior as measured."""
        if goal is None or not self.targets:
            return self
        grid = sorted((float(g), tuple(float(v) for v in lv)) for g, lv in self.targets.items())
        xs = np.array([g for g, _ in grid])
        g = float(min(max(goal, xs[0]), xs[-1]))
        medium, traffic = (float(np.interp(g, xs, [lv[i] for _, lv in grid])) for i in (0, 1))
        # A traffic level of 0 (no level met the goal on dev) keeps the cut fixed from that goal up.
        near = [lv[1] for x, lv in grid if x >= g][:1] + [lv[1] for x, lv in grid if x <= g][-1:]
        traffic = 0.0 if 0.0 in near else traffic
        # The wide levels were measured for the prior's own goals only.
        return replace(self, medium=round(medium, 6), traffic=round(traffic, 6), goal=g, traffic_wide=())

    def cuts(self, top1_dense: float, per_route: float, routes: int) -> TierCuts:
        """The cuts on p1 for a config (no margin: the prior's tiers are levels of p1 alone)."""
        z = config_features(top1_dense, per_route, routes, self.span)
        medium = cut_for(self.weights, self.medium, z)
        return TierCuts(
            medium=round(medium, 6),
            high=round(max(cut_for(self.weights, self.high, z), medium), 6),
            margin=0.0,
            previous_high=round(min(cut_for(self.weights, self.previous_high, z), medium), 6),
            previous_margin=0.0,
            clarify_mass=self.clarify_mass,
        )

    def p_right_many(self, p1: np.ndarray, z: Sequence[float]) -> np.ndarray:
        """:func:`p_right` of every best probability in ``p1`` for a config's features ``z``."""
        q = np.clip(np.asarray(p1, np.float64), 1e-6, 1 - 1e-6)
        lp = np.log(q / (1 - q))
        w = np.asarray(self.weights)
        n = len(z)
        zz = np.asarray(z, np.float64)
        x = w[0] + lp * w[1] + float(w[2 : 2 + n] @ zz) + lp * float(w[2 + n :] @ zz)
        out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
        return out

    def config_of(self, stats: CalibrationStats) -> tuple[float, float, int]:
        """(top1_dense, exemplars per route, routes) of a calibration's ``stats``, as the prior reads
        them: with nothing held out (one exemplar a route), the middle of the separability it saw."""
        top1 = stats.top1_dense
        if top1 is None:
            lo, hi = self.span.get("top1_dense", (0.5, 0.5))
            top1 = (float(lo) + float(hi)) / 2
        return float(top1), float(stats.exemplars_per_route or 1.0), int(stats.routes or 2)

    def traffic_level(self, per_route: float, routes: float) -> float:
        """The traffic level for a config of this many exemplars per route and routes: ``traffic``
        within the span, a ``traffic_wide`` level above it, 0 (the cut stays fixed) where no level was
        measured."""
        lo, hi = self.span.get("routes", (-math.inf, math.inf))
        if not float(lo) <= routes <= float(hi) or per_route < float(self.span.get("per_route", (0, 0))[0]):
            return 0.0
        if per_route <= float(self.span.get("per_route", (0, math.inf))[1]):
            return self.traffic
        return next((level for most, level in self.traffic_wide if per_route <= most), 0.0)

    def features(self, top1_dense: float, per_route: float, routes: int) -> list[float]:
        """:func:`config_features` within the prior's span."""
        return config_features(top1_dense, per_route, routes, self.span)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "DecisionPrior":
        return record_from_dict(cls, d, "decision prior")


@lru_cache(maxsize=1)
def _table() -> dict[str, DecisionPrior]:
    if not PRIORS_FILE.is_file():
        return {}
    raw = json.loads(PRIORS_FILE.read_text(encoding="utf-8"))
    return {k: DecisionPrior.from_dict(v) for k, v in raw.get("models", {}).items()}


def pair_key(model_id: str, peer_model: str) -> str:
    """The key of the prior measured for ``model_id``'s head combined with ``peer_model``'s (a
    router deciding on both encoders' probabilities: ``Router.route``'s ``peer``)."""
    return f"{model_id}+{peer_model}"


def prior_for(model_id: str, goal: float | None = None) -> DecisionPrior | None:
    """The shipped prior of the model ``model_id`` (``Encoder.model_id``), or None; ``goal``: a
    policy's ``route_precision`` (:meth:`DecisionPrior.at`)."""
    prior = _table().get(model_id)
    return prior.at(goal) if prior is not None else None
