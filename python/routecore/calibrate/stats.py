"""Typed records of what a calibration measured: :class:`CalibrationStats` (the zero-label fit,
:class:`HeadStats` of the exemplar head) and :class:`TierCuts` (the cuts a head fit or a model's
measured prior sets).

Every module that reads a calibration's numbers reads these fields, never string keys; bundles
keep them as JSON objects (:meth:`CalibrationStats.to_dict`), and bundles written before these
records existed (one flat mapping) still load (:meth:`CalibrationStats.from_dict`).
"""

from __future__ import annotations

from dataclasses import asdict, astuple, dataclass, field, fields
from typing import Any, Mapping

from routecore.config.schema_base import record_from_dict
from routecore.errors import ConfigError

#: How a zero-label fit set the temperature when it had too few held-out rows to fit it.
TEMPERATURE_FROM_BACKGROUND = "background spread"
#: ... and when it had no background spread either: a constant, not a fit.
TEMPERATURE_CONSTANT = "a tenth of the match-unrelated spread"


@dataclass(frozen=True)
class TierCuts:
    """Cuts on the best probability (and its margin over the second) that a head fit or a model's
    measured prior sets (:class:`routecore.calibrate.calibration_record.Calibration`'s fields of
    the same names); ``None``: not set, the calibration's own value holds."""

    medium: float | None = None
    high: float | None = None
    margin: float | None = None
    previous_high: float | None = None
    previous_margin: float | None = None
    clarify_mass: float | None = None

    def rounded(self, digits: int = 6) -> "TierCuts":
        """These cuts rounded (a bundle's JSON keeps them short)."""
        return TierCuts(*(None if v is None else round(v, digits) for v in astuple(self)))

    def changes(self) -> dict[str, Any]:
        """The fields these cuts set, as ``dataclasses.replace`` takes them."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class HeadStats:
    """How the exemplar head (:mod:`routecore.calibrate.exemplar_head`) was fitted."""

    #: Exemplars that trained it, and background rows in its out-of-scope class / left out of it.
    rows: int = 0
    background: int = 0
    background_dropped: int = 0
    #: Its out-of-scope cut (``LinearHead.threshold``).
    threshold: float = 0.0
    #: Out-of-fold folds (0: the cuts come from a measured prior) and training epochs.
    folds: int = 0
    epochs: int | None = None
    groups: int | None = None
    #: The measured prior that set the cuts (its source) and the precision goal it was read at.
    prior: str | None = None
    route_precision: float | None = None
    #: The config's numbers the prior was read at.
    top1_dense: float | None = None
    exemplars_per_route: float | None = None
    #: Out-of-fold figures: top-1, share kept in scope, routed share and its precision.
    oof_top1: float | None = None
    oof_kept: float | None = None
    oof_routed: float | None = None
    oof_routed_precision: float | None = None
    oof_top1_with_gain: float | None = None
    background_rejected: float | None = None
    #: Too few exemplars to hold out: no cuts were fitted (and the router keeps its cosines).
    cuts_fallback: bool = False
    #: Why the router serves without the head, when it does.
    skipped: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "HeadStats":
        return record_from_dict(cls, d, "calibration stats: head")


#: Keys of a flat (pre-typed) stats mapping that belong to ``routecore fit``'s record.
#: The fit record earlier bundles kept in the stats (now the bundle's `fitted`).
_FIT_KEYS = ("fit_objective", "fit_value", "validation_decisions")


@dataclass(frozen=True)
class CalibrationStats:
    """What a calibration measured on the config's exemplars, and which of its values are
    constants rather than fits (:func:`routecore.calibrate.calibration.fallback_note`)."""

    #: The config's numbers (the measured prior reads ``top1_dense``, ``exemplars_per_route``, ``routes``).
    routes: int = 0
    held_out: int = 0
    background: int = 0
    top1_dense: float | None = None
    exemplars_per_route: float | None = None
    #: What the fitted values give on the held-out rows and the background set.
    top1_accuracy: float | None = None
    high_coverage: float | None = None
    routed_coverage: float | None = None
    background_rejected: float | None = None
    inscope_kept: float | None = None
    tool_background_median: float | None = None
    #: Constants in place of fits: the tiers (0.85 / 0.15, 0.70 / 0.10, 0.50), the temperature
    #: (:data:`TEMPERATURE_FROM_BACKGROUND` or :data:`TEMPERATURE_CONSTANT`), the paraphrase
    #: score ``match`` (why), the lexical weight (a prior number of scales).
    tiers_fallback: bool = False
    temperature_fallback: str | None = None
    match_fallback: str | None = None
    lexical_weight_prior: bool = False
    #: How the temperature was fitted, when not on every held-out row.
    temperature_from: str | None = None
    #: The lexical weight's fit on the held-out rows (:func:`routecore.core.lexical.fit_weight`).
    lexical: Mapping[str, float] = field(default_factory=dict)
    #: The exemplar head's fit, when the router has one (or why it serves without).
    head: HeadStats | None = None
    #: The routing cut learned from answered queries (:func:`routecore.calibrate.fits.learned_medium`).
    learned_medium: Mapping[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "CalibrationStats":
        """The stats of a bundle: this record's own form, or the flat mapping of earlier bundles
        (``lexical_*`` keys go to :attr:`lexical`). The fit's record that earlier bundles kept here
        (``fit``, ``fit_*``, ``tools_*``) is dropped: a bundle keeps it as its router's ``fitted``."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"calibration stats must be a mapping, got {type(d).__name__}")
        known = {f.name for f in fields(cls)} - {"lexical", "head"}
        kw: dict[str, Any] = {k: v for k, v in d.items() if k in known}
        lexical = dict(d.get("lexical") or {})
        for k, v in d.items():
            if k in known or k in ("lexical", "fit", "head") or k in _FIT_KEYS or k.startswith("tools_"):
                continue
            if k.startswith("lexical_"):
                lexical[k] = v
            else:
                raise ConfigError(f"calibration stats: unknown key {k!r}")
        if kw.get("temperature_fallback") is True:  # earlier bundles: a flag for the constant
            kw["temperature_fallback"] = TEMPERATURE_CONSTANT
        head = d.get("head")
        return cls(
            **kw,
            lexical=lexical,
            head=head if head is None or isinstance(head, HeadStats) else HeadStats.from_dict(head),
        )
