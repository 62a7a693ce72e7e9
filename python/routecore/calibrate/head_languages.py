"""The exemplar head's own numbers per query language the exemplars do not cover
(:func:`language_fits`): its scope cut and tiers moved by how its probabilities of the parallel
set's sentences change from a covered language to that one. The head itself is
:mod:`routecore.calibrate.exemplar_head`; the cosine side of the same adaptation is
:mod:`routecore.calibrate.languages`."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from routecore.calibrate.exemplar_head import HeadFit, HeadLanguage, in_scope_probs
from routecore.calibrate.fits import Targets, fit_medium, fit_tiers, softmax, top2_gold
from routecore.calibrate.language_fit import LanguageFit
from routecore.calibrate.languages import MIN_PAIRS, pairs, transfer
from routecore.calibrate.stats import TierCuts


def _logit(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    out: np.ndarray = np.log(q / (1 - q))
    return out


def language_fits(
    fit: HeadFit,
    languages: Mapping[str, LanguageFit],
    parallel: np.ndarray,
    rows: Sequence[tuple[int, str, str]],
    targets: Targets = Targets(),
    seed: int = 0,
) -> dict[str, HeadLanguage]:
    """Per language the exemplars do not cover (those the cosine calibration adapted,
    :mod:`routecore.calibrate.languages`), the head's own numbers for queries in it, measured on
    the parallel sentences the head takes for in scope in a covered language:

    - ``head_threshold``: the scope cut moved by the median shift, in log-odds, of
      their best in-scope probability from the covered language to this one;
    - the tiers and ``medium``: the out-of-fold rows' log-probabilities rescored as
      this language's (the slope and noise of the same sentences' log-probabilities,
      ``languages.transfer``) and the cuts fitted on them at the same targets: the
      head is right on fewer queries of another language at the same probability.

    Sentences the head declines in the covered language measure how out of scope they
    look, not how sure it is of a route, and are left out."""
    head = fit.head
    homes = [n for n, v in languages.items() if v.covered]
    out: dict[str, HeadLanguage] = {}
    if not homes or not len(parallel) or head.threshold <= 0:
        return out
    P, oos, _ = in_scope_probs(head, parallel)
    best = P.max(axis=1)
    in_scope = (best >= head.threshold) & (oos < best)
    logp = np.log(np.maximum(P / P.sum(axis=1, keepdims=True), 1e-30))
    for lang, v in languages.items():
        if v.offset is None:
            continue
        a, b = pairs(rows, homes, lang)
        a, b = a[in_scope[a]], b[in_scope[a]]
        if len(a) < MIN_PAIRS:
            continue
        shift = float(np.median(_logit(best[b]) - _logit(best[a])))
        threshold = round(float(1 / (1 + np.exp(-(_logit(np.array([head.threshold]))[0] + shift)))), 6)
        if fit.oof is None or not len(fit.oof[1]):
            out[lang] = HeadLanguage(threshold)
            continue
        slope, noise, _ = transfer(logp[a], logp[b])
        rng = np.random.default_rng(seed)
        L, gold = fit.oof
        p1, mg, right = top2_gold(softmax(slope * L + rng.normal(0.0, noise, L.shape), 1.0), gold)
        medium, tiers = (
            fit_medium(p1, right, targets.route_precision),
            fit_tiers(p1, mg, right, targets.high_precision),
        )
        prev = fit_tiers(p1, mg, right, targets.previous_precision) if tiers else None
        cuts = TierCuts(
            medium=medium,
            high=tiers[0] if tiers else None,
            margin=tiers[1] if tiers else None,
            previous_high=prev[0] if prev else None,
            previous_margin=prev[1] if prev else None,
        )
        out[lang] = HeadLanguage(threshold, cuts, round(slope, 6), round(noise, 6))
    return out
