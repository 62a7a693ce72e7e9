"""Writing evaluation results: JSON, a Markdown report and PNG plots."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np


def write_report(results: dict[str, Any], out: str | Path, title: str = "routecore evaluation") -> list[Path]:
    """Write ``results.json``, ``report.md`` and plots into ``out``; returns the paths."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    rows = results.pop("_rows", None)
    paths = [d / "results.json"]
    paths[0].write_text(json.dumps(results, indent=1, ensure_ascii=False))
    if rows is not None:
        with open(d / "predictions.jsonl", "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        paths.append(d / "predictions.jsonl")
    plots = _plots(results, d)
    paths += plots
    md = [f"# {title}", "", f"Samples: {results.get('n')}", ""]
    for k in (
        "accuracy",
        "in_scope_accuracy",
        "macro_f1",
        "clarification_rate",
        "llm_fallback_rate",
        "continuation_accuracy",
    ):
        if results.get(k) is not None:
            md.append(f"- {k.replace('_', ' ')}: {results[k]:.4f}")
    if "oos" in results:
        o = results["oos"]
        md.append(
            f"- out-of-scope precision / recall / F1: "
            f"{o['precision']:.3f} / {o['recall']:.3f} / {o['f1']:.3f} (support {o['support']})"
        )
    for k in [k for k in results if k.startswith(("recall@", "precision@"))] + (
        ["mrr"] if "mrr" in results else []
    ):
        md.append(f"- {k}: {results[k]:.4f}")
    if results.get("latency_ms"):
        l = results["latency_ms"]
        md.append(f"- latency ms p50 / p95 / p99: {l['p50']:.2f} / {l['p95']:.2f} / {l['p99']:.2f}")
    if "calibration" in results:
        md.append(f"- expected calibration error: {results['calibration']['ece']:.4f}")
    if results.get("fit"):
        md += ["", "## Fitted policy", "", "```json", json.dumps(results["fit"], indent=1), "```"]
    if results.get("by_language"):
        md += ["", "## By language", "", "| language | n | accuracy |", "|---|---|---|"]
        md += [f"| {k} | {v['n']} | {v['accuracy']:.4f} |" for k, v in results["by_language"].items()]
    if results.get("top_confusions"):
        md += ["", "## Top confusions", "", "| gold | predicted | count |", "|---|---|---|"]
        md += [f"| {g} | {p} | {n} |" for g, p, n in results["top_confusions"]]
    if plots:
        md += ["", "## Plots", ""] + [f"![{p.stem}]({p.name})" for p in plots]
    (d / "report.md").write_text("\n".join(md) + "\n")
    paths.append(d / "report.md")
    return paths


def _plots(results: dict[str, Any], d: Path) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # plots are optional: pip install matplotlib
        return []
    out = []
    if results.get("confusion"):
        labels = results["labels"] + (["oos"] if "oos" in results else [])
        m = np.asarray(results["confusion"], dtype=float)[:, : len(labels)]
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
    if results.get("calibration", {}).get("curve"):
        c = results["calibration"]["curve"]
        out.append(
            _line_plot(
                plt,
                d / "reliability.png",
                [x["confidence"] for x in c],
                [x["accuracy"] for x in c],
                "confidence",
                f"Reliability (ECE {results['calibration']['ece']:.3f})",
                diagonal=True,
            )
        )
    if results.get("coverage_curve"):
        c = results["coverage_curve"]
        out.append(
            _line_plot(
                plt,
                d / "coverage.png",
                [x["coverage"] for x in c],
                [x["accuracy"] for x in c],
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
