"""A linear head trained on the routes' own exemplars, calibrated zero-label
(``Policy(head="exemplars")``; issue 12).

Softmax regression over the exemplar embeddings (:class:`LinearHead`), with the
bundled background queries in the exemplars' own languages as one more class,
out of scope (queries in other languages would teach it that a language is out
of scope). No validation split is needed: the exemplars are split into
``folds`` parts, a row and its nearest same-route near-copy always in one part,
a head trained on the others scores each part, and those out-of-fold
probabilities fit

- the tiers (``high``/``margin`` at ``high_precision``, ``medium`` at
  ``route_precision``, the previous-route pair at ``previous_precision``), read
  on the head's in-scope probabilities as the router reads them, with and without
  the lexical score's gain;
- the head's out-of-scope cut (``LinearHead.threshold``) on its best in-scope
  probability: it keeps :data:`IN_SCOPE_KEPT` of the out-of-fold exemplars the
  head gets right (the background class rejects on its own when it wins);
- per language the exemplars do not cover, that cut and the tiers again, from
  how the head's probabilities of the parallel set's sentences change from a
  covered language to that one (:func:`routecore.calibrate.head_languages.language_fits`).

The head that serves is then trained on every row. It costs ``folds + 1``
trainings at build time (seconds for 10k exemplars; a bundle keeps it), and
O(routes x dim) per query.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np

from routecore.calibrate.calibration_record import Calibration
from routecore.calibrate.fits import Targets, fit_medium, fit_tiers, softmax, top2_gold
from routecore.calibrate.held_out import near_duplicate_cut
from routecore.calibrate.linear_head import LinearHead
from routecore.calibrate.stats import HeadStats, TierCuts
from routecore.core.progress import Progress, ProgressArg

#: The label of the background class; it cannot clash with a route name the head knows.
OOS_CLASS = "\x00out-of-scope"
#: Parts the exemplars are split into for the out-of-fold probabilities.
FOLDS = 4
#: The head's out-of-scope cut keeps this share of the out-of-fold exemplars it gets right.
#: A cut between those rows and the background's (Youden's J, as for ``min_score``) sat
#: far higher: the background class is learned, so held-out background rows score low,
#: and it declined 30-48 % of MASSIVE's in-scope test queries (BENCHMARKS.md).
IN_SCOPE_KEPT = 0.95
#: Fewer out-of-fold rows than this and the tiers stay the cosine calibration's.
MIN_ROWS = 20


@dataclass(frozen=True)
class HeadFit:
    """The head and the calibration fields its out-of-fold probabilities set."""

    head: LinearHead
    fields: TierCuts
    stats: HeadStats
    #: The out-of-fold in-scope rows the tiers were fitted on: log-probabilities and routes.
    oof: tuple[np.ndarray, np.ndarray] | None = None


@dataclass(frozen=True)
class HeadLanguage:
    """The head's own numbers for queries in a language the exemplars do not cover
    (:func:`routecore.calibrate.head_languages.language_fits`)."""

    #: Its out-of-scope cut, moved by the median log-odds shift of the parallel sentences.
    threshold: float
    #: Tiers and ``medium`` fitted on out-of-fold rows rescored as its queries (none: no folds).
    cuts: TierCuts = TierCuts()
    #: The log-probabilities' transfer from a covered language (``languages.transfer``).
    slope: float | None = None
    noise: float | None = None


def in_scope_probs(head: LinearHead, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(in-scope probabilities, out-of-scope probability, in-scope classes) of ``X``."""
    P = head.proba(X)
    keep = [i for i, c in enumerate(head.classes) if c != head.oos_class]
    oos = (
        P[:, head.classes.index(head.oos_class)]
        if head.oos_class in head.classes
        else np.zeros(len(P), P.dtype)
    )
    return P[:, keep], oos, [head.classes[i] for i in keep]


def _near_copy_groups(V: np.ndarray, owners: np.ndarray, chunk: int = 512) -> np.ndarray:
    """A group id per row: a row and its nearest same-route exemplar share one when they
    are near-copies (cosine at least the corpus-wide NEAR_DUPLICATE_QUANTILE of
    same-route pairs), so that no row is scored out of fold by a head that saw its copy.
    Cost: one Gram matrix per route, in row chunks."""
    if len(V) < 2:
        return np.arange(len(V))
    cut = float(near_duplicate_cut(V, owners, np.arange(len(V)))[0])
    parent = np.arange(len(V))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = int(parent[i])
        return i

    for o in np.unique(owners):
        rows = np.flatnonzero(owners == o)
        if len(rows) < 2:
            continue
        for a in range(0, len(rows), chunk):
            C = V[rows[a : a + chunk]] @ V[rows].T
            C[np.arange(len(C)), np.arange(a, a + len(C))] = -np.inf  # not itself
            nn = C.argmax(axis=1)
            for i in np.flatnonzero(C[np.arange(len(C)), nn] >= cut).tolist():
                x, y = find(int(rows[a + i])), find(int(rows[nn[i]]))
                if x != y:
                    parent[max(x, y)] = min(x, y)
    return np.array([find(i) for i in range(len(V))])


def _folds(owners: np.ndarray, k: int, seed: int, groups: np.ndarray | None = None) -> np.ndarray:
    """A fold per row, stratified by owner, each of ``groups`` in one fold; -1 (always
    trained on) for the rows of an owner with a single group."""
    rng = np.random.default_rng(seed)
    out = np.full(len(owners), -1, np.int64)
    groups = np.arange(len(owners)) if groups is None else groups
    for o in np.unique(owners):
        rows = np.flatnonzero(owners == o)
        ids, inv = np.unique(groups[rows], return_inverse=True)
        if len(ids) >= 2:
            out[rows] = ((rng.permutation(len(ids)) + int(rng.integers(k))) % k)[inv]
    return out


def fit_exemplar_head(
    V: np.ndarray,
    owners: np.ndarray,
    names: list[str],
    background: np.ndarray,
    base: Calibration,
    *,
    targets: Targets = Targets(),
    folds: int = FOLDS,
    epochs: int = 300,
    seed: int = 0,
    gain: np.ndarray | None = None,
    progress: ProgressArg = None,
) -> HeadFit:
    """Train the head on ``V`` (rows of route ``owners``, routes ``names``) plus the
    ``background`` rows that look like no exemplar, and fit its cuts out of fold.

    A background row whose best exemplar cosine reaches ``base.match`` (the typical
    score of a paraphrase under this encoder) may be in scope for these routes: it
    is left out of the out-of-scope class. ``gain`` [rows, routes]: what each row's
    routes gain before the decision (the lexical score, left out of its own row),
    over the temperature; the tiers must then hold with it and without it, as the
    cosine calibration's do."""
    owners = np.asarray(owners, dtype=np.int64)
    labels = np.array(names, dtype=object)[owners]
    B = out_of_scope_rows(background, V, base, owners)
    bar = Progress(folds + 1, "training the exemplar head", progress) if progress else None

    def train(rows: np.ndarray, bg: np.ndarray) -> LinearHead:  # bg: a mask of background rows
        h = _train(V[rows], labels[rows], B[bg], epochs, seed)
        if bar is not None:
            bar.advance(1)
        return h

    groups = _near_copy_groups(V, owners)
    fold, bfold = (
        _folds(owners, folds, seed, groups),
        np.random.default_rng(seed + 1).permutation(len(B)) % folds,
    )
    held = np.flatnonzero(fold >= 0)
    fit_cuts = len(held) >= MIN_ROWS and len(names) >= 2
    # Out of fold, per row: the in-scope probabilities (routes in ``names`` order), the best
    # of them as the head gives it (the scope reads that), and whether the background class won.
    Q = np.zeros((len(V), len(names)))
    raw1, oos_first = np.zeros(len(V)), np.zeros(len(V), bool)
    bg_raw, bg_first = np.zeros(len(B)), np.zeros(len(B), bool)
    if fit_cuts:
        for k in range(folds):
            h = train(np.flatnonzero(fold != k), bfold != k)
            rows = np.flatnonzero(fold == k)
            P, o, cls = in_scope_probs(h, V[rows])
            P = P[:, [cls.index(n) for n in names]]  # every route trains in every fold (stratified)
            raw1[rows], oos_first[rows] = P.max(axis=1), o >= P.max(axis=1)
            Q[rows] = P / P.sum(axis=1, keepdims=True)  # the router renormalises the in-scope probabilities
            bq, bo, _ = in_scope_probs(h, B[bfold == k])
            bg_raw[bfold == k], bg_first[bfold == k] = bq.max(axis=1), bo >= bq.max(axis=1)
    # Without out-of-fold cuts the head is not used (routecore.routers.assembly): no need to train it.
    head = (
        train(np.arange(len(V)), np.ones(len(B), bool))
        if fit_cuts
        else LinearHead(np.zeros((V.shape[1], 0), np.float32), np.zeros(0, np.float32), [])
    )
    stats: dict[str, Any] = {
        "rows": int(len(V)),
        "groups": int(len(np.unique(groups))),
        "background": int(len(B)),
        "background_dropped": int(len(background) - len(B)),
        "folds": folds,
        "epochs": epochs,
    }
    fields: dict[str, Any] = {}  # TierCuts' fields
    if fit_cuts:
        p1, mg, right = top2_gold(Q[held], owners[held])
        # Out of scope when the background class wins or the best in-scope probability is under
        # the cut, which keeps IN_SCOPE_KEPT of the out-of-fold rows the head gets right.
        kept = right & ~oos_first[held]
        head.threshold = float(np.quantile(raw1[held][kept], 1.0 - IN_SCOPE_KEPT)) if kept.any() else 0.0
        scoped = (raw1[held] >= head.threshold) & ~oos_first[held]
        oof = (np.log(np.maximum(Q[held][scoped], 1e-30)), owners[held][scoped])
        t1, tmg, tright = p1[scoped], mg[scoped], right[scoped]
        if gain is not None and np.any(gain[held]):
            g1, gmg, gright = top2_gold(softmax(oof[0] + gain[held][scoped], 1.0), oof[1])
            t1, tmg, tright = (
                np.concatenate([t1, g1]),
                np.concatenate([tmg, gmg]),
                np.concatenate([tright, gright]),
            )
            stats["oof_top1_with_gain"] = float(gright.mean()) if len(gright) else None
        tiers = fit_tiers(t1, tmg, tright, targets.high_precision)
        prev = fit_tiers(t1, tmg, tright, targets.previous_precision) if tiers else None
        medium = fit_medium(t1, tright, targets.route_precision)
        if tiers is not None:
            fields.update(high=tiers[0], margin=tiers[1])
        if prev is not None:
            fields.update(previous_high=prev[0], previous_margin=prev[1])
        if medium is not None:
            fields["medium"] = medium
        routed = p1[scoped] >= fields.get("medium", base.medium)
        stats.update(
            oof_top1=float(right.mean()),
            oof_kept=float(scoped.mean()),
            oof_routed=float(routed.sum() / len(held)),
            oof_routed_precision=float(right[scoped][routed].mean()) if routed.any() else None,
            background_rejected=float(((bg_raw < head.threshold) | bg_first).mean()) if len(B) else None,
        )
    else:
        stats["cuts_fallback"] = True
        oof = None
    stats["threshold"] = head.threshold
    return HeadFit(head, TierCuts(**fields), HeadStats(**stats), oof)


def prior_fit(
    head: LinearHead, prior: Any, base: Calibration, rows: int, background: int, kept: int
) -> HeadFit:
    """The :class:`HeadFit` of a head whose cuts come from a model's measured prior
    (:class:`routecore.calibrate.prior.DecisionPrior`) at the config's separability (``base.stats``)
    instead of out-of-fold probabilities; the head's scope cut is the prior's ``scope``. ``rows``
    exemplars trained it, with ``kept`` of ``background`` rows as its out-of-scope class."""
    top1, per_route, routes = prior.config_of(base.stats)
    cuts = prior.cuts(top1, per_route, routes)
    head.threshold = prior.scope
    stats = HeadStats(
        rows=int(rows),
        background=int(kept),
        background_dropped=int(background - kept),
        threshold=head.threshold,
        prior=prior.source,
        route_precision=prior.goal,
        top1_dense=top1,
        exemplars_per_route=per_route,
    )
    return HeadFit(head, cuts, stats, None)


def out_of_scope_rows(
    background: np.ndarray, V: np.ndarray, base: Calibration, owners: np.ndarray
) -> np.ndarray:
    """The background rows that look like no route (the head's out-of-scope class). A row is
    dropped when it is as close to an exemplar as a paraphrase is (``base.match``, the typical
    score of one under this encoder), or as that exemplar's nearest same-route exemplar is:
    a broad route (say, general-knowledge questions) covers background rows a paraphrase cut
    keeps, and its in-scope queries were declined (issue 34 §1)."""
    if not len(background) or not len(V):
        return background
    cut = np.full(len(V), base.match, np.float32)
    owners = np.asarray(owners, dtype=np.int64)
    for o in np.unique(owners):
        rows = np.flatnonzero(owners == o)
        if len(rows) < 2:
            continue
        G = V[rows] @ V[rows].T
        np.fill_diagonal(G, -np.inf)
        cut[rows] = np.minimum(G.max(axis=1), base.match)
    keep = np.ones(len(background), bool)
    for a in range(0, len(V), 4096):  # [background, exemplars] in column blocks
        keep &= ~((background @ V[a : a + 4096].T) >= cut[a : a + 4096]).any(axis=1)
    return background[keep]


def _train(X: np.ndarray, labels: np.ndarray, B: np.ndarray, epochs: int, seed: int) -> LinearHead:
    """A head over the rows ``X`` (routes ``labels``) and the out-of-scope rows ``B``."""
    return LinearHead.fit(
        np.vstack([X, B]), list(labels) + [OOS_CLASS] * len(B), oos_label=OOS_CLASS, epochs=epochs, seed=seed
    )


def serving_head(
    V: np.ndarray,
    owners: np.ndarray,
    names: list[str],
    background: np.ndarray,
    base: Calibration,
    threshold: float,
    *,
    epochs: int = 300,
    seed: int = 0,
    oos: np.ndarray | None = None,
) -> LinearHead:
    """Only the head that serves, trained as :func:`fit_exemplar_head` trains it, with the
    out-of-scope cut ``threshold`` kept from an earlier fit (a live update with
    ``recalibrate=False``: one training instead of ``FOLDS + 1``, the cuts unchanged).
    ``oos``: :func:`out_of_scope_rows` of ``background``, when the caller has them already."""
    labels = np.array(names, dtype=object)[np.asarray(owners, dtype=np.int64)]
    if oos is None:
        oos = out_of_scope_rows(background, V, base, owners)
    head = _train(V, labels, oos, epochs, seed)
    head.threshold = threshold
    return head


def with_head(
    base: Calibration, fit: HeadFit, per_language: Mapping[str, HeadLanguage] | None = None
) -> Calibration:
    """``base`` with the head's tiers and the cosine cut off (the head's decides the
    scope). Languages lose their cosine numbers (the tool floor's offset stays); those
    in ``per_language`` (:func:`~routecore.calibrate.head_languages.language_fits`) get the head's, with an
    ``offset`` of 0 so that their queries are decided under them."""
    langs = {k: v.without_cosine() for k, v in base.languages.items()}
    for k, h in (per_language or {}).items():
        own = base.languages[k]
        langs[k] = replace(
            langs[k].with_tiers(h.cuts),
            head_threshold=h.threshold,
            head_slope=h.slope,
            head_noise=h.noise,
            offset=0.0,
            support_offset=own.offset if own.offset is not None else 0.0,
        )
    return replace(
        base,
        **fit.fields.changes(),
        min_score=0.0,
        per_route={},
        languages=langs,
        stats=replace(base.stats, head=fit.stats),
    )
