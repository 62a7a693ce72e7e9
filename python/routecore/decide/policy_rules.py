"""The rules a policy's numbers drive, on per-route vectors (O(routes)): the confidence tier,
the previous-route boost, the affinity factors, the bias rules and the three-way tie, and the
``CLARIFY`` pseudo-route they may decide (:mod:`routecore.decision`'s, which the LLM client offers too).

:class:`~routecore.decide.policy.Policy` holds the numbers; this module holds what is done with them and
imports nothing of the policy (:class:`RulePolicy` is the little a bias rule reads of it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy as np

from routecore.decision import CLARIFY as CLARIFY
from routecore.errors import ConfigError


def resolved(value: float | None, key: str) -> float:
    """``value``, a calibrated key (:data:`~routecore.decide.policy.CALIBRATED_KEYS`) of a resolved policy:
    :meth:`Policy.resolve` fills every one, so ``None`` here means an unresolved policy."""
    if value is None:
        raise ConfigError(f"policy: {key} is unset: resolve the policy with a calibration first")
    return value


@dataclass(frozen=True)
class BiasRule:
    """When the two best routes are ``a`` and ``b`` (either order) and their
    adjusted scores are within ``within``, decide ``winner`` (a route or CLARIFY),
    whatever the tier: an exemplar head is sure of itself on a query that mixes two
    routes (it adds up both routes' evidence), while their cosines stay close.

    ``within`` is a cosine gap; unset, it is one calibrated ``scale`` (a factor
    *e* between the two routes' probabilities, whatever the encoder)."""

    a: str
    b: str
    winner: str
    within: float | None = None

    def __post_init__(self) -> None:
        from routecore.config import config_schema

        config_schema.convert(self, config_schema.BiasRule, f"bias rule {self.a}/{self.b}")

    def matches(self, x: str, y: str) -> bool:
        return {x, y} == {self.a, self.b}


class RulePolicy(Protocol):
    """What :func:`bias_winner` reads of a resolved :class:`~routecore.decide.policy.Policy`."""

    @property
    def temperature(self) -> float | None: ...

    @property
    def three_way_within(self) -> float | None: ...

    @property
    def bias_rules(self) -> tuple[BiasRule, ...]: ...


def affinity_scale(scores: np.ndarray, factor: float) -> np.ndarray:
    """``scores`` under an affinity ``factor`` (>= 0), as the native step applies ``affinity_boost`` and
    ``affinity_penalty``: times the factor where a score is >= 0, divided by it where it is negative.

    So a factor above 1 never lowers a score and one under 1 never raises it, whatever the score's sign
    (a product would lift a demoted -0.8 above a boosted -0.6), and on scores >= 0 it is the plain
    product. -inf and NaN stay; a negative score under a factor of 0 becomes the lowest finite float32.
    """
    s = np.asarray(scores, np.float32)
    f = np.float32(factor)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # in the branch np.where drops
        pos, neg = s * f, np.maximum(s / f, np.finfo(np.float32).min)
    out: np.ndarray = np.where(s >= 0, pos, np.where(np.isneginf(s), s, neg)).astype(np.float32)
    return out


def apply_previous_boost(probs: np.ndarray, prev: int | None, boost: float) -> np.ndarray:
    """Strategy B: add ``boost`` to the previous route's probability, renormalise."""
    if prev is None:
        return probs
    p = probs.astype(np.float64).copy()
    p[prev] += boost
    boosted: np.ndarray = (p / p.sum()).astype(np.float32)
    return boosted


def tier_of(p1: float, margin: float, high: float, high_margin: float, medium: float) -> str:
    if p1 >= high and margin >= high_margin:
        return "high"
    if p1 >= medium:
        return "medium"
    return "low"


def bias_winner(
    names: Sequence[str],
    order: Sequence[int],
    top_adjusted: Sequence[float],
    policy: RulePolicy,
    three_way: bool = True,
    top_probs: Sequence[float] | None = None,
) -> tuple[str, str] | None:
    """(winner, rule text) when a bias rule fires for the best routes, else None.

    ``order`` holds the best routes (at least the best three when there are
    three) in the order of their probabilities, ``top_adjusted`` their adjusted
    cosines in the same order. A rule reads the two best routes' cosine gap either
    way: a head may rank the lower cosine first. ``three_way``: whether the
    three-way tie may fire (the router asks it below the high tier only).

    ``top_probs``: the same routes' probabilities. A rule (and the three-way tie)
    then chooses only between plausible routes: each route's probability must be
    within the rule's window of the best one (``p >= p1 * exp(-within / temperature)``,
    the window read in probability), so that a head sure of one route is not
    overruled by close cosines.
    """

    def plausible(i: int, within: float) -> bool:
        if top_probs is None or not top_probs[0] > 0:
            return True
        t = resolved(policy.temperature, "temperature")
        return bool(top_probs[i] >= top_probs[0] * np.exp(-within / t))

    tw = resolved(policy.three_way_within, "three_way_within") if three_way and len(order) >= 3 else 0.0
    if (
        three_way
        and len(order) >= 3
        and top_adjusted[0] - top_adjusted[2] <= tw
        and plausible(1, tw)
        and plausible(2, tw)
    ):
        a, b, c = order[:3]
        return CLARIFY, f"three-way tie {names[a]}/{names[b]}/{names[c]} within {policy.three_way_within}"
    if len(order) >= 2:
        x, y = names[order[0]], names[order[1]]
        gap = abs(top_adjusted[0] - top_adjusted[1])
        for r in policy.bias_rules:
            within = resolved(r.within, "bias rule within")
            if gap <= within and r.matches(x, y) and plausible(1, within):
                return r.winner, f"{r.a} vs {r.b} within {r.within} -> {r.winner}"
    return None
