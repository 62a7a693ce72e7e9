"""Calibration: the decision layer's numbers fitted to the encoder in use.

Cosine scores live on a different scale for every encoder (MiniLM spreads them
over 0.1–0.9, multilingual-e5 packs them into 0.75–0.9), so no threshold of the
policy is a constant. A :class:`Calibration` holds, for one router and one
encoder:

- ``temperature`` of the route softmax, fitted by likelihood;
- the tiers ``high``/``margin`` (right on ``high_precision`` of held-out
  exemplars) and ``medium`` (routed decisions right on ``route_precision``),
  plus their previous-route variants (``previous_precision``);
- ``min_score``, the out-of-scope cut, between in-scope scores and a bundled
  background set of generic queries in several languages;
- ``tool_floor``, under which no tool enters a belt;
- ``scale``, the unit of every gap rule (three-way tie, bias rules, collision
  gap): the fitted temperature, so a gap of one ``scale`` is a factor *e*
  between two routes' probabilities on any encoder;
- ``match``/``unrelated``: the typical best score of a paraphrase and of an
  unrelated query; anti-pattern and lesson similarities are placed between them.

Zero-label calibration (:func:`zero_label`) needs no labelled data: each
sampled exemplar is held out and scored against every route's *other*
exemplars (leave-one-out: :mod:`routecore.calibrate.held_out`), which gives labelled
in-scope scores for free. The out-of-scope cut and the lexical weight read the
same rows with their route's near-copies left out too (a real query has none);
the high tier promises more (right on 95 % of queries that paraphrase no
exemplar), so its rows lose their nearest same-route exemplars.
``routecore fit`` replaces it with figures from a validation split
(``source="fitted"``); explicit policy values always win over zero-label ones.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

import numpy as np

from routecore.calibrate.calibration_record import SOURCES as SOURCES
from routecore.calibrate.calibration_record import Calibration as Calibration
from routecore.calibrate.fits import TEMPERATURE_FLOOR
from routecore.calibrate.fits import Targets as Targets
from routecore.calibrate.fits import fit_medium as fit_medium
from routecore.calibrate.fits import fit_min_score as fit_min_score
from routecore.calibrate.fits import fit_temperature as fit_temperature
from routecore.calibrate.fits import fit_tiers as fit_tiers
from routecore.calibrate.fits import softmax as softmax
from routecore.calibrate.fits import top2 as top2
from routecore.calibrate.fits import top2_correct as top2_correct
from routecore.calibrate.fits import wilson_lower as wilson_lower
from routecore.calibrate.held_out import LEAVE_OUT_NEAREST as LEAVE_OUT_NEAREST
from routecore.calibrate.held_out import held_out_max as held_out_max
from routecore.calibrate.held_out import held_out_rows as held_out_rows
from routecore.calibrate.held_out import near_duplicate_cut as near_duplicate_cut
from routecore.calibrate.held_out import nearest_same as nearest_same
from routecore.calibrate.held_out import route_scores as route_scores
from routecore.calibrate.language_fit import LanguageFit
from routecore.calibrate.languages import fit_languages, language_fields, offsets
from routecore.calibrate.stats import (
    TEMPERATURE_CONSTANT,
    TEMPERATURE_FROM_BACKGROUND,
    CalibrationStats,
    TierCuts,
)

# Re-exported (``X as X``: an explicit re-export for type checkers).
from routecore.core.background import BACKGROUND_FILE as BACKGROUND_FILE
from routecore.core.background import background_languages as background_languages
from routecore.core.background import background_texts as background_texts
from routecore.core.background import background_vectors as background_vectors
from routecore.core.background import parallel_rows as parallel_rows
from routecore.core.background import parallel_vectors as parallel_vectors

#: Fewer held-out rows than this and the fits fall back to probability-space defaults.
MIN_ROWS = 20
#: Without held-out rows, a table of at least this many labels takes its temperature from the
#: background: half the median gap between an unrelated query's best and this-th best label.
SPREAD_LABELS = 10


def zero_label(
    route_vecs: np.ndarray,
    route_owners: Sequence[int],
    n_routes: int,
    background: np.ndarray,
    *,
    aggregation: str = "max",
    top_n: int = 3,
    tool_vecs: np.ndarray | None = None,
    tool_owners: Sequence[int] = (),
    n_tools: int = 0,
    targets: Targets = Targets(),
    sample: int = 1500,
    seed: int = 0,
    lexical: Any = None,
    tool_lexical: Any = None,
    leave_out_nearest: int = LEAVE_OUT_NEAREST,
    background_langs: Sequence[str] | None = None,
    parallel: tuple[np.ndarray, Sequence[tuple[int, str, str]]] | None = None,
) -> Calibration:
    """Fit a :class:`Calibration` from the exemplars alone (leave-one-out) and the
    background vectors. Routes come first; a router with tools only calibrates
    on the tools' exemplars (descriptions and success examples).

    ``background_langs``: the language of each background row, and ``parallel``: the
    parallel set's vectors and rows; with them, queries in a language the exemplars do
    not cover get their own cut, temperature and tiers (:mod:`routecore.calibrate.languages`).

    ``lexical`` / ``tool_lexical``: ``(LexicalTable, texts)`` of the routes' / tools'
    exemplars; their weight is fitted on the held-out rows (:mod:`routecore.core.lexical`)
    and every later fit sees the fused scores."""
    stats: dict[str, Any] = {"background": int(len(background))}  # CalibrationStats' fields
    lexical_stats: dict[str, float] = {}
    if n_routes and len(route_vecs):
        V, owners, R = route_vecs, np.asarray(route_owners, dtype=np.int64), n_routes
    else:
        V, owners, R = (
            tool_vecs if tool_vecs is not None else np.zeros((0, background.shape[1]), np.float32),
            np.asarray(tool_owners, dtype=np.int64),
            n_tools,
        )
        aggregation = "max"
    rows = held_out_rows(owners, R, sample, seed) if len(V) else np.zeros(0, np.int64)
    # `S`: plain leave-one-out, for the temperature and `medium`. Leaving a row's
    # near-copies out of its own route only (`S_dup`) leaves another route's near-copy
    # as its best match: on templated sets such rows come out confidently wrong, and
    # no `medium` cut reached its target (MASSIVE). `S_dup` fits the lexical weight (how
    # much shared words help once the paraphrase is gone) and the scope cut. The high tier
    # promises >= 95 % on queries that paraphrase no exemplar: its rows are scored
    # without their nearest same-route exemplar(s) (`S_tier`).
    dup = tier_cut = None
    if len(rows) and aggregation == "max":
        dup = near_duplicate_cut(V, owners, rows)
        S, S_dup, S_tier, tier_cut = held_out_max(V, owners, R, rows, dup, leave_out_nearest)
    else:
        S = (
            route_scores(V[rows], V, owners, R, aggregation, top_n, exclude=rows)
            if len(rows)
            else np.zeros((0, R), np.float32)
        )
        S_dup = S_tier = S
    gold = owners[rows]
    Bm = (
        route_scores(background, V, owners, R, aggregation, top_n)
        if len(V) and len(background)
        else np.zeros((0, R), np.float32)
    )
    lex = lexical if n_routes and len(route_vecs) else tool_lexical
    lex_bg = lex[0].scores_batch(background_texts()[0]) if lex is not None and len(Bm) else None
    w = 0.0  # the lexical weight of the calibrated table (routes, or tools for a tools-only router)
    S_dense, S_dup_dense, S_tier_dense = S, S_dup, S_tier
    fit_lexical = lex is not None and R >= 2 and len(rows) >= MIN_ROWS
    dense_temperature = None
    if fit_lexical:
        from routecore.core.lexical import fit_table

        dense_temperature = fit_temperature(S, gold)  # the unit of the weight grid
        w, (S, S_dup, S_tier), lstats = fit_table(
            lex[0],
            lex[1],
            V,
            owners,
            rows,
            (S_dup, dup),
            [(S, None), (S_dup, dup), (S_tier, tier_cut)],
            dense_temperature,
        )
        lexical_stats = lstats
    # The lexical score picks the label; the out-of-scope cut and the match/unrelated
    # scale read that label's cosine, which means the same in every language.
    B = _best_background(Bm, lex_bg, w, cosine=True)
    stats.update(held_out=int(len(rows)), routes=int(R))
    # The scope cut and the match scale read in-scope rows without their near-copies, as a real query
    # has none.
    scope_arg = S_dup.argmax(axis=1) if len(rows) else np.zeros(0, np.int64)
    best = S_dup_dense[np.arange(len(rows)), scope_arg] if len(rows) else np.zeros(0)
    own = S_dup_dense[np.arange(len(rows)), gold] if len(rows) else np.zeros(0)
    own, B = own[np.isfinite(own)], B[np.isfinite(B)]
    unrelated = float(np.median(B)) if len(B) else float(np.median(best)) - 0.1 if len(best) else 0.0
    match = float(np.median(own)) if len(own) else unrelated + 0.1
    if not len(own):
        stats["match_fallback"] = "unrelated + 0.1: no exemplar could be held out (a constant, not a fit)"
    if R >= 2 and len(rows) >= MIN_ROWS:
        # The cosines' temperature, with or without a lexical weight: a query whose words the
        # exemplars do not hold (another language, a paraphrase) is scored on cosines alone.
        temperature = dense_temperature if dense_temperature is not None else fit_temperature(S, gold)
        if temperature <= TEMPERATURE_FLOOR and S_tier_dense is not S_dense:
            # Separable held-out rows (each has a near-copy of its own route) push the fit to the grid's
            # floor, and every probability to 1: fit it on the rows that lose their nearest same-route
            # exemplars (those the high tier is fitted on), as a query that paraphrases no exemplar.
            temperature = fit_temperature(S_tier_dense, gold)
            stats["temperature_from"] = (
                "rows without their nearest exemplars (the plain fit was at the grid's floor)"
            )
    elif R >= SPREAD_LABELS and len(Bm):
        # Nothing to hold out (one description per tool): an unrelated query spreads its
        # probability over its SPREAD_LABELS best labels, which span two temperatures.
        top = -np.sort(-np.where(np.isfinite(Bm), Bm, -1.0), axis=1)
        temperature = float(max(np.median(top[:, 0] - top[:, SPREAD_LABELS - 1]) / 2.0, 1e-3))
        stats["temperature_fallback"] = TEMPERATURE_FROM_BACKGROUND
    else:
        # Too few held-out rows and labels for either: a tenth of the spread
        # between a paraphrase and an unrelated best match.
        temperature = float(max(abs(match - unrelated) / 10.0, 1e-3))
        stats["temperature_fallback"] = TEMPERATURE_CONSTANT
    if lex is not None and not fit_lexical:
        # Nothing to hold out (one exemplar per tool, a tiny config): the lexical pass
        # may move a label by LEXICAL_PRIOR_SCALES scales, until `fit` says otherwise.
        from routecore.core.lexical import LEXICAL_PRIOR_SCALES

        w = LEXICAL_PRIOR_SCALES * temperature
        B = _best_background(Bm, lex_bg, w, cosine=True)
        stats["lexical_weight_prior"] = True
    # The routes' weight serves the tools too (their rows are the routes' held-out ones).
    lexical_weight = w if lex is lexical else 0.0
    tool_lexical_weight = w if tool_lexical is not None else 0.0
    p1, mg, correct = top2_correct(S, gold, temperature, R)
    t1, tmg, tcorrect = top2_correct(S_tier, gold, temperature, R)
    m1, mcorrect = p1, correct
    if w and S is not S_dense:
        # The tiers must hold for queries the lexical pass helps and for those it cannot
        # (coverage 0): they are fitted on the held-out rows with and without it.
        d1, _, dcorrect = top2_correct(S_dense, gold, temperature, R)
        dt1, dtmg, dtcorrect = top2_correct(S_tier_dense, gold, temperature, R)
        m1, mcorrect = np.concatenate([p1, d1]), np.concatenate([correct, dcorrect])
        t1, tmg, tcorrect = (
            np.concatenate([t1, dt1]),
            np.concatenate([tmg, dtmg]),
            np.concatenate([tcorrect, dtcorrect]),
        )
    tiers = fit_tiers(t1, tmg, tcorrect, targets.high_precision) if R >= 2 and len(rows) >= MIN_ROWS else None
    prev = fit_tiers(t1, tmg, tcorrect, targets.previous_precision) if tiers else None
    medium = fit_medium(m1, mcorrect, targets.route_precision) if R >= 2 and len(rows) >= MIN_ROWS else None
    if tiers is None:
        stats["tiers_fallback"] = True
    high, margin = tiers or (0.85, 0.15)
    previous_high, previous_margin = prev or (min(high, 0.70), min(margin, 0.10))
    medium = medium if medium is not None else 0.50  # a cut on p1 alone, independent of the (p1, margin) pair
    min_score = fit_min_score(best[scope_arg == gold] if len(best) else best, B)
    # How often an exemplar's nearest other exemplars are of its own route (cosines alone): how
    # separable the routes are, which sets the decision prior's cut (routecore.calibrate.prior).
    stats["top1_dense"] = float((S_dense.argmax(axis=1) == gold).mean()) if len(rows) else None
    stats["exemplars_per_route"] = float(len(V) / max(R, 1))
    stats.update(
        top1_accuracy=float(correct.mean()) if len(rows) else None,
        high_coverage=float(((t1 >= high) & (tmg >= margin)).mean()) if len(rows) else None,
        routed_coverage=float((p1 >= medium).mean()) if len(rows) else None,
        background_rejected=float((B < min_score).mean()) if len(B) else None,
        inscope_kept=float((best >= min_score).mean()) if len(best) else None,
    )
    tool_floor = None
    if tool_vecs is not None and len(tool_vecs) and len(background):
        if lex is tool_lexical and V is tool_vecs:  # a tools-only router: the background was scored above
            bt = _best_background(Bm, lex_bg, w)
        else:
            tool_bg = (
                tool_lexical[0].scores_batch(background_texts()[0])
                if tool_lexical is not None and w
                else None
            )
            bt = _best_background(
                route_scores(background, tool_vecs, np.asarray(tool_owners, dtype=np.int64), n_tools),
                tool_bg,
                w,
            )
        tool_floor = float(np.quantile(bt, targets.tool_background_rejected))
        stats["tool_background_median"] = float(np.median(bt))
    languages: dict[str, LanguageFit] = {}
    if background_langs is not None and len(Bm):

        def refit(slope: float, noise: float) -> tuple[float, TierCuts]:  # the held-out rows, as L's
            return language_fields(slope, noise, S_dense, S_tier_dense, gold, R, targets, seed)

        P, prows = parallel if parallel is not None else (np.zeros((0, V.shape[1]), np.float32), ())
        PS = route_scores(P, V, owners, R, aggregation, top_n) if len(P) else np.zeros((0, R), np.float32)
        languages = fit_languages(
            V, background, background_langs, P, prows, PS, refit if R >= 2 and len(rows) >= MIN_ROWS else None
        )
        if (
            tool_vecs is not None and len(tool_vecs) and len(P)
        ):  # the tool floor's shift, on the tools' own table
            TS = route_scores(P, tool_vecs, np.asarray(tool_owners, dtype=np.int64), n_tools)
            for lang, off in offsets(tool_vecs, background, background_langs, prows, TS).items():
                if lang in languages:
                    languages[lang] = replace(languages[lang], tool_offset=round(off, 6))

    def clip(v: float, lo: float = 0.0) -> float:  # unnormalised vectors must not leave the cosine range
        return float(np.clip(v, lo, 1.0))

    return Calibration(
        "zero-label",
        temperature,
        high,
        margin,
        medium,
        previous_high,
        previous_margin,
        clip(min_score),
        temperature,
        clip(match, -1.0),
        clip(unrelated, -1.0),
        None if tool_floor is None else clip(tool_floor),
        lexical_weight=lexical_weight,
        tool_lexical_weight=tool_lexical_weight,
        languages=languages,
        stats=CalibrationStats(**stats, lexical=lexical_stats),
    )


def fallback_note(cal: Calibration | None) -> str | None:
    """A line for the decisions of a router whose zero-label fit fell back to constants (too
    few held-out rows, and no measured prior that applies: routecore.calibrate.prior), else None."""
    if cal is None or cal.source != "zero-label":
        return None
    st = cal.stats
    used = []
    if st.tiers_fallback:
        used.append(f"tiers high {cal.high:.2f} / margin {cal.margin:.2f} / medium {cal.medium:.2f}")
    if st.temperature_fallback == TEMPERATURE_CONSTANT:
        used.append(f"temperature {cal.temperature:.4f} ({TEMPERATURE_CONSTANT})")
    if not used:
        return None
    return (
        f"calibration fallback: {st.held_out} held-out exemplars (< {MIN_ROWS}) and no measured prior "
        f"that applies (a model's prior calibrates its exemplar head, which needs two routes or more), "
        f"so these are constants, not fits: " + "; ".join(used)
    )


def _best_background(
    dense: np.ndarray, lexical: np.ndarray | None, weight: float, cosine: bool = False
) -> np.ndarray:
    """Each row's best label score once ``weight`` x ``lexical`` is added to ``dense`` (with
    ``cosine``, that label's ``dense`` score: what the out-of-scope cut reads), non-finite
    ones dropped."""
    if not dense.size:
        return np.zeros(0)
    fused = dense + weight * lexical if weight and lexical is not None else dense
    best = dense[np.arange(len(dense)), fused.argmax(axis=1)] if cosine else fused.max(axis=1)
    finite: np.ndarray = best[np.isfinite(best)]
    return finite


def for_router(
    encoder: Any,
    policy: Any,
    route_vecs: np.ndarray,
    route_owners: Sequence[int],
    n_routes: int,
    tool_vecs: np.ndarray,
    tool_owners: Sequence[int],
    n_tools: int,
    lexical: Any = None,
    tool_lexical: Any = None,
) -> Calibration:
    """The zero-label calibration of a router's tables under ``policy``'s aggregation and targets."""
    targets = Targets.of(policy)
    return zero_label(
        route_vecs,
        route_owners,
        n_routes,
        background_vectors(encoder),
        aggregation=policy.aggregation,
        top_n=policy.top_n,
        tool_vecs=tool_vecs if n_tools else None,
        tool_owners=tool_owners,
        n_tools=n_tools,
        targets=targets,
        lexical=lexical,
        tool_lexical=tool_lexical,
        background_langs=background_languages(),
        parallel=(parallel_vectors(encoder), parallel_rows()),
    )
