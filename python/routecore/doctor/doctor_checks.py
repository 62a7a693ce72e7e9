"""The exemplar checks of :mod:`routecore.doctor.doctor` (misfits, near-duplicates, confused route
pairs) and their result types; the module docstring of :mod:`routecore.doctor.doctor` gives the rules."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from routecore.calibrate.held_out import route_scores

MIN_CONFUSIONS = 2
#: A same-route pair is a near-duplicate from this share of the way from ``match`` to an identical text.
DUPLICATE_SHARE = 0.75
#: Examples kept per finding.
EXAMPLES = 3
#: A misfit is placed (moved) when, scored against the config without the misfits, one route is more
#: likely than all the others together (the cosine softmax at the calibrated temperature).
PLACED = 0.5


@dataclass(frozen=True)
class Cuts:
    """The numbers every finding is measured with, all from the router's calibration."""

    temperature: float
    misfit_gap: float
    duplicate: float
    match: float
    unrelated: float
    placed: float


@dataclass(frozen=True)
class Exemplar:
    """One exemplar: its route, its position among the route's utterances (-1: the description)."""

    route: str
    index: int
    text: str


@dataclass(frozen=True)
class Misfit:
    """An exemplar nearer another route (or the background) than its own; gaps in temperatures."""

    exemplar: Exemplar
    kind: str  # "misplaced" (moved to ``to``) or "generic" (dropped)
    own_score: float
    nearest_route: str
    nearest_score: float
    gap: float
    background: float
    to: str | None
    near_routes: tuple[str, ...]


@dataclass(frozen=True)
class Duplicate:
    """``drop`` repeats ``keep`` (same route) at ``cosine``."""

    keep: Exemplar
    drop: Exemplar
    cosine: float


@dataclass(frozen=True)
class PairExample:
    text: str
    route: str
    own_score: float
    other_score: float


@dataclass(frozen=True)
class ConfusedPair:
    """Held out, ``a_to_b`` exemplars of ``a`` are nearer ``b`` (and ``b_to_a`` the other way)."""

    a: str
    b: str
    a_to_b: int
    b_to_a: int
    share: float
    centroid_cosine: float
    examples: tuple[PairExample, ...]


def normalised(text: str) -> str:
    """Case, accents' composition, punctuation and spacing folded: equal texts are duplicates."""
    t = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", t).split())


def _gaps(V: np.ndarray, owners: np.ndarray, rows: np.ndarray, active: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per row of ``rows``, scored against the ``active`` exemplars but itself: its own route's best
    cosine, the best other route's, that route, and the exemplar that gives it."""
    cols = np.flatnonzero(active)
    C = V[rows] @ V[cols].T
    C[cols[None, :] == rows[:, None]] = -np.inf
    same = owners[cols][None, :] == owners[rows][:, None]
    own = np.where(same, C, -np.inf).max(axis=1, initial=-np.inf)
    other_route = np.where(same, -np.inf, C)
    support = cols[other_route.argmax(axis=1)] if len(cols) else np.zeros(len(rows), np.int64)
    other = other_route.max(axis=1, initial=-np.inf)
    return own, other, owners[support], support


def _suspects(V: np.ndarray, owners: np.ndarray, cut: float) -> np.ndarray:
    """Exemplars nearer another route than their own by ``cut``, found in rounds, clearest first: an
    exemplar whose nearest other-route exemplar was taken out in the same round waits for the next,
    so of two exemplars that vouch for each other across routes (one of them misplaced) only the
    clearer misfit is taken out, and the other is judged again without it."""
    n = len(V)
    active = np.ones(n, bool)
    taken: list[int] = []
    rows = np.arange(n)
    while len(rows):
        own, other, _, support = _gaps(V, owners, rows, active)
        gap = other - own
        hit = np.isfinite(own) & np.isfinite(other) & (gap >= cut)
        rows, gap, support = rows[hit], gap[hit], support[hit]
        now: set[int] = set()
        for k in np.argsort(-gap, kind="stable"):
            if int(support[k]) not in now:
                now.add(int(rows[k]))
        if not now:
            break
        taken += sorted(now)
        active[sorted(now)] = False
        rows = np.array([r for r in rows if r not in now], dtype=np.int64)
    return np.array(sorted(taken), dtype=np.int64)


def misfits(
    ex: list[Exemplar], names: list[str], owners: np.ndarray, V: np.ndarray, B: np.ndarray, cuts: Cuts
) -> tuple[Misfit, ...]:
    """Misplaced and generic exemplars (see :mod:`routecore.doctor.doctor`)."""
    n, R = len(ex), len(names)
    S = route_scores(V, V, owners, R, "max", exclude=np.arange(n))
    own = S[np.arange(n), owners]
    So = S.copy()
    So[np.arange(n), owners] = -np.inf
    other, nearest = So.max(axis=1), So.argmax(axis=1)
    bg = (V @ B.T).max(axis=1) if len(B) else np.full(n, -np.inf, np.float32)
    suspect = np.zeros(n, bool)
    suspect[_suspects(V, owners, cuts.misfit_gap)] = True
    # Scored again without the suspects: a moved exemplar's true route is clean again, and
    # generic exemplars (which sit near one another) no longer vouch for each other.
    keep = ~suspect
    S2 = (
        route_scores(V[suspect], V[keep], owners[keep], R, "max")
        if suspect.any() and keep.any()
        else np.zeros((0, R))
    )
    out: list[Misfit] = []
    for j, i in enumerate(np.flatnonzero(suspect)):
        s = np.where(np.isfinite(S2[j]), S2[j], -np.inf)
        a = int(np.argmax(s))
        if a == owners[i]:
            continue  # its own route wins once the other suspects are gone
        p1 = float(1.0 / np.exp((s - s[a]) / cuts.temperature).sum())
        near = tuple(names[r] for r in np.argsort(-s)[:3] if s[r] >= s[a] - cuts.misfit_gap)
        placed = p1 >= PLACED and s[a] >= cuts.placed
        out.append(
            _misfit(
                ex[i],
                "misplaced" if placed else "generic",
                own[i],
                names[nearest[i]],
                other[i],
                cuts,
                bg[i],
                names[a] if placed else None,
                near,
            )
        )
    best = S.max(axis=1)
    # Nearer the background than any route, and no paraphrase in its own route (a catch-all route's
    # chit-chat exemplars vouch for one another, and stay).
    for i in np.flatnonzero(
        ~suspect & np.isfinite(best) & (bg - best >= cuts.misfit_gap) & ~(own >= cuts.match)
    ):
        out.append(
            _misfit(ex[i], "generic", own[i], names[nearest[i]], other[i], cuts, bg[i], None, ("background",))
        )
    return tuple(out)


def _misfit(
    e: Exemplar,
    kind: str,
    own: float,
    route: str,
    other: float,
    cuts: Cuts,
    bg: float,
    to: str | None,
    near: tuple[str, ...],
) -> Misfit:
    gap = (other - own) / cuts.temperature
    return Misfit(
        e,
        kind,
        round(float(own), 4),
        route,
        round(float(other), 4),
        round(float(gap), 2),
        round(float(bg), 4),
        to,
        near,
    )


def duplicates(
    ex: list[Exemplar], owners: np.ndarray, V: np.ndarray, cut: float, gone: set[Exemplar]
) -> tuple[Duplicate, ...]:
    out = []
    for r in np.unique(owners):
        rows = [i for i in np.flatnonzero(owners == r) if ex[i] not in gone]
        rows.sort(key=lambda i: ex[i].index >= 0)  # the description first: it is kept
        G = V[rows] @ V[rows].T
        kept: list[int] = []
        for a, i in enumerate(rows):
            for b in kept:
                if normalised(ex[i].text) == normalised(ex[rows[b]].text) or G[a, b] >= cut:
                    if ex[i].index >= 0:
                        out.append(Duplicate(ex[rows[b]], ex[i], round(float(G[a, b]), 4)))
                    break
            else:
                kept.append(a)
    return tuple(out)


def confused_pairs(
    ex: list[Exemplar], names: list[str], owners: np.ndarray, V: np.ndarray, skip: set[Exemplar]
) -> tuple[ConfusedPair, ...]:
    keep = np.array([e not in skip for e in ex])
    idx = np.flatnonzero(keep)
    R = len(names)
    if len(idx) < 2:
        return ()
    ow = owners[idx]
    S = route_scores(V[idx], V[idx], ow, R, "max", exclude=np.arange(len(idx)))
    own = S[np.arange(len(idx)), ow]
    S[np.arange(len(idx)), ow] = -np.inf
    other, nearest = S.max(axis=1), S.argmax(axis=1)
    hits: dict[tuple[int, int], list[int]] = {}
    for j in np.flatnonzero(np.isfinite(own) & np.isfinite(other) & (other >= own)):
        hits.setdefault((int(ow[j]), int(nearest[j])), []).append(int(j))
    C = np.stack(
        [V[idx][ow == r].mean(axis=0) if (ow == r).any() else np.zeros(V.shape[1]) for r in range(R)]
    )
    C /= np.maximum(np.linalg.norm(C, axis=1, keepdims=True), 1e-12)
    counts = np.bincount(ow, minlength=R)
    out = []
    for a, b in {tuple(sorted(k)) for k in hits}:
        ab, ba = hits.get((a, b), []), hits.get((b, a), [])
        if len(ab) + len(ba) < MIN_CONFUSIONS:
            continue
        rows = sorted(ab + ba, key=lambda j: own[j] - other[j])[:EXAMPLES]
        examples = tuple(
            PairExample(ex[idx[j]].text, names[ow[j]], round(float(own[j]), 4), round(float(other[j]), 4))
            for j in rows
        )
        out.append(
            ConfusedPair(
                names[a],
                names[b],
                len(ab),
                len(ba),
                round((len(ab) + len(ba)) / int(counts[a] + counts[b]), 4),
                round(float(C[a] @ C[b]), 4),
                examples,
            )
        )
    return tuple(sorted(out, key=lambda p: (-p.share, -(p.a_to_b + p.b_to_a), p.a, p.b)))
