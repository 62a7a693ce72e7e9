"""Building routers from a training split, fitting them on validation and
evaluating decisions (routes) or rankings (tools)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections import OrderedDict
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from routecore.calibrate.linear_head import LinearHead
from routecore.config.specs import RouteSpec, RouteThresholds
from routecore.core.lexical import fit_weight
from routecore.core.progress import Progress
from routecore.decide.figures import decision_figures, reliability
from routecore.decide.fitted import RouteFit
from routecore.decide.policy import Policy
from routecore.decide.tables import TableVectors, embed_texts
from routecore.errors import DatasetError
from routecore.evaluation import metrics as M
from routecore.evaluation.calibrate import fit, objective_many
from routecore.evaluation.datasets import Dataset
from routecore.evaluation.decisions import fit_head_tiers, fit_routed_cut
from routecore.evaluation.results import (
    CoveragePoint,
    LanguageScore,
    Latency,
    Prediction,
    RouteEval,
    Scores,
)
from routecore.routers.router import Router


def embed(
    encoder: Any, texts: Sequence[str], *, batch: int = 64, progress: bool = False, what: str = "embedding"
) -> np.ndarray:
    """Embeddings of ``texts``, cached on disk per model (``$ROUTECORE_HOME/embeddings``).

    The key holds an embedding version: "2" since int8 embeddings no longer depend
    on their batch (issue 12 §5), so files written before that are not reused.
    """
    from routecore.hub.models import home

    key = hashlib.sha256(("v2\x1e" + "\x1f".join(texts)).encode()).hexdigest()[:32]
    path = home() / "embeddings" / encoder.model_id.replace(":", "_") / f"{key}.npy"
    if path.is_file():
        cached: np.ndarray = np.load(path)
        return cached
    X = embed_texts(encoder, list(texts), batch, Progress(len(texts), what, progress))
    path.parent.mkdir(parents=True, exist_ok=True)
    # A unique temporary name, then a rename: concurrent runs never read half a file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".npy.tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, X)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return X


def routes_from_split(
    train: Dataset,
    *,
    shots: int | None = None,
    seed: int = 0,
    oos_label: str = "oos",
    descriptions: dict[str, str] | None = None,
) -> list[RouteSpec]:
    """One route per label: all its utterances, or a seeded sample of ``shots``."""
    by: "OrderedDict[str, list[str]]" = OrderedDict()
    for s in train.samples:
        if s.label != oos_label:
            by.setdefault(s.label, []).append(s.text)
    rng = np.random.default_rng(seed)
    routes = []
    for label in sorted(by):
        texts = by[label]
        if shots is not None and len(texts) > shots:
            texts = [texts[i] for i in sorted(rng.choice(len(texts), shots, replace=False))]
        routes.append(RouteSpec(label, tuple(texts), (descriptions or {}).get(label, "")))
    if not routes:
        raise DatasetError(f"{train.name}: no in-scope labels")
    return routes


def build_router(
    train: Dataset,
    encoder: Any,
    *,
    shots: int | None = None,
    seed: int = 0,
    oos_label: str = "oos",
    policy: Policy | None = None,
    head: bool | str = False,
    progress: bool = False,
) -> Router:
    """A router over ``train``'s labels. ``head``: ``True``, a linear head trained on the
    whole split (out-of-scope rows as a class) for ``fit`` to cut on validation;
    ``"exemplars"``, the zero-label exemplar head (``Policy(head="exemplars")``, the
    default of a router built from a config); ``False``, the cosine softmax
    (``head="off"``, what ``fit`` calibrates)."""
    routes = routes_from_split(train, shots=shots, seed=seed, oos_label=oos_label)
    policy = (policy or Policy()).with_overrides(head="exemplars" if head == "exemplars" else "off")
    head = head is True
    texts = [t for r in routes for t in r.exemplars()]
    vecs = embed(encoder, texts, progress=progress, what="embedding exemplars")
    lin = None
    if head:
        X = embed(encoder, [s.text for s in train.samples], progress=progress, what="embedding train")
        lin = LinearHead.fit(X, [s.label for s in train.samples], oos_label=oos_label)
    # The policy a user gets from a config (low tier -> LLM, or clarify without one), calibrated zero-label.
    return Router(
        routes,
        encoder=encoder,
        policy=policy,
        head=lin,
        progress=progress,
        vectors=TableVectors(routes=vecs),
    )


def raw_scores(router: Router, X: np.ndarray) -> np.ndarray:
    """Aggregated raw route scores [n, routes] (native scoring step per row), all exact."""
    p = router.policy
    return (
        np.stack([router.route_table.table.score(x, p, [], 0, exact_floor=-np.inf).raw for x in X])
        if len(X)
        else np.zeros((0, len(router.route_specs)))
    )


def fit_router(
    router: Router,
    val: Dataset,
    *,
    objective: str = "accuracy",
    coverage: float = 0.9,
    oos_label: str = "oos",
    progress: bool = False,
) -> RouteFit:
    """Fit thresholds, temperature and tiers on ``val`` and install them in the router's calibration;
    returns what was fitted (also left in ``router.fitted``, which its bundle saves)."""
    X = embed(router.encoder, [s.text for s in val.samples], progress=progress, what="embedding val")
    gold = [s.label for s in val.samples]
    names = [r.name for r in router.route_specs]
    S = S_dense = raw_scores(router, X)
    base = router.calibration
    lex_w, lex = (base.lexical_weight if base else 0.0), router.route_table.lexical
    if (
        lex is not None
        and router.spec_policy.lexical
        and router.spec_policy.lexical_weight is None
        and base is not None
    ):
        # The lexical weight is refitted on the in-scope validation rows, and every later fit sees
        # the fused scores.
        L = lex.scores_batch([s.text for s in val.samples])
        ins = [i for i, g in enumerate(gold) if g in names]
        lex_w, _ = fit_weight(
            S[ins], L[ins], np.array([names.index(gold[i]) for i in ins]), base.scale, gain_share=1.0
        )
        S = S + lex_w * L
    cut = (
        S_dense[np.arange(len(S)), S.argmax(axis=1)] if len(S) else None
    )  # the out-of-scope cut reads the cosine
    res = fit(S, gold, names, oos_label, objective=objective, coverage=coverage, cut_scores=cut)  # type: ignore[arg-type]
    per_route = {
        k: RouteThresholds(min_score=float(np.clip(v, 0.0, 1.0))) for k, v in res.per_route_min.items()
    }
    min_score = res.min_score
    if router.head is not None:
        router.head.threshold = _fit_head_threshold(
            router.head, X, gold, names, oos_label, objective, coverage
        )
        min_score, per_route = 0.0, {}
    if base is None:  # a manual policy: the fit still overrides what it fits
        from routecore.calibrate.calibration import background_vectors, zero_label

        base = zero_label(
            np.zeros((0, router.encoder.dim), np.float32), [], 0, background_vectors(router.encoder)
        )
    if router.head is None and oos_label not in gold:
        # Without out-of-scope rows, a fitted cut would sit at the lowest in-scope score (one
        # outlier): keep the zero-label cut, fitted against the background set.
        min_score, per_route = base.min_score, {}
    router.calibrate(
        replace(
            base,
            source="fitted",
            temperature=res.temperature,
            high=res.high,
            margin=res.margin,
            lexical_weight=lex_w,
            min_score=float(np.clip(min_score, 0.0, 1.0)),
            per_route=per_route,
        )
    )
    texts = [s.text for s in val.samples]
    # A head's probabilities are not the cosine softmax's that `res` fitted the tiers on.
    head_tiers = fit_head_tiers(router, X, texts, gold) if router.head is not None else {}
    # End to end: the routed cut that the router's own decisions (head included) need on
    # this split, and the figures of those decisions, which is what fit reports.
    decisions = fit_routed_cut(router, X, texts, gold)
    fitted = RouteFit(
        **{f.name: getattr(res, f.name) for f in fields(res)},
        head_threshold=router.head.threshold if router.head is not None else None,
        head_tiers=head_tiers,
        decisions=decisions,
    )
    router.fitted = fitted
    return fitted


def _fit_head_threshold(
    head: LinearHead,
    X: np.ndarray,
    gold: list[str],
    names: list[str],
    oos_label: str,
    objective: str,
    coverage: float,
) -> float:
    head.threshold = 0.0
    pred, conf = head.predict(X)
    idx = {n: i for i, n in enumerate(names)}
    R = len(names)
    g = np.array([idx.get(x, R) for x in gold])
    p0 = np.array([idx[x] if x is not None else R for x in pred])
    cands = np.unique(np.concatenate([[0.0], np.quantile(conf, np.linspace(0, 1, 200))]))
    P = np.where(conf[None, :] >= cands[:, None], p0[None, :], R)
    vals = objective_many(P, g[None, :], objective, R + 1, P != R, coverage)
    return float(cands[int(np.argmax(vals))])


def check_labels(router: Router, data: Dataset, oos_label: str) -> None:
    known = {r.name for r in router.route_specs}
    for s in data.samples:
        if s.label != oos_label and s.label not in known:
            raise DatasetError(f"{data.name}:{s.line}: label {s.label!r} is not a route of this router")


def evaluate_routes(
    router: Router, data: Dataset, *, oos_label: str = "oos", progress: bool = False
) -> RouteEval:
    """Route every query of ``data`` (its previous route too, when a row names one of the router's
    routes) and measure the decisions against the labels (``oos_label``: should be declined)."""
    check_labels(router, data, oos_label)
    bar = Progress(len(data), f"eval {data.name}", progress)
    gold, pred, conf, lat, langs, rows = [], [], [], [], [], []
    acts: list[tuple[str, str | None, str]] = []
    llm = cont_ok = cont_n = 0
    raw_ok = dense_ok = 0
    for i, s in enumerate(data.samples):
        t = time.perf_counter()
        d = router.route(
            s.text, previous=s.previous_route if s.previous_route in router.route_table.by_name else None
        )
        lat.append((time.perf_counter() - t) * 1e3)
        p = d.route if d.action == "route" else (None if d.action == "none" else "CLARIFY")
        llm += d.used_llm
        acts.append((d.action, d.route, d.tier))
        dense, lex = d.raw_scores, d.lexical_scores
        fused = {k: v + lex.get(k, 0.0) for k, v in dense.items()} if lex else dense
        raw_ok += bool(fused) and max(fused, key=fused.__getitem__) == s.label
        dense_ok += bool(dense) and max(dense, key=dense.__getitem__) == s.label
        if s.previous_route:
            cont_n += 1
            cont_ok += p == s.label
        gold.append(s.label)
        pred.append(p)
        conf.append(d.confidence if d.action == "route" else 0.0)
        langs.append(s.language)
        rows.append(Prediction(s.text, s.label, p, d.action, d.tier, d.confidence))
        bar.update(i + 1)
    n_in = sum(g != oos_label for g in gold)
    # the ranking the rules start from (cosine + lexical), and the cosine's alone
    top1 = (raw_ok / n_in, dense_ok / n_in) if n_in else (None, None)
    figures = decision_figures(acts, gold, raw_top1=top1[0], dense_top1=top1[1])
    labels = sorted({g for g in gold if g != oos_label})
    has_oos = any(g == oos_label for g in gold)
    correct = [g == p or (g == oos_label and p is None) for g, p in zip(gold, pred)]
    norm = [p if p is not None else oos_label for p in pred]
    by_language = {
        lang: LanguageScore(len(m), float(np.mean([correct[i] for i in m])))
        for lang in sorted({l for l in langs if l})
        for m in [[i for i, l in enumerate(langs) if l == lang]]
    }
    confusion = M.confusion(gold, norm, labels + ([oos_label] if has_oos else []))
    return RouteEval(
        n=len(gold),
        accuracy=float(np.mean(correct)),
        macro_f1=M.macro_f1(gold, norm),
        in_scope_accuracy=M.in_scope_accuracy(gold, pred, oos_label),
        per_route={k: Scores.of(v) for k, v in M.per_label(gold, norm).items()},
        top_confusions=tuple(M.top_confusions(gold, norm, 20)),
        labels=tuple(labels),
        confusion=tuple(tuple(int(x) for x in r) for r in confusion),
        latency_ms=Latency.of(M.latency(lat)),
        calibration=reliability(conf, correct),
        coverage_curve=tuple(CoveragePoint(**c) for c in M.coverage_curve(conf, correct)),
        decisions=figures,
        llm_fallback_rate=llm / len(data),
        continuation_accuracy=cont_ok / cont_n if cont_n else None,
        oos=Scores.of(M.oos_prf(gold, pred, oos_label)) if has_oos else None,
        by_language=by_language,
        calibrated=router.calibrated,
        fit=router.fitted,
        predictions=tuple(rows),
    )
