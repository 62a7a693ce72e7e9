"""A tool shortlist: the best ``n`` tools of a catalog for a query, by the catalog's final scores and
with no floor, for another router to re-score (issue 38: the static tier proposes the candidates of a
:class:`~routecore.routers.cascade.Cascade`'s tool belt, the transformer picks the belt among them).

The scores are the ones a belt is picked from (:func:`routecore.tools.tool_scores.ranked_scores`:
cosines, lexical pass, domain affinity, anti-patterns, lessons, entities). Core tools take no place
in the shortlist: they are in every belt, so they are passed on beside it, as are the discovery tools
of the shortlisted tools' plugins (the belt adds them when a tool of their plugin is picked).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from routecore import _native
from routecore.decision import Alert, Timings
from routecore.errors import InvalidArgumentError
from routecore.tools.tool_catalog import ToolCatalog
from routecore.tools.tool_scores import ranked_scores
from routecore.tools.toolbelt import EncoderFailed, candidate_mask, query_embedding


@dataclass(frozen=True)
class Shortlist:
    """The best tools of one query, best first (``names``, ``scores``: the final scores), and the
    candidates to pass on (``candidates``: ``names``, the core tools and the discovery tools of the
    shortlisted tools' plugins, in catalog order). ``error``: the encoder failed (no shortlist)."""

    names: tuple[str, ...]
    scores: tuple[float, ...]
    candidates: tuple[str, ...]
    timings: Timings
    error: str | None = None


def check_size(n: Any) -> int:
    """``n`` as a shortlist size.

    Raises:
        InvalidArgumentError: not a whole number >= 1.
    """
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1 << 31:
        raise InvalidArgumentError(f"the shortlist size must be a whole number >= 1, got {n!r}")
    return n


def best_tools(
    catalog: ToolCatalog,
    query: str,
    n: int,
    context_domains: Sequence[str] = (),
    candidates: Sequence[str] | None = None,
    *,
    vector: Any = None,
    encoded: tuple[np.ndarray, float, float] | None = None,
) -> Shortlist:
    """The best ``n`` tools of ``catalog`` for ``query`` (among ``candidates`` when given), with no
    floor; ``vector``: the query's embedding; ``encoded``: (embedding, tokenize ms, encoder ms) from
    a batched encoder call. An encoder that fails gives an empty shortlist with ``error`` set."""
    check_size(n)
    allowed = candidate_mask(catalog, candidates)
    routed = catalog.read_query(query)[0]
    t0 = time.perf_counter()
    try:
        q, tok_ms, before_ms = query_embedding(catalog, routed, vector, encoded)
    except EncoderFailed as e:  # the caller falls back to the whole catalog
        return Shortlist((), (), (), Timings(total=(time.perf_counter() - t0) * 1e3), str(e))
    t0 -= before_ms / 1e3
    t1 = time.perf_counter()
    core = catalog.core
    alerts: list[Alert] = []  # a lesson store's failure: the re-scoring router reports its own
    exact_top = max(catalog.policy.exact_top, n + len(core))
    _, adjusted, _, _ = ranked_scores(catalog, q, context_domains, exact_top, float("inf"), alerts, routed)
    keep = np.isfinite(adjusted)
    keep[core] = False
    if allowed is not None:
        keep &= allowed
    live = np.flatnonzero(keep)
    t2 = time.perf_counter()
    if len(live):
        best, at = _native.topk(np.ascontiguousarray(adjusted[live], np.float32), min(n, len(live)))
        order = live[at.astype(np.intp)].tolist()
    else:
        best, order = np.zeros(0, np.float32), []
    table = catalog.tools
    names = tuple(table.names[i] for i in order)
    plugins = {table.domains[i] for i in order if table.domains[i]}
    by_plugin = catalog.discovery_tools(catalog.policy.discovery_prefixes)
    discovery = {t for p in plugins for t in by_plugin.get(p, ())}
    passed = set(names) | discovery | {table.names[i] for i in core}
    if allowed is not None:
        passed = {t for t in passed if allowed[table.pos[t]]}
    t3 = time.perf_counter()
    return Shortlist(
        names,
        tuple(best.tolist()),
        tuple(t for t in table.names if t in passed),
        Timings(tok_ms, (t1 - t0) * 1e3 - tok_ms, (t2 - t1) * 1e3, (t3 - t2) * 1e3, 0.0, (t3 - t0) * 1e3),
    )
