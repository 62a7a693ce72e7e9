"""Queries in a language the routes were not written in.

A multilingual encoder scores a French or Chinese query against English exemplars
lower, and with smaller gaps between routes, than an English query that means the
same: on MASSIVE with multilingual-e5-small, the median best cosine of an en-US
route set is 0.906 for fr-FR test queries and 0.860 for zh-CN ones, against an
out-of-scope cut of 0.901 fitted on English exemplars, so nearly every Chinese
query was declined. The bundled background set says by how much, per language:
its sentences of language *L* are unrelated to any route, so the shift of their
best scores against the routes' own languages is the shift an *L* query suffers.

:func:`fit_languages` measures, for each background language the routes' exemplars
do not cover, that shift (``offset``, added to the out-of-scope cut) and the ratio of
the spread between an unrelated query's best and its tenth-best route (``ratio``,
which multiplies the temperature and every gap rule). At query time the query's
language is the nearest background-language centroid (:class:`LanguageDetector`),
one product of a few rows with the query vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

#: A language needs at least this many background sentences to get its own offsets.
MIN_BACKGROUND = 8
#: A language is covered by the routes when at least this share of their exemplars is in it.
COVERED_SHARE = 0.05
#: The spread between an unrelated query's best and this-th best label (or the last).
SPREAD_RANK = 10
#: Sanity bounds of the spread ratio (a handful of background sentences must not flatten a table).
RATIO_BOUNDS = (0.25, 4.0)


@dataclass(frozen=True)
class LanguageDetector:
    """The nearest of the background languages' centroids (unit rows) to a query vector."""

    names: tuple[str, ...]
    centroids: np.ndarray

    @classmethod
    def from_languages(cls, languages: Mapping[str, Mapping[str, Any]]) -> "LanguageDetector | None":
        """The detector of a calibration's ``languages`` (None when there are none)."""
        if not languages:
            return None
        names = tuple(languages)
        C = np.asarray([languages[n]["centroid"] for n in names], dtype=np.float32)
        return cls(names, C)

    def detect(self, q: np.ndarray) -> str:
        """The language of one query vector."""
        return self.names[int(np.argmax(self.centroids @ np.asarray(q, dtype=np.float32)))]

    def detect_many(self, Q: np.ndarray) -> list[str]:
        """The language of each row of ``Q``."""
        if not len(Q):
            return []
        return [self.names[i] for i in np.argmax(np.asarray(Q, dtype=np.float32) @ self.centroids.T, axis=1).tolist()]


def centroids(background: np.ndarray, langs: Sequence[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """Per background language (sorted), the normalised mean of its sentences' vectors."""
    lab = np.asarray(langs)
    names = tuple(sorted(set(langs)))
    C = np.stack([background[lab == n].mean(axis=0) for n in names]).astype(np.float32)
    C /= np.maximum(np.linalg.norm(C, axis=1, keepdims=True), 1e-12)
    return names, C


def fit_languages(V: np.ndarray, background: np.ndarray, langs: Sequence[str], scores: np.ndarray) -> dict[str, dict[str, Any]]:
    """Per background language: its centroid, and for a language the exemplars ``V`` do
    not cover, the ``offset`` of the out-of-scope cut and the ``ratio`` of the
    temperature (0 and 1 for covered ones). ``scores``: the background rows' scores
    against every label of the table ([len(background), labels]; -inf: no exemplar).

    Empty when there is nothing to compare (no exemplars, no background, or no
    background sentence in a covered language)."""
    if not len(V) or not len(background) or len(langs) != len(background):
        return {}
    names, C = centroids(background, langs)
    lab = np.asarray(langs)
    found = np.argmax(np.asarray(V, dtype=np.float32) @ C.T, axis=1)
    share = np.bincount(found, minlength=len(names)) / len(V)
    covered = {n for n, s in zip(names, share) if s >= COVERED_SHARE}
    home = np.isin(lab, sorted(covered))
    out: dict[str, dict[str, Any]] = {n: {"centroid": [round(float(x), 6) for x in c], "offset": 0.0, "ratio": 1.0}
                                      for n, c in zip(names, C)}
    if not home.any():
        return out
    top = -np.sort(-np.where(np.isfinite(scores), scores, -np.inf), axis=1)
    best = top[:, 0]
    k = min(SPREAD_RANK, int(np.isfinite(top[0]).sum()) if len(top) else 0) - 1
    spread = top[:, 0] - top[:, k] if k >= 1 else None
    for n in names:
        rows = lab == n
        if n in covered or rows.sum() < MIN_BACKGROUND:
            continue
        out[n]["offset"] = round(float(np.median(best[rows]) - np.median(best[home])), 6)
        if spread is not None:
            base = float(np.median(spread[home]))
            if base > 0:
                out[n]["ratio"] = round(float(np.clip(np.median(spread[rows]) / base, *RATIO_BOUNDS)), 6)
    return out


def adapted(languages: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The languages whose queries are scored with their own offsets."""
    return [n for n, v in languages.items() if v.get("offset", 0.0) != 0.0 or v.get("ratio", 1.0) != 1.0]
