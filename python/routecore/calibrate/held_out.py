"""Held-out scores of exemplars: how each sampled exemplar scores against every route
when it (and its near-copies) is left out, the labelled data zero-label calibration
fits on (:mod:`routecore.calibrate.calibration`)."""

from __future__ import annotations

import numpy as np

from routecore.errors import ConfigError

#: Same-route pairs at least this similar (as a quantile of all same-route pairs) count as near-duplicates.
NEAR_DUPLICATE_QUANTILE = 0.95
#: The high tier's held-out rows lose this many nearest same-route exemplars: the smallest
#: number whose tier reached 95 % on every dev split, both encoders (`benches/leave_out.py`).
LEAVE_OUT_NEAREST = 2


def _group_starts(owners: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Column order that groups ``owners``, each present group's start, and which groups are present."""
    perm = np.argsort(owners, kind="stable")
    counts = np.bincount(owners, minlength=n_groups)
    present = np.flatnonzero(counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[present]
    return perm, starts, present


def route_scores(
    Q: np.ndarray,
    V: np.ndarray,
    owners: np.ndarray,
    n_groups: int,
    aggregation: str = "max",
    top_n: int = 3,
    exclude: np.ndarray | None = None,
    near_duplicate: float | np.ndarray | None = None,
    chunk: int = 256,
) -> np.ndarray:
    """Aggregated scores [len(Q), n_groups] of queries ``Q`` against exemplars ``V``
    owned by ``owners``. Groups without exemplars score -inf.

    ``exclude[i]`` is an exemplar left out of row ``i`` (leave-one-out), or -1;
    with ``near_duplicate`` (one cut, or one per row), the exemplars of the same
    group at least that similar to row ``i`` are left out too (max aggregation only)."""
    owners = np.asarray(owners, dtype=np.int64)
    perm, starts, present = _group_starts(owners, n_groups)
    counts = np.bincount(owners, minlength=n_groups).astype(np.float64)
    out = np.full((len(Q), n_groups), -np.inf, dtype=np.float32)
    for a in range(0, len(Q), chunk):
        C = (Q[a : a + chunk] @ V.T).astype(np.float32)
        rows = np.arange(len(C))
        ex = exclude[a : a + chunk] if exclude is not None else None
        if aggregation == "max":
            if ex is not None and near_duplicate is not None:
                own = ex >= 0
                same = owners[None, :] == np.where(own, owners[ex], -1)[:, None]
                if isinstance(near_duplicate, np.ndarray) and near_duplicate.ndim > 0:  # one cut per row
                    cut: float | np.ndarray = near_duplicate[a : a + chunk, None]
                else:
                    cut = near_duplicate
                C[same & (C >= cut)] = -np.inf
            if ex is not None:
                C[rows[ex >= 0], ex[ex >= 0]] = -np.inf
            out[a : a + chunk, present] = np.maximum.reduceat(C[:, perm], starts, axis=1)
        elif aggregation == "mean":
            n = np.broadcast_to(counts, (len(C), n_groups)).copy()
            if ex is not None:
                C[rows[ex >= 0], ex[ex >= 0]] = 0.0
                n[rows[ex >= 0], owners[ex[ex >= 0]]] -= 1
            s = np.zeros((len(C), n_groups))
            s[:, present] = np.add.reduceat(C[:, perm], starts, axis=1)
            out[a : a + chunk] = np.where(n > 0, s / np.maximum(n, 1), -np.inf)
        elif aggregation == "topn":
            if ex is not None:
                C[rows[ex >= 0], ex[ex >= 0]] = np.nan
            for g in present:
                cols = np.sort(np.where(np.isnan(C[:, owners == g]), -np.inf, C[:, owners == g]), axis=1)[
                    :, ::-1
                ][:, :top_n]
                finite = np.isfinite(cols)
                k = finite.sum(axis=1)
                out[a : a + chunk, g] = np.where(
                    k > 0, np.where(finite, cols, 0).sum(axis=1) / np.maximum(k, 1), -np.inf
                )
        else:
            raise ConfigError(f"aggregation must be 'max', 'mean' or 'topn', got {aggregation!r}")
    return out


def _nearest_ks(owners: np.ndarray, rows: np.ndarray, n: int) -> np.ndarray:
    """Per row, how many nearest same-group exemplars to leave out: ``n``, but at most a tenth
    of the group's others (at least 1)."""
    others = np.bincount(owners)[owners[rows]] - 1
    ks: np.ndarray = np.clip(np.minimum(n, others // 10), 1, None)
    return ks


def _kth_same(C: np.ndarray, same: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """Per row of ``C`` (rows' cosines, their own column already -inf), the ``ks[i]``-th
    largest cosine among the ``same`` columns (-inf when there are fewer)."""
    C = np.where(same, C, -np.inf)
    m = min(int(ks.max()) if len(ks) else 1, C.shape[1])
    top = -np.sort(np.partition(-C, m - 1, axis=1)[:, :m], axis=1)  # the m nearest, nearest first
    kth: np.ndarray = top[np.arange(len(C)), np.minimum(ks, m) - 1].astype(np.float32)
    return kth


def nearest_same(V: np.ndarray, owners: np.ndarray, rows: np.ndarray, n: int, chunk: int = 256) -> np.ndarray:
    """Per row of ``rows``, the cosine of its k-th nearest other exemplar of the same group,
    k = ``n`` but at most a tenth of the others (at least 1): leaving out what scores at
    least that leaves out the row's k nearest same-group exemplars (-inf: no other)."""
    ks = _nearest_ks(owners, rows, n)
    out = np.full(len(rows), -np.inf, dtype=np.float32)
    for a in range(0, len(rows), chunk):
        r = rows[a : a + chunk]
        C = (V[r] @ V.T).astype(np.float32)
        C[np.arange(len(r)), r] = -np.inf
        out[a : a + chunk] = _kth_same(C, owners[None, :] == owners[r][:, None], ks[a : a + chunk])
    return out


def near_duplicate_cut(V: np.ndarray, owners: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per held-out row, the cosine from which a same-group exemplar is its near-duplicate:
    the :data:`NEAR_DUPLICATE_QUANTILE` of all same-group pairs (one cut for every row)."""
    few = rows[
        :: max(1, len(rows) // 256)
    ]  # spread over groups: enough for a quantile, bounded memory at 100k exemplars
    G = V[few] @ V.T
    same = owners[None, :] == owners[few][:, None]
    same[np.arange(len(few)), few] = False
    return np.full(
        len(rows), np.quantile(G[same], NEAR_DUPLICATE_QUANTILE) if same.any() else np.inf, dtype=np.float32
    )


def held_out_max(
    V: np.ndarray,
    owners: np.ndarray,
    R: int,
    rows: np.ndarray,
    dup: np.ndarray,
    n_nearest: int,
    chunk: int = 256,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The held-out rows' max scores per group, from one product of each chunk with ``V``:

    - ``S_loo``: each row left out alone (leave-one-out);
    - ``S``: each row left out with its group's exemplars at or above its ``dup`` cut;
    - ``S_tier``: left out with its ``n_nearest`` nearest same-group exemplars instead
      (:func:`nearest_same`; ``S`` itself when 0), and that cut per row.

    A row whose group the cut empties keeps the plainer score (``S``: leave-one-out;
    ``S_tier``: ``S``)."""
    owners = np.asarray(owners, dtype=np.int64)
    perm, starts, present = _group_starts(owners, R)
    ks = _nearest_ks(owners, rows, n_nearest) if n_nearest else None
    S = np.full((len(rows), R), -np.inf, dtype=np.float32)
    S_loo = np.full((len(rows), R), -np.inf, dtype=np.float32)
    S_tier = S if ks is None else np.full((len(rows), R), -np.inf, dtype=np.float32)
    tier_cut = dup if ks is None else np.empty(len(rows), dtype=np.float32)

    def group_max(C: np.ndarray) -> np.ndarray:
        out = np.full((len(C), R), -np.inf, dtype=np.float32)
        out[:, present] = np.maximum.reduceat(C[:, perm], starts, axis=1)
        return out

    for a in range(0, len(rows), chunk):
        r, sl = rows[a : a + chunk], slice(a, a + chunk)
        C = (V[r] @ V.T).astype(np.float32)
        C[np.arange(len(r)), r] = -np.inf
        same = owners[None, :] == owners[r][:, None]
        loo = S_loo[sl] = group_max(C)
        s = group_max(np.where(same & (C >= dup[sl, None]), -np.inf, C))
        S[sl] = np.where(np.isfinite(s), s, loo)
        if ks is not None:
            tier_cut[sl] = _kth_same(C, same, ks[sl])
            t = group_max(np.where(same & (C >= tier_cut[sl, None]), -np.inf, C))
            S_tier[sl] = np.where(np.isfinite(t), t, S[sl])
    return S_loo, S, S_tier, tier_cut


def held_out_rows(owners: np.ndarray, n_groups: int, sample: int, seed: int = 0) -> np.ndarray:
    """Exemplars to hold out: those whose group has another exemplar, at most ``sample``,
    spread evenly over groups."""
    owners = np.asarray(owners, dtype=np.int64)
    counts = np.bincount(owners, minlength=n_groups)
    eligible = np.flatnonzero(counts[owners] >= 2)
    if len(eligible) <= sample:
        return eligible
    rng = np.random.default_rng(seed)
    # Round-robin over groups, so a large route cannot crowd out the small ones.
    keys = rng.permutation(len(eligible))
    rank = np.empty(len(eligible), dtype=np.int64)
    order = np.lexsort((keys, owners[eligible]))
    g = owners[eligible][order]
    first = np.searchsorted(g, g)
    rank[order] = np.arange(len(order)) - first
    return np.sort(eligible[np.lexsort((keys, rank))[:sample]])
