"""A table's policy per language the routes' exemplars do not cover: the detector of
:mod:`routecore.calibrate.languages` picks the query's language, and the calibration's numbers for it
resolve the policy (:meth:`Policy.resolve`)."""

from __future__ import annotations

import numpy as np

from routecore.calibrate.calibration_record import Calibration
from routecore.calibrate.languages import LanguageDetector
from routecore.decide.policy import Policy


class LanguagePolicies:
    """A table's policy per adapted language, resolved from the spec policy like the
    table's own (so explicit values win), and the detector that picks one per query."""

    def __init__(self, base: Policy, detector: LanguageDetector, policies: dict[str, Policy]):
        self.base, self.detector, self.policies = base, detector, policies

    @classmethod
    def build(
        cls, base: Policy, spec_policy: Policy, calibration: Calibration | None, tools: bool = False
    ) -> LanguagePolicies | None:
        """The policies of ``calibration``'s languages that have their own offset (the tool
        floor's with ``tools``, else the routes'); None when none has."""
        langs = calibration.languages if calibration is not None else {}
        names = [n for n, v in langs.items() if (v.tool_offset if tools else v.offset) is not None]
        det = LanguageDetector.from_languages(langs) if names else None
        if det is None or calibration is None:
            return None
        policies = {n: spec_policy.resolve(calibration.for_language(n)) for n in names}
        policies = {
            n: p for n, p in policies.items() if p != base
        }  # every adapted value pinned: nothing to say
        return cls(base, det, policies) if policies else None

    def policy_for(self, current: Policy, q: np.ndarray) -> tuple[Policy, str | None]:
        """The policy for query vector ``q`` and its language when it has its own; ``current``
        as given when it is not the policy these were built from (set by hand since)."""
        return self.read(current, q)[:2]

    def read(self, current: Policy, q: np.ndarray) -> tuple[Policy, str | None, str | None]:
        """:meth:`policy_for`, and the language the detector found (None when it did not run)."""
        if current is not self.base:
            return current, None, None
        lang = self.detector.detect(q)
        p = self.policies.get(lang)
        return (current, None, lang) if p is None else (p, lang, lang)
