"""The :class:`Calibration` record: a router's numbers fitted to its encoder (what each field
means, where it comes from), its checks, its dict form and its view for one query language.

:mod:`routecore.calibrate.calibration` fits it (zero-label); this module holds only the record, so that
the policy, the language fits and the head read it without importing the fits.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from routecore.calibrate.language_fit import LanguageFit, language_fits_of
from routecore.calibrate.stats import CalibrationStats
from routecore.config.schema_base import record_from_dict
from routecore.config.specs import RouteThresholds
from routecore.core.lexical import STEMMERS
from routecore.errors import ConfigError

#: Where the numbers come from: the exemplars (zero-label), a model's measured prior
#: (routecore.calibrate.prior), a validation split (routecore fit), or the config.
SOURCES = ("zero-label", "prior", "fitted", "manual")


@dataclass(frozen=True)
class Calibration:
    """The fitted numbers of one router (see the module docstring)."""

    source: str
    temperature: float
    high: float
    margin: float
    medium: float
    previous_high: float
    previous_margin: float
    min_score: float
    scale: float
    match: float
    unrelated: float
    tool_floor: float | None = None
    #: Weights of the lexical (BM25) score added to routes' and tools' cosines
    #: (0: off; see routecore.core.lexical).
    lexical_weight: float = 0.0
    tool_lexical_weight: float = 0.0
    #: The tools' lexical terms and BM25 ``b`` (``routecore fit --tools`` picks them; see
    #: routecore.core.lexical).
    tool_lexical_stemmer: str = "none"
    tool_lexical_b: float = 0.75
    #: A clarification names the best routes until their probabilities add up to this
    #: (two or three routes; a model's prior sets it, routecore.calibrate.prior).
    clarify_mass: float | None = None
    #: The support the high tier needs (``Policy.high_support``): ``match`` in the exemplars'
    #: languages; for another language, ``match`` moved by its offset (:meth:`for_language`).
    support: float | None = None
    #: Per-route overrides (``routecore fit``: per-route ``min_score``; a mapping of values is read
    #: as :class:`~routecore.config.specs.RouteThresholds`).
    per_route: Mapping[str, RouteThresholds] = field(default_factory=dict)
    #: Per background language: its centroid and whether the exemplars cover it; for the
    #: others, the margin that detects it, its transfer and its own numbers (routecore.calibrate.languages).
    #: A mapping of dicts is read as a bundle's (:class:`~routecore.calibrate.language_fit.LanguageFit`).
    languages: Mapping[str, LanguageFit] = field(default_factory=dict)
    #: What the fit measured and which values are constants (a mapping is read as a bundle's).
    stats: CalibrationStats = field(default_factory=CalibrationStats)

    def __post_init__(self) -> None:
        if not all(isinstance(v, RouteThresholds) for v in self.per_route.values()):
            typed = {
                n: RouteThresholds.of(v, f"calibration: per_route: {n}") for n, v in self.per_route.items()
            }
            object.__setattr__(self, "per_route", typed)
        if not isinstance(self.stats, CalibrationStats):
            object.__setattr__(self, "stats", CalibrationStats.from_dict(self.stats))
        langs = self.languages
        if not (isinstance(langs, Mapping) and all(isinstance(v, LanguageFit) for v in langs.values())):
            object.__setattr__(self, "languages", language_fits_of(langs))
        if self.source not in SOURCES:
            raise ConfigError(f"calibration: source must be one of {SOURCES}, got {self.source!r}")
        for k in ("temperature", "scale"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v > 0):
                raise ConfigError(f"calibration: {k} must be a finite number > 0, got {v!r}")
        if self.tool_lexical_stemmer not in STEMMERS:
            raise ConfigError(
                f"calibration: tool_lexical_stemmer must be one of {STEMMERS}, "
                f"got {self.tool_lexical_stemmer!r}"
            )
        b = self.tool_lexical_b
        if not (isinstance(b, (int, float)) and 0.0 <= b <= 1.0):
            raise ConfigError(f"calibration: tool_lexical_b must be a number in [0, 1], got {b!r}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)  # the stats record too, as its own to_dict gives it
        d["per_route"] = {k: v.to_dict() for k, v in self.per_route.items()}
        d["languages"] = {k: v.to_dict() for k, v in self.languages.items()}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Calibration":
        return record_from_dict(cls, d, "calibration")

    def for_language(self, lang: str) -> "Calibration":
        """This calibration for queries in ``lang`` (:mod:`routecore.calibrate.languages`): the
        out-of-scope cuts moved by the language's ``offset``, its own temperature (the
        scale of every gap rule), tiers and ``medium``, and the tool floor moved by its
        ``tool_offset``; itself when ``lang`` has none of them."""
        adj = self.languages.get(lang)
        if adj is None or not adj.adapted:
            return self
        changes: dict[str, Any] = {"languages": {}}
        if adj.tool_offset is not None and self.tool_floor is not None:
            changes["tool_floor"] = float(np.clip(self.tool_floor + adj.tool_offset, 0.0, 1.0))
        if adj.offset is not None:
            off = adj.offset
            temperature = (
                adj.temperature
                if adj.temperature is not None
                else self.temperature * (adj.slope if adj.slope is not None else 1.0)
            )
            changes.update(adj.tier_changes())
            changes["per_route"] = {
                n: o
                if o.min_score is None
                else replace(o, min_score=float(np.clip(o.min_score + off, 0.0, 1.0)))
                for n, o in self.per_route.items()
            }
            # The head drops a language's cosine offset from its tiers and keeps it for the support.
            support = self.support if self.support is not None else self.match
            shift = adj.support_offset if adj.support_offset is not None else off
            changes.update(
                support=float(np.clip(support + shift, 0.0, 1.0)),
                min_score=float(np.clip(self.min_score + off, 0.0, 1.0)),
                temperature=temperature,
                scale=temperature,
            )
        return replace(self, **changes)

    def similarity(self, z: float) -> float:
        """A cosine ``z`` of the way from an unrelated best match (0) to a paraphrase (1)."""
        return float(np.clip(self.unrelated + z * (self.match - self.unrelated), 0.0, 1.0))


def kept_calibration(
    calibration: Calibration | None, route_names: set[str], recalibrate: bool = True
) -> Calibration | None:
    """The calibration a live update keeps: a fitted or manual one, or a zero-label one
    when not ``recalibrate`` (with the per-route values of routes that remain);
    ``None`` (recompute) for a zero-label one otherwise."""
    if calibration is None or (calibration.source in ("zero-label", "prior") and recalibrate):
        return None
    return replace(
        calibration, per_route={k: v for k, v in calibration.per_route.items() if k in route_names}
    )
