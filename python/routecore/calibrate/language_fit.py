"""The typed record of one background language in a calibration (:class:`LanguageFit`).

:mod:`routecore.calibrate.languages` fits the cosine side (centroid, detection margin, the
transfer from a covered language and the numbers refitted on it), the calibration adds the tool
floor's shift, and :mod:`routecore.calibrate.head_languages` the exemplar head's own numbers.
Every module reads these fields, never string keys; bundles keep each language as a JSON object
of the fields that are set (:meth:`LanguageFit.to_dict`), the form earlier bundles wrote.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from routecore.calibrate.stats import TierCuts
from routecore.config.schema_base import record_from_dict
from routecore.errors import ConfigError


@dataclass(frozen=True)
class LanguageFit:
    """One background language: where its queries sit and, for a language the exemplars do not
    cover, the numbers its queries are decided under (``None``: not fitted, the calibration's own
    value holds)."""

    #: The normalised mean of the background set's queries in this language.
    centroid: tuple[float, ...]
    #: The exemplars are written in it (at least ``languages.COVERED_SHARE`` of them).
    covered: bool = False
    #: How much nearer than every covered language's centroid a query must be to be taken for it.
    detect_margin: float | None = None
    #: The parallel set's transfer from a covered language (``languages.transfer``): route scores
    #: are ``slope`` times a covered language's plus noise of deviation ``noise``, the best one
    #: ``offset`` lower (the out-of-scope cuts move by it; 0 when the head decides).
    slope: float | None = None
    noise: float | None = None
    offset: float | None = None
    #: The temperature and tiers refitted on held-out rows rescored as this language's queries
    #: (the head's own, when the router has a head).
    temperature: float | None = None
    medium: float | None = None
    high: float | None = None
    margin: float | None = None
    previous_high: float | None = None
    previous_margin: float | None = None
    #: The tool floor's shift for this language, on the tools' own table.
    tool_offset: float | None = None
    #: The high tier's support moves by this cosine offset (kept when the head drops ``offset``).
    support_offset: float | None = None
    #: The exemplar head's out-of-scope cut for this language and its log-probability transfer.
    head_threshold: float | None = None
    head_slope: float | None = None
    head_noise: float | None = None

    def __post_init__(self) -> None:
        try:
            centroid = tuple(float(x) for x in self.centroid)
        except (TypeError, ValueError):
            got = repr(self.centroid)[:60]
            raise ConfigError(
                f"calibration language: centroid must be a list of numbers, got {got}"
            ) from None
        object.__setattr__(self, "centroid", centroid)
        if not isinstance(self.covered, bool):
            raise ConfigError(f"calibration language: covered must be true or false, got {self.covered!r}")
        for f in fields(self)[2:]:
            v = getattr(self, f.name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ConfigError(f"calibration language: {f.name} must be a finite number, got {v!r}")
            object.__setattr__(self, f.name, float(v))

    @property
    def adapted(self) -> bool:
        """Its queries are decided under their own numbers (routes or tools)."""
        return self.offset is not None or self.tool_offset is not None

    def tier_changes(self) -> dict[str, float]:
        """The tier cuts this language sets, as ``dataclasses.replace`` takes them."""
        cuts = (self.high, self.margin, self.medium, self.previous_high, self.previous_margin)
        names = ("high", "margin", "medium", "previous_high", "previous_margin")
        return {k: v for k, v in zip(names, cuts) if v is not None}

    def with_tiers(self, cuts: TierCuts) -> "LanguageFit":
        """This language with the tier cuts of ``cuts`` (those ``cuts`` leaves unset: none)."""
        return replace(
            self,
            medium=cuts.medium,
            high=cuts.high,
            margin=cuts.margin,
            previous_high=cuts.previous_high,
            previous_margin=cuts.previous_margin,
        )

    def without_cosine(self) -> "LanguageFit":
        """This language without the numbers fitted on cosine scores (a head decides instead)."""
        return replace(self, offset=None, slope=None, noise=None, temperature=None).with_tiers(TierCuts())

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set (``covered`` only when true), the centroid as a list."""
        d: dict[str, Any] = {"centroid": list(self.centroid)}
        if self.covered:
            d["covered"] = True
        d.update({f.name: v for f in fields(self)[2:] if (v := getattr(self, f.name)) is not None})
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "LanguageFit":
        return record_from_dict(cls, d, "calibration language")


def language_fits_of(d: Any) -> dict[str, LanguageFit]:
    """A calibration's ``languages`` as records: each value a :class:`LanguageFit` or its dict form.

    Raises:
        ConfigError: not a mapping of language codes, or a malformed language.
    """
    if not isinstance(d, Mapping):
        raise ConfigError(f"calibration: languages must be a mapping, got {type(d).__name__}")
    out = {}
    for k, v in d.items():
        if not isinstance(k, str):
            raise ConfigError(f"calibration: language codes must be strings, got {k!r}")
        out[k] = v if isinstance(v, LanguageFit) else LanguageFit.from_dict(v)
    return out
