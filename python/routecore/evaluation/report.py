"""Writing evaluation results: JSON, a Markdown report and PNG plots."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from types import ModuleType

import numpy as np

from routecore.evaluation.results import Latency, RouteEval, ToolEval


def write_report(
    results: RouteEval | ToolEval, out: str | Path, title: str = "routecore evaluation"
) -> list[Path]:
    """Write ``results.json``, ``report.md`` (and, for routes, ``predictions.jsonl`` and the plots,
    when matplotlib is installed) into ``out``; returns the paths."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    paths = [d / "results.json"]
    paths[0].write_text(json.dumps(results.to_dict(), indent=1, ensure_ascii=False))
    md = [f"# {title}", "", f"Samples: {results.n}", ""]
    if isinstance(results, ToolEval):
        md += [
            f"- {k}: {v:.4f}" for k, v in results.to_dict().items() if k.startswith(("recall@", "precision@"))
        ]
        if results.mrr is not None:
            md.append(f"- mrr: {results.mrr:.4f}")
        md += _latency(results.latency_ms)
    else:
        with open(d / "predictions.jsonl", "w", encoding="utf-8") as f:
            for r in results.predictions:
                f.write(json.dumps(asdict(r), ensure_ascii=False) + "\n")
        paths.append(d / "predictions.jsonl")
        md += _route_lines(results)
    plots = _plots(results, d) if isinstance(results, RouteEval) else []
    paths += plots
    if plots:
        md += ["", "## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots]
    (d / "report.md").write_text("\n".join(md) + "\n")
    paths.append(d / "report.md")
    return paths


def _latency(l: Latency | None) -> list[str]:
    return [f"- latency ms p50 / p95 / p99: {l.p50:.2f} / {l.p95:.2f} / {l.p99:.2f}"] if l else []


def _route_lines(r: RouteEval) -> list[str]:
    md = [
        f"- {k.replace('_', ' ')}: {v:.4f}"
        for k, v in (
            ("accuracy", r.accuracy),
            ("in_scope_accuracy", r.in_scope_accuracy),
            ("macro_f1", r.macro_f1),
            ("clarification_rate", r.clarification_rate),
            ("llm_fallback_rate", r.llm_fallback_rate),
            ("continuation_accuracy", r.continuation_accuracy),
        )
        if v is not None
    ]
    if r.oos is not None:
        o = r.oos
        md.append(
            f"- out-of-scope precision / recall / F1: "
            f"{o.precision:.3f} / {o.recall:.3f} / {o.f1:.3f} (support {o.support})"
        )
    md += _latency(r.latency_ms)
    if r.calibration.ece is not None:
        md.append(f"- expected calibration error: {r.calibration.ece:.4f}")
    if r.fit is not None:
        md += ["", "## Fitted policy", "", "```json", json.dumps(r.fit.to_dict(), indent=1), "```"]
    if r.by_language:
        md += ["", "## By language", "", "| language | n | accuracy |", "|---|---|---|"]
        md += [f"| {k} | {v.n} | {v.accuracy:.4f} |" for k, v in r.by_language.items()]
    if r.top_confusions:
        md += ["", "## Top confusions", "", "| gold | predicted | count |", "|---|---|---|"]
        md += [f"| {g} | {p} | {n} |" for g, p, n in r.top_confusions]
    return md


def _plots(results: RouteEval, d: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # plots are optional: pip install matplotlib
        return []
    out = []
    if results.confusion:
        labels = list(results.labels) + (["oos"] if results.oos is not None else [])
        m = np.asarray(results.confusion, dtype=float)[:, : len(labels)]
        if len(labels) > 30:  # large label sets: the labels with the most confusions
            off = m.sum(axis=1) - np.diag(m[:, : len(m)]) if m.shape[0] == m.shape[1] else m.sum(axis=1)
            keep = np.argsort(-off)[:30]
            m, labels = m[np.ix_(keep, keep)], [labels[i] for i in keep]
        fig, ax = plt.subplots(figsize=(9, 8))
        ax.imshow(m / np.maximum(m.sum(axis=1, keepdims=True), 1), cmap="Blues")
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
        ax.set_yticks(range(len(labels)), labels, fontsize=6)
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
        ax.set_title("Confusion matrix (row-normalised)")
        fig.tight_layout()
        out.append(d / "confusion.png")
        fig.savefig(out[-1], dpi=110)
        plt.close(fig)
    if results.calibration.bins:
        c = results.calibration.bins
        out.append(
            _line_plot(
                plt,
                d / "reliability.png",
                [x.mean_confidence for x in c],
                [x.success_rate for x in c],
                "confidence",
                f"Reliability (ECE {results.calibration.ece or 0.0:.3f})",
                diagonal=True,
            )
        )
    if results.coverage_curve:
        c2 = results.coverage_curve
        out.append(
            _line_plot(
                plt,
                d / "coverage.png",
                [x.coverage for x in c2],
                [x.accuracy for x in c2],
                "coverage",
                "Accuracy vs coverage",
            )
        )
    return out


def _line_plot(
    plt: ModuleType,
    path: Path,
    x: list[float],
    y: list[float],
    xlabel: str,
    title: str,
    diagonal: bool = False,
) -> Path:
    fig, ax = plt.subplots(figsize=(5, 4.5))
    if diagonal:
        ax.plot([0, 1], [0, 1], "k--", lw=1)
    ax.plot(x, y, "o-")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
