"""FAISS backends (exact ``IndexFlatIP`` and approximate HNSW) with the native
index's interface and error types. Imported only when a FAISS backend is used."""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np
import numpy.typing as npt

from routecore.errors import (
    BadKError,
    DimensionMismatchError,
    DuplicateIdError,
    EmptyIndexError,
    InvalidArgumentError,
    NonFiniteError,
    UnknownIdError,
    missing_extra,
)

try:
    import faiss
except ImportError as e:  # pragma: no cover - depends on the environment
    raise missing_extra("FAISS backends need faiss-cpu", "faiss") from e


class _Names:
    """Interned strings; code 0 is ''."""

    def __init__(self) -> None:
        self.names: list[str] = [""]
        self.codes: dict[str, int] = {"": 0}

    def intern(self, s: str) -> int:
        c = self.codes.get(s)
        if c is None:
            c = self.codes[s] = len(self.names)
            self.names.append(s)
        return c


class FaissIndex:
    """Entries live in FAISS under internal serial keys; HNSW cannot delete, so
    removed serials become tombstones that searches over-fetch and skip."""

    def __init__(self, kind: str, dim: int, normalize: bool, m: int = 32, ef_search: int = 128) -> None:
        self.kind, self.dim, self.normalize = kind, dim, normalize
        base: faiss.Index
        if kind == "faiss":
            base = faiss.IndexFlatIP(dim)
        else:
            hnsw = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
            hnsw.hnsw.efSearch = ef_search
            base = hnsw
        self._index = faiss.IndexIDMap2(base)
        self._lock = threading.RLock()
        self._next = 0
        self._serial_of: dict[int, int] = {}  # external id -> serial
        self._id = np.zeros(0, dtype=np.uint64)  # serial -> external id
        self._label = np.zeros(0, dtype=np.uint32)
        self._domain = np.zeros(0, dtype=np.uint32)
        self._alive = np.zeros(0, dtype=bool)
        self._tombstones = 0
        self._labels, self._domains = _Names(), _Names()

    def __len__(self) -> int:
        return len(self._serial_of)

    def _prepare(self, vectors: np.ndarray, n_ids: int, what: str = "vectors") -> np.ndarray:
        v = vectors.reshape(1, -1) if vectors.ndim == 1 else vectors
        if v.shape[1] != self.dim:
            raise DimensionMismatchError(f"dimension mismatch: expected {self.dim}, got {v.shape[1]}")
        bad = ~np.isfinite(v).all(axis=1)
        if bad.any():
            raise NonFiniteError(f"non-finite value (NaN or inf) in {what} at row {int(np.argmax(bad))}")
        if n_ids != v.shape[0]:
            raise InvalidArgumentError(f"{n_ids} ids given for {v.shape[0]} vectors")
        v = np.array(v, dtype=np.float32, copy=True)
        if self.normalize:
            faiss.normalize_L2(v)
        return v

    def _append(
        self, ids: np.ndarray, v: np.ndarray, labels: Sequence[str] | None, domains: Sequence[str] | None
    ) -> None:
        n = len(ids)
        serials = np.arange(self._next, self._next + n, dtype=np.int64)
        self._next += n
        self._index.add_with_ids(v, serials)
        self._id = np.concatenate([self._id, ids])
        lc = [self._labels.intern(s) for s in labels] if labels is not None else [0] * n
        dc = [self._domains.intern(s) for s in domains] if domains is not None else [0] * n
        self._label = np.concatenate([self._label, np.asarray(lc, dtype=np.uint32)])
        self._domain = np.concatenate([self._domain, np.asarray(dc, dtype=np.uint32)])
        self._alive = np.concatenate([self._alive, np.ones(n, dtype=bool)])
        for i, s in zip(ids.tolist(), serials.tolist()):
            self._serial_of[i] = s

    def add(
        self,
        ids: np.ndarray,
        vectors: np.ndarray,
        labels: Sequence[str] | None = None,
        domains: Sequence[str] | None = None,
    ) -> None:
        with self._lock:
            v = self._prepare(vectors, len(ids))
            seen: set[int] = set()
            for i in ids.tolist():
                if i in self._serial_of or i in seen:
                    raise DuplicateIdError(f"duplicate id: {i}")
                seen.add(i)
            self._append(ids, v, labels, domains)

    def _drop(self, serials: list[int]) -> None:
        if self.kind == "faiss":
            # faiss's stub has the C++ signature (an IDSelector); its Python wrapper
            # (replacement_remove_ids) also takes an int64 id array, as here.
            self._index.remove_ids(np.asarray(serials, dtype=np.int64))  # type: ignore[arg-type]
        else:
            self._tombstones += len(serials)
        self._alive[serials] = False

    def update(
        self,
        ids: np.ndarray,
        vectors: np.ndarray,
        labels: Sequence[str] | None = None,
        domains: Sequence[str] | None = None,
    ) -> None:
        with self._lock:
            v = self._prepare(vectors, len(ids))
            for i in ids.tolist():
                if i not in self._serial_of:
                    raise UnknownIdError(f"unknown id: {i}")
            old = [self._serial_of[i] for i in ids.tolist()]
            keep_l = [self._labels.names[self._label[s]] for s in old] if labels is None else labels
            keep_d = [self._domains.names[self._domain[s]] for s in old] if domains is None else domains
            self._drop(old)
            for i in ids.tolist():
                del self._serial_of[i]
            self._append(ids, v, keep_l, keep_d)

    def remove(self, ids: np.ndarray) -> None:
        with self._lock:
            seen: set[int] = set()
            for i in ids.tolist():
                if i not in self._serial_of:
                    raise UnknownIdError(f"unknown id: {i}")
                if i in seen:
                    raise DuplicateIdError(f"duplicate id: {i}")
                seen.add(i)
            self._drop([self._serial_of.pop(i) for i in ids.tolist()])

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        with self._lock:
            n = len(self)
            if n == 0:
                raise EmptyIndexError("the index is empty")
            if k <= 0 or k > n:
                raise BadKError(f"bad k: k={k} must be between 1 and the number of entries ({n})")
            single = queries.ndim == 1
            q = self._prepare(queries, 1 if single else queries.shape[0], "queries")
            fetch = min(k + self._tombstones, self._index.ntotal)
            d, s = self._index.search(q, fetch)
            if self._tombstones:
                d, s = self._compact(d, s, k)
            d, s = d[:, :k], s[:, :k]
            ids, labels = self._id[s], self._label[s]
        if single:
            return d[0], ids[0], labels[0]
        return d, ids, labels

    def _compact(self, d: np.ndarray, s: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        out_d = np.full((len(d), k), -np.inf, dtype=np.float32)
        out_s = np.zeros((len(d), k), dtype=np.int64)
        for r in range(len(d)):
            ok = (s[r] >= 0) & self._alive[np.maximum(s[r], 0)]
            dd, ss = d[r][ok][:k], s[r][ok][:k]
            out_d[r, : len(dd)], out_s[r, : len(ss)] = dd, ss
        return out_d, out_s

    def _live(self) -> npt.NDArray[np.intp]:
        return np.flatnonzero(self._alive)

    def label_names(self) -> list[str]:
        return self._labels.names

    def domain_names(self) -> list[str]:
        return self._domains.names

    def ids(self) -> np.ndarray:
        return self._id[self._live()]

    def label_codes(self) -> np.ndarray:
        return self._label[self._live()]

    def domain_codes(self) -> np.ndarray:
        return self._domain[self._live()]

    def vectors(self) -> np.ndarray:
        live = self._live()
        out = np.empty((len(live), self.dim), dtype=np.float32)
        for j, s in enumerate(live.tolist()):
            out[j] = self._index.reconstruct(int(s))
        return out

    def entries(self) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
        """(ids, vectors, labels, domains) of every entry, in storage order, read under the lock its
        writers hold: one snapshot, as ``_native.FlatIndex.entries`` gives (``VectorIndex.vectors``)."""
        with self._lock:
            names, dnames = self.label_names(), self.domain_names()
            labels = [names[c] for c in self.label_codes()]
            domains = [dnames[c] for c in self.domain_codes()]
            return self.ids(), self.vectors(), labels, domains
