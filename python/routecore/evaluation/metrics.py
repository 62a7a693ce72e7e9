"""Metrics: accuracy, macro-F1, per-label precision/recall, confusion matrix,
out-of-scope P/R/F1, tool recall/precision@k, MRR, no-tool P/R and AUROC, latency (the reliability
table: :func:`routecore.decide.figures.reliability`)."""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np


def accuracy(gold: Sequence[str], pred: Sequence[str | None]) -> float:
    return float(np.mean([g == p for g, p in zip(gold, pred)])) if gold else 0.0


def per_label(gold: Sequence[str], pred: Sequence[str | None]) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support per gold label (predictions outside the gold set count as
    false positives of theirs)."""
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for g, p in zip(gold, pred):
        if g == p:
            tp[g] += 1
        else:
            fn[g] += 1
            if p is not None:
                fp[p] += 1
    out = {}
    for label in sorted(set(gold)):
        prec = tp[label] / (tp[label] + fp[label]) if tp[label] + fp[label] else 0.0
        rec = tp[label] / (tp[label] + fn[label]) if tp[label] + fn[label] else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out[label] = {"precision": prec, "recall": rec, "f1": f1, "support": tp[label] + fn[label]}
    return out


def macro_f1(gold: Sequence[str], pred: Sequence[str | None]) -> float:
    pl = per_label(gold, pred)
    return float(np.mean([v["f1"] for v in pl.values()])) if pl else 0.0


def confusion(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]) -> np.ndarray:
    """Rows: gold, columns: predicted; a last column counts predictions outside ``labels``."""
    idx = {l: i for i, l in enumerate(labels)}
    m = np.zeros((len(labels), len(labels) + 1), dtype=np.int64)
    for g, p in zip(gold, pred):
        if g in idx:
            m[idx[g], idx.get(p, len(labels)) if p is not None else len(labels)] += 1
    return m


def top_confusions(
    gold: Sequence[str], pred: Sequence[str | None], n: int = 20
) -> list[tuple[str, str, int]]:
    c = Counter((g, p or "<none>") for g, p in zip(gold, pred) if g != p)
    return [(g, p, k) for (g, p), k in c.most_common(n)]


def oos_prf(gold: Sequence[str], pred: Sequence[str | None], oos: str) -> dict[str, float]:
    """Out-of-scope detection as a binary task (prediction None counts as oos)."""
    g = np.array([x == oos for x in gold])
    p = np.array([x is None or x == oos for x in pred])
    tp = float((g & p).sum())
    prec = tp / p.sum() if p.sum() else 0.0
    rec = tp / g.sum() if g.sum() else 0.0
    return {
        "precision": prec,
        "recall": rec,
        "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0,
        "support": int(g.sum()),
    }


def in_scope_accuracy(gold: Sequence[str], pred: Sequence[str | None], oos: str) -> float:
    """Accuracy over in-scope samples, after the out-of-scope decision (rejected = wrong)."""
    pairs = [(g, p) for g, p in zip(gold, pred) if g != oos]
    return float(np.mean([g == p for g, p in pairs])) if pairs else 0.0


def tool_metrics(
    gold: Sequence[Sequence[str]], ranked: Sequence[Sequence[str]], ks: Sequence[int] = (1, 3, 5)
) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in ks:
        rec = [len(set(r[:k]) & set(g)) / len(set(g)) for g, r in zip(gold, ranked)]
        prec = [len(set(r[:k]) & set(g)) / k for g, r in zip(gold, ranked)]
        out[f"recall@{k}"] = float(np.mean(rec))
        out[f"precision@{k}"] = float(np.mean(prec))
    rr = []
    for g, r in zip(gold, ranked):
        ranks = [i for i, t in enumerate(r) if t in set(g)]
        rr.append(1.0 / (ranks[0] + 1) if ranks else 0.0)
    out["mrr"] = float(np.mean(rr))
    return out


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties counting half; None without both kinds."""
    pos, neg = np.asarray(positive, np.float64), np.asarray(negative, np.float64)
    if not len(pos) or not len(neg):
        return None
    _, which, counts = np.unique(np.concatenate([pos, neg]), return_inverse=True, return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2)[which]  # ties share their average rank
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def tool_shape_metrics(
    gold: Sequence[Sequence[str]],
    ranked: Sequence[Sequence[str]],
    selected: Sequence[Sequence[str]],
    no_tool: Sequence[bool],
    top: Sequence[float],
    ks: Sequence[int] = (1, 3, 5),
) -> dict[str, object]:
    """Tool selection over rows with one, several or no gold tools.

    ``ranked``: the best tools by score (the belt's reported scores); ``selected``:
    the tools the belt offered (floor and cap applied); ``no_tool``: the belt said
    no tool fits; ``top``: the best tool's score.
    """
    rel = [i for i, g in enumerate(gold) if g]
    irr = [i for i, g in enumerate(gold) if not g]
    multi = [i for i in rel if len(set(gold[i])) > 1]
    out: dict[str, object] = {"n_relevant": len(rel), "n_no_tool": len(irr), "n_multi": len(multi)}
    if rel:
        out.update(tool_metrics([gold[i] for i in rel], [ranked[i] for i in rel], ks))
        out["no_tool_on_relevant"] = float(np.mean([no_tool[i] for i in rel]))
    if multi:
        for k in ks:
            out[f"all_gold@{k}"] = float(np.mean([set(gold[i]) <= set(ranked[i][:k]) for i in multi]))
        out["all_gold_in_belt"] = float(np.mean([set(gold[i]) <= set(selected[i]) for i in multi]))
    if irr:
        said = [i for i in range(len(gold)) if no_tool[i]]
        out["no_tool_precision"] = float(np.mean([not gold[i] for i in said])) if said else 0.0
        out["no_tool_recall"] = float(np.mean([no_tool[i] for i in irr]))
    out["auroc_top_score"] = auroc([top[i] for i in rel], [top[i] for i in irr])
    return out


def coverage_curve(
    confidence: Sequence[float], correct: Sequence[bool], points: int = 21
) -> list[dict[str, float]]:
    """Accuracy of the answered fraction when answering only the most confident ones."""
    order = np.argsort(-np.asarray(confidence, dtype=np.float64), kind="stable")
    y = np.asarray(correct, dtype=np.float64)[order]
    out = []
    for cov in np.linspace(0.05, 1.0, points):
        n = max(1, int(round(cov * len(y))))
        out.append({"coverage": float(n / len(y)), "accuracy": float(y[:n].mean())})
    return out


def latency(ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=np.float64)
    if not len(a):
        return {}
    return {
        "p50": float(np.percentile(a, 50)),
        "p95": float(np.percentile(a, 95)),
        "p99": float(np.percentile(a, 99)),
        "mean": float(a.mean()),
    }
