"""Queries in a language the routes were not written in.

A multilingual encoder scores a French or Chinese query against English exemplars
lower, and with smaller gaps between routes, than the English query that means the
same. On MASSIVE dev with multilingual-e5-small, the parallel fr-FR / zh-CN queries
score their best en-US route 0.036 / 0.080 lower than the English originals, and the
gap between their best and tenth-best route is 0.61 / 0.45 times as wide: against an
out-of-scope cut fitted on English exemplars, nearly every Chinese query was declined,
and the rest were clarified.

The bundled parallel set (everyday requests with their translations,
:func:`routecore.core.background.parallel_rows`) measures that transfer for the router at
hand. For each language *L* of the set that the exemplars do not cover and each covered
language *H* of the set, the same sentences are scored against every route in *H* and
in *L*. Per sentence the route scores are centred; *L*'s are ``slope`` times *H*'s plus
noise of deviation ``noise``, and their best score is ``offset`` away. Zero-label
calibration's held-out rows (routecore.calibrate.calibration) are then rescored as *L* queries
would score: ``slope`` x their scores plus that noise (seeded). The temperature, the
tiers and ``medium`` are fitted on those rows with the same targets, and the
out-of-scope cut moves by ``offset``.

At query time the query's language is the nearest background-language centroid
(:class:`LanguageDetector`): one product of nine rows with the query vector.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping, Sequence

import numpy as np

from routecore.calibrate.fits import Targets, fit_medium, fit_temperature, fit_tiers, top2_correct
from routecore.calibrate.language_fit import LanguageFit
from routecore.calibrate.stats import TierCuts
from routecore.decision import Alert

#: A language is covered by the routes when at least this share of their exemplars is in it, and
#: at least :data:`COVERED_MIN` of them: the nearest-centroid detector takes one short phrase in
#: twenty for another language ("the app will not load": French), which read a small English
#: config as bilingual.
COVERED_SHARE = 0.05
COVERED_MIN = 2
#: Share of texts in a covered language that may be taken for another language.
DETECT_FALSE_RATE = 0.01
#: Fewer parallel sentences than this (in a covered language and in L) and L is not adapted.
MIN_PAIRS = 8


@dataclass(frozen=True)
class LanguageDetector:
    """The nearest of the background languages' centroids (unit rows) to a query vector.

    A language the exemplars do not cover must beat the nearest covered one by
    ``margins[i]``, set so that only :data:`DETECT_FALSE_RATE` of the exemplars (texts in
    the covered languages) would pass: an encoder that does not tell languages apart
    (MiniLM, English-only, puts 29 % of English MASSIVE queries nearest another
    language's centroid) gets wide margins and adapts almost nothing."""

    names: tuple[str, ...]
    centroids: np.ndarray
    covered: np.ndarray  # bool per name
    margins: np.ndarray  # per name (0 for covered ones)

    @classmethod
    def from_languages(cls, languages: Mapping[str, LanguageFit]) -> "LanguageDetector | None":
        """The detector of a calibration's ``languages`` (None when there are none)."""
        if not languages:
            return None
        names = tuple(languages)
        fits = [languages[n] for n in names]
        return cls(
            names,
            np.asarray([f.centroid for f in fits], dtype=np.float32),
            np.array([f.covered for f in fits]),
            np.array([f.detect_margin or 0.0 for f in fits], dtype=np.float32),
        )

    def detect(self, q: np.ndarray) -> str:
        """The language of one query vector (:meth:`detect_many` for one row, in a few µs)."""
        s = (self.centroids @ np.asarray(q, dtype=np.float32)).tolist()
        best = max(range(len(s)), key=s.__getitem__)
        cov = self.covered.tolist()
        if cov[best] or not any(cov):
            return self.names[best]
        near = max((i for i, c in enumerate(cov) if c), key=s.__getitem__)
        return self.names[best] if s[best] - s[near] > float(self.margins[best]) else self.names[near]

    def detect_many(self, Q: np.ndarray) -> list[str]:
        """The language of each row of ``Q``."""
        if not len(Q):
            return []
        S = np.asarray(Q, dtype=np.float32) @ self.centroids.T
        best = np.argmax(S, axis=1)
        if self.covered.any():
            home = np.flatnonzero(self.covered)
            near = home[np.argmax(S[:, home], axis=1)]
            beats = S[np.arange(len(S)), best] - S[np.arange(len(S)), near] > self.margins[best]
            best = np.where(self.covered[best] | beats, best, near)
        return [self.names[i] for i in best.tolist()]


def detection_margin(V: np.ndarray, C: np.ndarray, home: np.ndarray) -> float:
    """How much nearer than every covered language's centroid an uncovered one must be, so
    that at most :data:`DETECT_FALSE_RATE` of the exemplars ``V`` would pass (at least 0)."""
    if not home.any() or home.all() or not len(V):
        return 0.0
    S = np.asarray(V, dtype=np.float32) @ C.T
    gap = S[:, ~home].max(axis=1) - S[:, home].max(axis=1)
    return max(float(np.quantile(gap, 1.0 - DETECT_FALSE_RATE)), 0.0)


def centroids(vectors: np.ndarray, langs: Sequence[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """Per language (sorted), the normalised mean of its rows' vectors."""
    lab = np.asarray(langs)
    names = tuple(sorted(set(langs)))
    C = np.stack([vectors[lab == n].mean(axis=0) for n in names]).astype(np.float32)
    C /= np.maximum(np.linalg.norm(C, axis=1, keepdims=True), 1e-12)
    return names, C


def covered(V: np.ndarray, names: Sequence[str], C: np.ndarray) -> set[str]:
    """The languages of at least :data:`COVERED_SHARE` of the exemplars ``V`` (and
    :data:`COVERED_MIN` of them; any language of a config of fewer exemplars than that)."""
    count = np.bincount(np.argmax(np.asarray(V, dtype=np.float32) @ C.T, axis=1), minlength=len(names))
    least = max(1, min(COVERED_MIN, len(V)))
    return {n for n, c in zip(names, count) if c >= least and c >= COVERED_SHARE * len(V)}


def transfer(S_home: np.ndarray, S_lang: np.ndarray) -> tuple[float, float, float]:
    """(slope, noise, offset): the same sentences' label scores in a covered language
    (``S_home``) and in another (``S_lang``), one row per sentence."""
    keep = np.isfinite(S_home).all(axis=0) & np.isfinite(S_lang).all(axis=0)
    h, g = S_home[:, keep].astype(np.float64), S_lang[:, keep].astype(np.float64)
    ch, cg = h - h.mean(axis=1, keepdims=True), g - g.mean(axis=1, keepdims=True)
    slope = float((ch * cg).sum() / max((ch * ch).sum(), 1e-12))
    noise = float(np.std(cg - slope * ch))
    offset = float(np.median(g.max(axis=1) - h.max(axis=1)))
    return slope, noise, offset


def pairs(
    parallel_rows: Sequence[tuple[int, str, str]], homes: Sequence[str], lang: str
) -> tuple[np.ndarray, np.ndarray]:
    """Row indices of the same sentences in one of ``homes`` and in ``lang``."""
    by_lang: dict[str, dict[int, int]] = {}
    for i, (sid, lg, _) in enumerate(parallel_rows):
        by_lang.setdefault(lg, {})[sid] = i
    mine = by_lang.get(lang, {})
    found = [(by_lang[h][s], i) for h in homes if h in by_lang for s, i in mine.items() if s in by_lang[h]]
    return (np.array([a for a, _ in found], dtype=np.int64), np.array([b for _, b in found], dtype=np.int64))


def offsets(
    V: np.ndarray,
    background: np.ndarray,
    background_langs: Sequence[str],
    parallel_rows: Sequence[tuple[int, str, str]],
    parallel_scores: np.ndarray,
) -> dict[str, float]:
    """Per language of the parallel set that ``V`` does not cover: how much lower its sentences'
    best label scores than the same sentences' in a covered language (the tool floor's shift)."""
    if not len(V) or not len(background) or len(parallel_rows) != len(parallel_scores):
        return {}
    names, C = centroids(background, background_langs)
    home = sorted(covered(V, names, C))
    out = {}
    for lang in sorted({lg for _, lg, _ in parallel_rows} - set(home)):
        hi, li = pairs(parallel_rows, home, lang)
        if len(hi) >= MIN_PAIRS:
            out[lang] = transfer(parallel_scores[hi], parallel_scores[li])[2]
    return out


#: Fits a language's numbers from held-out rows rescored as its queries: (slope, noise) ->
#: (temperature, tier cuts).
RefitRows = Callable[[float, float], tuple[float, TierCuts]]


def fit_languages(
    V: np.ndarray,
    background: np.ndarray,
    background_langs: Sequence[str],
    parallel: np.ndarray,
    parallel_rows: Sequence[tuple[int, str, str]],
    parallel_scores: np.ndarray,
    refit: RefitRows | None,
) -> dict[str, LanguageFit]:
    """Per background language: its centroid; for a language of the parallel set that the
    exemplars ``V`` do not cover, its transfer (:func:`transfer`) and the calibration fields
    ``refit`` gives for it (nothing else when ``refit`` is None: too few held-out rows).

    ``parallel_scores``: the parallel rows' scores against every label ([rows, labels])."""
    if not len(V) or not len(background) or len(background_langs) != len(background):
        return {}
    names, C = centroids(background, background_langs)
    home = covered(V, names, C)
    is_home = np.array([n in home for n in names])
    margin = round(detection_margin(V, C, is_home), 6)
    out = {
        n: LanguageFit(
            tuple(round(float(x), 6) for x in c),
            covered=n in home,
            detect_margin=None if n in home else margin,
        )
        for n, c in zip(names, C)
    }
    if not len(parallel) or len(parallel_rows) != len(parallel):
        return out
    for lang in sorted({lg for _, lg, _ in parallel_rows} - home):
        if lang not in out:
            continue  # no background centroid: its queries are never detected
        hi, li = pairs(parallel_rows, sorted(home), lang)
        if len(hi) < MIN_PAIRS:
            continue
        slope, noise, offset = transfer(parallel_scores[hi], parallel_scores[li])
        if not slope > 0:
            continue
        fit = replace(out[lang], slope=round(slope, 6), noise=round(noise, 6), offset=round(offset, 6))
        if refit is not None:
            temperature, cuts = refit(slope, noise)
            fit = replace(fit, temperature=round(temperature, 6)).with_tiers(cuts.rounded())
        out[lang] = fit
    return out


def language_fields(
    slope: float,
    noise: float,
    S: np.ndarray,
    S_tier: np.ndarray,
    gold: np.ndarray,
    R: int,
    targets: Targets,
    seed: int,
) -> tuple[float, TierCuts]:
    """Temperature, ``medium`` and tiers fitted on held-out rows rescored as queries of
    another language score: ``slope`` x the scores plus Gaussian ``noise`` (seeded)."""
    rng = np.random.default_rng(seed)
    SL = slope * S.astype(np.float64) + rng.normal(0.0, noise, S.shape)
    ST = slope * S_tier.astype(np.float64) + rng.normal(0.0, noise, S_tier.shape)
    temperature = fit_temperature(SL, gold)
    p1, _, ok = top2_correct(SL, gold, temperature, R)
    t1, tmg, tok = top2_correct(ST, gold, temperature, R)
    tiers = fit_tiers(t1, tmg, tok, targets.high_precision)
    prev = fit_tiers(t1, tmg, tok, targets.previous_precision) if tiers is not None else None
    cuts = TierCuts(
        medium=fit_medium(p1, ok, targets.route_precision),
        high=tiers[0] if tiers else None,
        margin=tiers[1] if tiers else None,
        previous_high=prev[0] if prev else None,
        previous_margin=prev[1] if prev else None,
    )
    return temperature, cuts


def adapted(languages: Mapping[str, LanguageFit]) -> list[str]:
    """The languages whose queries are decided under their own policy."""
    return [n for n, v in languages.items() if v.adapted]


def language_alert(lang: str, used: Mapping[str, tuple[float, float]]) -> Alert:
    """Says that a query in ``lang`` was decided under its own numbers: ``used`` maps each
    changed policy key to (its value for ``lang``, the table's value)."""
    said = ", ".join(f"{k} {v:.4g} (else {base:.4g})" for k, (v, base) in used.items())
    return Alert(
        "language",
        f"query in {lang!r}, a language the exemplars do not cover: {said}",
        {"language": lang, **{k: v for k, (v, _) in used.items()}},
    )
