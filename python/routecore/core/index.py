"""`VectorIndex`: one interface over the native flat index and FAISS."""

from __future__ import annotations

import os
from typing import Any, Literal, Sequence

import numpy as np

from routecore import _native
from routecore.core.arrays import as_f32, as_ids, as_names
from routecore.errors import InvalidArgumentError

Backend = Literal["auto", "flat", "faiss", "hnsw"]

#: Above this many entries an ``auto`` index moves to FAISS HNSW (approximate).
HNSW_THRESHOLD = 2_000_000


def _count(name: str, v: Any, least: int) -> None:
    """``v`` must be a whole number in [least, 2**31] (the native layer takes no more)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not least <= v <= 1 << 31:
        raise InvalidArgumentError(f"{name} must be a whole number between {least} and 2**31, got {v!r}")


class SearchResult:
    """Top-k results: ``scores`` (float32), ``ids`` (uint64) and ``labels`` (str).

    Arrays have shape ``(k,)`` for one query and ``(n, k)`` for a batch. ``labels``
    is built on first access from the label codes (label tables only grow, so the
    codes stay valid after later writes).
    """

    __slots__ = ("scores", "ids", "label_codes", "_source", "_labels")

    def __init__(self, scores: np.ndarray, ids: np.ndarray, label_codes: np.ndarray, source: Any):
        self.scores = scores
        self.ids = ids
        self.label_codes = label_codes
        self._source = source
        self._labels: np.ndarray | None = None

    @property
    def labels(self) -> np.ndarray:
        """The label of each hit (object array, the shape of ``ids``), read on first use."""
        if self._labels is None:
            self._labels = np.asarray(self._source.label_names(), dtype=object)[self.label_codes]
        return self._labels

    def __repr__(self) -> str:
        return f"SearchResult(scores={self.scores!r}, ids={self.ids!r}, labels={self.labels!r})"


class VectorIndex:
    """Exact (or, for HNSW, approximate) inner-product index over vectors.

    Every entry has an integer id, a label (route or tool name) and a domain.
    Vectors are L2-normalised by default, so scores are cosine similarities.

    Args:
        dim: vector width.
        backend: ``"flat"`` (native, exact), ``"faiss"`` (FAISS ``IndexFlatIP``,
            exact), ``"hnsw"`` (FAISS HNSW, approximate) or ``"auto"``: native
            flat, moving to HNSW once the index holds more than
            ``hnsw_threshold`` entries.
        storage: ``"f32"``, ``"f16"`` or ``"int8"`` (native backend): compact
            copies are scanned and a candidate pool is re-ranked exactly in f32.
        normalize: L2-normalise vectors and queries.
    """

    def __init__(
        self,
        dim: int,
        *,
        backend: Backend = "auto",
        storage: str = "f32",
        normalize: bool = True,
        hnsw_threshold: int = HNSW_THRESHOLD,
        hnsw_m: int = 32,
        ef_search: int = 128,
    ):
        if backend not in ("auto", "flat", "faiss", "hnsw"):
            raise InvalidArgumentError(f"backend must be 'auto', 'flat', 'faiss' or 'hnsw', got {backend!r}")
        _count("dim", dim, 1)
        self._auto = backend == "auto"
        self._hnsw_threshold = hnsw_threshold
        self._hnsw_opts = {"m": hnsw_m, "ef_search": ef_search}
        self._dim, self._normalize, self._storage = int(dim), normalize, storage
        if backend in ("auto", "flat"):
            self._impl: Any = _native.FlatIndex(int(dim), storage, normalize)
            self._backend = "flat"
        else:
            self._impl = _faiss(backend, int(dim), normalize, self._hnsw_opts)
            self._backend = backend

    # -- properties ----------------------------------------------------------------
    @property
    def dim(self) -> int:
        """The width of the vectors."""
        return self._dim

    @property
    def backend(self) -> str:
        """The backend in use now: ``flat``, ``faiss`` or ``hnsw``."""
        return self._backend

    @property
    def storage(self) -> str:
        """How the rows are kept: ``f32``, ``f16`` or ``int8``."""
        return self._storage

    @property
    def native(self) -> _native.FlatIndex:
        """The native index that does the work: a route table runs its native scoring step on it
        (:mod:`routecore.decide.tables`). Internal to routecore. Raises
        :class:`~routecore.errors.InvalidArgumentError` when a FAISS backend holds the rows."""
        impl = self._impl  # read once: an "auto" index may move to HNSW meanwhile
        if not isinstance(impl, _native.FlatIndex):
            raise InvalidArgumentError(f"a {self._backend} index has no native scoring step")
        return impl

    def __len__(self) -> int:
        return len(self._impl)

    def label_names(self) -> list[str]:
        """Label names by code (code 0 is the empty label)."""
        names: list[str] = self._impl.label_names()
        return names

    # -- writes --------------------------------------------------------------------
    def add(
        self,
        ids: Any,
        vectors: Any,
        labels: Sequence[str] | str | None = None,
        domains: Sequence[str] | str | None = None,
    ) -> None:
        """Add entries. Raises without changing the index on any bad input."""
        v = as_f32(vectors, "vectors")
        n = 1 if v.ndim == 1 else v.shape[0]
        i = as_ids(ids)
        self._impl.add(i, v, as_names(labels, n, "labels"), as_names(domains, n, "domains"))
        if self._auto and self._backend == "flat" and len(self._impl) > self._hnsw_threshold:
            self._migrate("hnsw")

    def update(
        self,
        ids: Any,
        vectors: Any,
        labels: Sequence[str] | str | None = None,
        domains: Sequence[str] | str | None = None,
    ) -> None:
        """Replace vectors (and labels/domains when given) of existing ids."""
        v = as_f32(vectors, "vectors")
        n = 1 if v.ndim == 1 else v.shape[0]
        self._impl.update(as_ids(ids), v, as_names(labels, n, "labels"), as_names(domains, n, "domains"))

    def remove(self, ids: Any) -> None:
        """Remove entries; an unknown id raises ``UnknownIdError`` and removes nothing."""
        self._impl.remove(as_ids(ids))

    # -- reads ---------------------------------------------------------------------
    def search(self, queries: Any, k: int) -> SearchResult:
        """Top-k for one query (shape ``(dim,)``) or a batch (``(n, dim)``)."""
        _count("k", k, 0)
        impl = self._impl
        scores, ids, codes = impl.search(as_f32(queries, "queries"), k)
        return SearchResult(scores, ids, codes, impl)

    def vectors(self) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
        """(ids, vectors, labels, domains) of every entry, in storage order: one
        snapshot, even while other threads write."""
        impl = self._impl  # read once: an "auto" index may move to HNSW meanwhile
        # One snapshot under the index's lock: one native call (FlatIndex), or FAISS's writers' lock.
        entries: tuple[np.ndarray, np.ndarray, list[str], list[str]] = impl.entries()
        return entries

    # -- persistence ---------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to ``path`` (atomic; header with version, dim, count, CRC-32)."""
        if self._backend == "flat":
            self._impl.save(os.fspath(path))
            return
        ids, vecs, labels, domains = self.vectors()
        flat = _native.FlatIndex(self._dim, "f32", self._normalize)
        if len(ids):
            flat.add(ids, vecs, labels, domains)
        flat.save(os.fspath(path))

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, backend: Backend = "auto") -> "VectorIndex":
        """Read an index written by :meth:`save`; corrupt files raise ``CorruptIndexError``."""
        flat = _native.FlatIndex.load(os.fspath(path))
        self = cls.__new__(cls)
        self._auto = backend == "auto"
        self._hnsw_threshold = HNSW_THRESHOLD
        self._hnsw_opts = {"m": 32, "ef_search": 128}
        self._dim, self._normalize, self._storage = flat.dim, flat.normalize, flat.storage
        self._impl, self._backend = flat, "flat"
        if backend in ("faiss", "hnsw"):
            self._migrate(backend)
        return self

    def _migrate(self, backend: str) -> None:
        ids, vecs, labels, domains = self.vectors()
        new = _faiss(backend, self._dim, self._normalize, self._hnsw_opts)
        if len(ids):
            new.add(ids, vecs, labels, domains)
        self._impl, self._backend = new, backend


def _faiss(kind: str, dim: int, normalize: bool, opts: dict[str, int]) -> Any:
    from routecore.core._faiss_backend import FaissIndex  # faiss is optional and heavy

    return FaissIndex(kind, dim, normalize, **opts)
