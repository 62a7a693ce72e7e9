"""Tool-selection evaluation on the shapes public benchmarks have.

A row may carry its own candidate list (names from the catalog, or tools it
defines itself, whose names may repeat across rows with other descriptions),
may have no right tool at all (the right answer is "no tool fits"), or may need
several tools. :func:`rows_catalog` turns rows into one catalog (each distinct
name + description embedded once) and per-row candidates; :func:`evaluate_tools`
scores the router's belts on them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from routecore.config.specs import ToolSpec
from routecore.core.progress import Progress
from routecore.decide.fitted import ToolFit
from routecore.decide.tables import TableVectors
from routecore.errors import DatasetError
from routecore.evaluation import metrics as M
from routecore.evaluation.datasets import Dataset
from routecore.evaluation.results import Latency, ToolEval
from routecore.routers.router import Router


def tools_router(catalog: Sequence[dict[str, Any]], encoder: Any, progress: bool = False) -> Router:
    """A tools-only router over ``catalog`` (``{"name", "description"}`` rows), embeddings cached."""
    from routecore.evaluation.runner import embed

    tools = [ToolSpec(t["name"], t["description"], domain=t.get("domain", "")) for t in catalog]
    vecs = embed(encoder, [t.description for t in tools], progress=progress, what="embedding tools")
    return Router(tools=tools, encoder=encoder, vectors=TableVectors(tools=vecs))


@dataclass(frozen=True)
class RowTools:
    """Per row: the catalog names of its candidates (``None``: the whole catalog) and of its gold tools."""

    candidates: list[list[str] | None]
    gold: list[list[str]]


def rows_catalog(
    data: Dataset, catalog: Sequence[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], RowTools]:
    """The catalog to build (``catalog`` plus the tools rows define) and each row's tools in it.

    A tool a row defines gets its own catalog entry per distinct description;
    its name in the catalog is ``name`` the first time and ``name#2``, ``name#3``
    ... for other descriptions under the same name.
    """
    out = [dict(t) for t in catalog or ()]
    by_key: dict[tuple[str, str], str] = {(t["name"], t["description"]): t["name"] for t in out}
    taken = {t["name"] for t in out}
    cands: list[list[str] | None] = []
    gold: list[list[str]] = []
    for s in data.samples:
        if s.candidates is None:
            missing = [t for t in s.tools if t not in taken]
            if missing:
                raise DatasetError(f"{data.name}:{s.line}: tools {missing} are not in the tools file")
            cands.append(None)
            gold.append(list(s.tools))
            continue
        row: dict[str, str] = {}
        for c in s.candidates:
            if isinstance(c, str):
                if c not in taken:
                    raise DatasetError(f"{data.name}:{s.line}: candidate {c!r} is not in the tools file")
                row[c] = c
                continue
            key = c
            if key not in by_key:
                uid, k = c[0], 2
                while uid in taken:
                    uid, k = f"{c[0]}#{k}", k + 1
                by_key[key] = uid
                taken.add(uid)
                out.append({"name": uid, "description": c[1]})
            row[c[0]] = by_key[key]
        cands.append(list(row.values()))
        gold.append([row[t] for t in s.tools])
    if not out:
        raise DatasetError(f"{data.name}: no tools: give a tools file or candidates in the rows")
    return out, RowTools(cands, gold)


def _catalog_rows(router: Router, data: Dataset) -> RowTools:
    """``data``'s rows over ``router``'s own catalog (rows may only name its tools)."""
    return rows_catalog(data, [{"name": n, "description": ""} for n in router.tool_catalog.by_name])[1]


def evaluate_tools(
    router: Router,
    data: Dataset,
    *,
    ks: Sequence[int] = (1, 3, 5),
    progress: bool = False,
    rows: RowTools | None = None,
) -> ToolEval:
    """Recall@k, precision@k and MRR on rows with gold tools; all-gold-in-belt on rows
    with several; no-tool precision/recall on rows without; AUROC of the best tool's
    score between rows with and without a right tool; latency."""
    rows = rows or _catalog_rows(router, data)
    k = max(ks)
    bar = Progress(len(data), f"eval {data.name}", progress)
    ranked, selected, no_tool, top, lat = [], [], [], [], []
    for i, s in enumerate(data.samples):
        t = time.perf_counter()
        belt = router.tools(s.query, top_k=k, candidates=rows.candidates[i])
        lat.append((time.perf_counter() - t) * 1e3)
        ranked.append(list(belt.scores)[:k])  # best first
        selected.append([c.name for c in belt.tools if c.reason.code in ("top_k", "threshold")])
        no_tool.append(belt.no_tool)
        top.append(next(iter(belt.scores.values()), float("-inf")))
        bar.update(i + 1)
    figures = M.tool_shape_metrics(rows.gold, ranked, selected, no_tool, top, ks)
    return ToolEval.of(len(data), figures, ks, Latency.of(M.latency(lat)))


def fit_tools(
    router: Router, val: Dataset, *, rows: RowTools | None = None, progress: bool = False
) -> ToolFit:
    """Fit the tools' lexical pass on ``val`` (rows with gold tools: the first gold tool's
    rank) and install it as a fitted calibration; returns what was fitted.

    The stemmer, BM25 ``b`` and weight are chosen together (:func:`routecore.core.lexical.fit_form`)."""
    from dataclasses import replace

    from routecore.calibrate.calibration import route_scores
    from routecore.core.lexical import fit_form
    from routecore.evaluation.runner import embed

    cat, cal = router.tool_catalog, router.calibration
    if cal is None or cat.lexical is None or not router.spec_policy.lexical:
        raise DatasetError("fit --tools needs a calibrated router with the lexical pass on")
    rows = rows or _catalog_rows(router, val)
    keep = [i for i, g in enumerate(rows.gold) if g and rows.candidates[i] is None]
    if not keep:
        raise DatasetError(f"{val.name}: no row with a gold tool from the whole catalog to fit on")
    ids, V, labels, _ = cat.tools.index.vectors()
    owners = np.array([cat.tools.pos[n] for n in labels])
    queries = [val.samples[i].query for i in keep]
    Q = embed(router.encoder, queries, progress=progress, what="embedding val")
    S = route_scores(Q, V, owners, len(cat.specs))
    gold = np.array([cat.tools.pos[rows.gold[i][0]] for i in keep])
    stemmer, b, w, stats, tried = fit_form(
        cat.lexical_table, queries, S, gold, cal.scale, router.spec_policy.tool_lexical_stemmer
    )
    router.calibrate(
        replace(
            cal,
            source="fitted",
            tool_lexical_weight=w,
            tool_lexical_stemmer=stemmer,
            tool_lexical_b=b,
        )
    )
    fitted = ToolFit(w, stemmer, b, len(keep), stats, tried)
    router.fitted = fitted
    return fitted
