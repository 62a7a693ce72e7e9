"""Type stubs of the native extension (hand-written; keep in sync with rust/python)."""

from os import PathLike
from typing import Sequence, final

import numpy as np
import numpy.typing as npt
from typing_extensions import TypeAlias

# The module's ``__all__`` (pyo3 fills it with every name added to the module, in order).
__all__ = [
    "__version__",
    "RoutecoreError",
    "DimensionMismatchError",
    "EmptyIndexError",
    "BadKError",
    "UnknownIdError",
    "DuplicateIdError",
    "NonFiniteError",
    "InvalidArgumentError",
    "CorruptIndexError",
    "ModelError",
    "RuntimeUnavailableError",
    "StorageIOError",
    "FlatIndex",
    "StepParams",
    "StepResult",
    "score_many",
    "RouteHead",
    "HeadReading",
    "Encoder",
    "EncodeStats",
    "CacheCounters",
    "StaticEncoder",
    "LexicalIndex",
    "EntitySet",
    "lexical_tokens",
    "topk",
    "softmax",
    "dot_rows",
    "aggregate",
    "apply_affinity",
    "detect_collision",
    "simd_level",
    "parallel_cutoff",
    "set_parallel_cutoff",
    "read_bandwidth",
    "route_parallel_cutoff",
    "set_route_parallel_cutoff",
]

__version__: str

class RoutecoreError(Exception): ...
class DimensionMismatchError(RoutecoreError): ...
class EmptyIndexError(RoutecoreError): ...
class BadKError(RoutecoreError): ...
class UnknownIdError(RoutecoreError): ...
class DuplicateIdError(RoutecoreError): ...
class NonFiniteError(RoutecoreError): ...
class InvalidArgumentError(RoutecoreError): ...
class CorruptIndexError(RoutecoreError): ...
class ModelError(RoutecoreError): ...
class RuntimeUnavailableError(RoutecoreError): ...
class StorageIOError(RoutecoreError): ...

# Stub-only alias (private, so stubtest does not look for it at runtime).
_F32: TypeAlias = npt.NDArray[np.float32]

@final
class StepParams:
    """The parameters of one routing step, built once per policy (keyword-only)."""

    def __new__(
        cls,
        *,
        aggregation: str = "max",
        top_n: int = 3,
        temperature: float = 0.05,
        active_domains: list[str] = ...,
        boost: float = 1.15,
        penalty: float = 0.7,
        collision_gap: float = 0.08,
        top_exemplars: int = 5,
        exact_top: int = 10,
        exact_band: float = 0.0,
        exact_floor: float = ...,
        probabilities: bool = True,
        exact_routes: list[str] = ...,
    ) -> StepParams: ...

def score_many(
    indexes: list[FlatIndex], query: _F32, params: list[StepParams], biases: list[_F32 | None]
) -> list[StepResult]:
    """One routing step per index on one query vector, in one call (GIL released once)."""
    ...

@final
class RouteHead:
    """A trained linear head, ``softmax(q @ weights + bias)``, read in a route table's order.
    ``route_cols[i]`` is the class route ``i`` reads and ``oos_col`` the out-of-scope class's;
    ``len(bias)`` marks a class the head lacks (probability 0)."""

    def __new__(cls, weights: _F32, bias: _F32, route_cols: list[int], oos_col: int) -> RouteHead: ...
    def read(self, query: _F32, gain: _F32 | None = None, temperature: float = 1.0) -> HeadReading:
        """The head's reading of one query; ``gain`` (one per route) moves the route
        probabilities as ``softmax(log p + gain / temperature)`` when any is non-zero (a
        gain of ``-inf`` leaves a route out: probability 0)."""
    @property
    def routes(self) -> int: ...

@final
class HeadReading:
    """Route probabilities in table order (renormalised over the routes, after the gain), the
    best route's probability and the out-of-scope class's, both under the full softmax."""

    @property
    def probs(self) -> _F32: ...
    @property
    def best(self) -> float: ...
    @property
    def out_of_scope(self) -> float: ...

@final
class StepResult:
    """One routing step's arrays (numpy, moved without copies); per-route arrays in label-code
    order. ``dense`` and ``top_dense`` are set when the step had a bias."""

    @property
    def raw(self) -> _F32: ...
    @property
    def bound(self) -> _F32: ...
    @property
    def adjusted(self) -> _F32: ...
    @property
    def probs(self) -> _F32: ...
    @property
    def route_domains(self) -> npt.NDArray[np.uint32]: ...
    @property
    def top_scores(self) -> _F32: ...
    @property
    def top_ids(self) -> npt.NDArray[np.uint64]: ...
    @property
    def top_labels(self) -> npt.NDArray[np.uint32]: ...
    @property
    def collision(self) -> tuple[int, int, float] | None:
        """``(first, second, gap)`` label codes of a collision between the top two routes."""
    @property
    def dense(self) -> _F32 | None: ...
    @property
    def top_dense(self) -> _F32 | None: ...

# A pyo3 class: not subclassable at runtime.
@final
class FlatIndex:
    """Flat exact index; inputs must be C-contiguous float32 (rank 1 or 2)."""

    # pyo3 ``#[new]``: the constructor is ``__new__`` (``__init__`` is object's).
    def __new__(cls, dim: int, storage: str = "f32", normalize: bool = True) -> FlatIndex: ...
    def add(
        self,
        ids: npt.NDArray[np.uint64],
        vectors: _F32,
        labels: list[str] | None = None,
        domains: list[str] | None = None,
    ) -> None: ...
    def update(
        self,
        ids: npt.NDArray[np.uint64],
        vectors: _F32,
        labels: list[str] | None = None,
        domains: list[str] | None = None,
    ) -> None: ...
    def remove(self, ids: npt.NDArray[np.uint64]) -> None: ...
    def search(
        self, queries: _F32, k: int
    ) -> tuple[_F32, npt.NDArray[np.uint64], npt.NDArray[np.uint32]]: ...
    def score_all(self, query: _F32) -> _F32: ...
    def score_routes(
        self, query: _F32, params: StepParams | None = None, bias: _F32 | None = None
    ) -> StepResult:
        """One routing step (:class:`StepResult`). With int8 storage, routes
        outside the exact set (``exact_top``/``exact_band``/``exact_floor``/``exact_routes``) keep
        an int8 estimate of ``raw`` with ``|error| <= bound``; ``bound`` is 0
        for exact routes and always 0 for f32/f16 storage. ``probs`` is empty
        when ``probabilities`` is false.

        ``bias``: float32, one entry per label code (``label_names()`` order),
        finite or -inf, added to each route's aggregated cosine before affinity,
        softmax, the collision, the int8 contenders and the best exemplars; -inf
        removes the route (probability 0, never in the collision or the top).
        With a bias, ``raw`` is cosine + bias, ``adjusted`` is ``raw`` after
        affinity (-inf for removed routes), ``top_scores`` are exemplar cosine +
        its route's bias, and two more arrays are set: ``dense`` (the aggregated
        cosine alone) and ``top_dense`` (each best exemplar's cosine). Without
        one, the result is that of the plain step, and those two are None."""
        ...
    def score_routes_batch(
        self, queries: _F32, params: list[StepParams], biases: list[_F32 | None]
    ) -> list[StepResult]:
        """:meth:`score_routes` of each row of ``queries`` (``n x dim``), row ``i`` with
        ``params[i]`` and ``biases[i]``: the same results, in one call (the GIL released once, the
        exemplar table read once per tile for all of them; int8 storage scores each on its own)."""
        ...
    def label_names(self) -> list[str]: ...
    def domain_names(self) -> list[str]: ...
    def entries(self) -> tuple[npt.NDArray[np.uint64], _F32, list[str], list[str]]:
        """(ids, vectors, labels, domains) in row order, read under one lock."""
        ...
    @property
    def dim(self) -> int: ...
    @property
    def storage(self) -> str: ...
    @property
    def normalize(self) -> bool: ...
    @property
    def nbytes(self) -> int: ...
    def __len__(self) -> int: ...
    def save(self, path: str | PathLike[str]) -> None: ...
    @staticmethod
    def load(path: str | PathLike[str]) -> FlatIndex: ...

# A pyo3 class: not subclassable at runtime.
@final
class EntitySet:
    """Dictionary terms (one Aho-Corasick automaton over the folded query; whole words,
    case-insensitive, accent-insensitive with ``fold_accents``) and regex patterns
    (``routecore_core::entities``). ``find`` releases the GIL."""

    def __new__(
        cls,
        dictionaries: list[tuple[str, list[str]]],
        patterns: list[tuple[str, str]],
        fold_accents: bool = True,
    ) -> EntitySet: ...
    def find(self, text: str) -> list[tuple[str, str, int, int]]:
        """(kind, value, start, end) of each entity (character offsets)."""
        ...
    def find_many(self, texts: list[str]) -> list[list[tuple[str, str, int, int]]]: ...
    def __len__(self) -> int: ...

# A pyo3 class: not subclassable at runtime.
@final
class LexicalIndex:
    """BM25 index over short texts, each with a label code (see ``routecore_core::lexical``).

    Tokens: ``tokens(text)``; terms: the tokens stemmed by ``stemmer`` (``"none"``, ``"english"``,
    ``"french"``: Snowball, on plain ASCII words of 3+ letters). Stop words are folded and stemmed
    like tokens and never indexed.
    Queries take a shared lock and release the GIL."""

    NO_DOC: int
    """``exclude_doc`` entry meaning "no document" (2**32 - 1)."""

    # pyo3 ``#[new]``; defaults: no stop words, k1 = 1.2, b = 0.75 (Rust constants, so the runtime
    # signature shows ``...``), no stemmer. An unknown stemmer raises InvalidArgumentError.
    def __new__(
        cls, stop_words: list[str] = ..., k1: float = ..., b: float = ..., stemmer: str = "none"
    ) -> LexicalIndex: ...
    def add(self, texts: list[str], labels: npt.NDArray[np.uint32] | list[int]) -> None:
        """Documents get ids ``len(self) ..``, in order; idf and lengths are updated for all."""
    def score_labels(self, query: str, n_labels: int) -> _F32:
        """Per label code ``0..n_labels``: the best BM25 over its documents (0: no shared token)."""
    def score_labels_covered(self, query: str, n_labels: int) -> tuple[_F32, float]:
        """``(score_labels(query, n_labels), coverage(query))`` from one tokenization."""
    def label_bias(self, query: str, n_labels: int, weight: float, lead: int = 0) -> _F32 | None:
        """What each label's cosine gains in hybrid scoring: ``weight`` x its best BM25 over the query's
        best x the query's coverage, label ``l`` at ``lead + l`` after ``lead`` zeros; None when ``weight``
        is 0 or no label scores above 0."""
    def score_labels_batch(
        self, queries: list[str], n_labels: int, exclude_doc: npt.NDArray[np.uint32] | list[int] | None = None
    ) -> _F32:
        """(len(queries), n_labels) float32; ``exclude_doc[i]`` (``NO_DOC``: none) is left out of query i's
        label maxima (leave-one-out; idf and average length still count it)."""
    def score_docs(self, query: str) -> _F32:
        """BM25 against every document, in document order."""
    def coverage(self, query: str, exclude: npt.NDArray[np.uint32] | list[int] | None = None) -> float:
        """Idf-weighted share of the query's distinct non-stop tokens that some document (not in
        ``exclude``) holds, in [0, 1]; a token none holds weighs as one of document frequency 0."""
    def coverage_batch(
        self, queries: list[str], excluded: Sequence[npt.NDArray[np.uint32] | list[int]] | None = None
    ) -> _F32:
        """``coverage`` of each query, ``excluded[i]`` left out of query i."""
    def score_labels_covered_batch(
        self,
        queries: list[str],
        n_labels: int,
        excluded: Sequence[npt.NDArray[np.uint32] | list[int]] | None = None,
    ) -> tuple[_F32, _F32]:
        """``score_labels_covered`` of each query, from one tokenization each: (len(queries), n_labels)
        scores and (len(queries),) coverages, ``excluded[i]`` left out of query i (its label maxima and
        coverage; idf and average length still count them)."""
    @staticmethod
    def tokens(text: str) -> list[str]: ...
    def terms(self, text: str) -> list[str]:
        """The index terms of ``text``: ``tokens(text)`` stemmed by this index's stemmer (stop words kept)."""
    def labels(self) -> npt.NDArray[np.uint32]:
        """The label code of each document (a copy)."""
    def stop_words(self) -> list[str]:
        """The folded (and stemmed) stop words, sorted."""
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> LexicalIndex: ...
    def save(self, path: str | PathLike[str]) -> None: ...
    @staticmethod
    def load(path: str | PathLike[str]) -> LexicalIndex: ...
    def __len__(self) -> int: ...
    @property
    def n_terms(self) -> int: ...
    @property
    def memory_bytes(self) -> int:
        """Heap bytes of the index (tables by bucket, arrays by capacity). Not counted: the per-thread query
        buffer, and the per-thread stem caches all stemmed indexes share (at most 8,192 words a
        stemmer and thread)."""
    @property
    def k1(self) -> float: ...
    @property
    def b(self) -> float: ...
    @property
    def stemmer(self) -> str: ...

def lexical_tokens(text: str) -> list[str]:
    """The tokens of ``text`` as ``LexicalIndex`` sees them."""

# A pyo3 class: not subclassable at runtime.
@final
class EncodeStats:
    """The counters of one ``encode`` call."""

    @property
    def tokenize_ns(self) -> int: ...
    @property
    def infer_ns(self) -> int: ...
    @property
    def cache_hits(self) -> int: ...

# A pyo3 class: not subclassable at runtime.
@final
class CacheCounters:
    """The query cache's counters."""

    @property
    def hits(self) -> int: ...
    @property
    def misses(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def capacity(self) -> int: ...

# A pyo3 class: not subclassable at runtime.
@final
class Encoder:
    @staticmethod
    def load(
        path: str | PathLike[str],
        runtime_path: str | PathLike[str],
        variant: str | None = None,
        threads: int | None = None,
        cache_size: int = 1024,
        spinning: bool = True,
    ) -> Encoder: ...
    def encode(self, texts: list[str], kind: str = "query") -> tuple[_F32, list[int], EncodeStats]: ...
    def encode_background(
        self, texts: list[str], kind: str = "query"
    ) -> tuple[_F32, list[int], EncodeStats]: ...
    def tokenize(self, texts: list[str], kind: str = "query") -> tuple[list[list[int]], list[bool]]: ...
    def cache_stats(self) -> CacheCounters: ...
    def clear_cache(self) -> None: ...
    @property
    def dim(self) -> int: ...
    @property
    def threads(self) -> int: ...
    @property
    def truncations(self) -> int: ...
    @property
    def onnx_path(self) -> str: ...
    @property
    def onnx_sha256(self) -> str: ...
    @property
    def max_length(self) -> int: ...
    @property
    def pooling(self) -> str: ...
    @property
    def query_prefix(self) -> str: ...

# A pyo3 class: not subclassable at runtime.
@final
class StaticEncoder:
    @staticmethod
    def load(path: str | PathLike[str]) -> StaticEncoder: ...
    def encode(self, texts: list[str], kind: str = "query") -> tuple[_F32, list[int], EncodeStats]: ...
    def tokenize(self, texts: list[str], kind: str = "query") -> tuple[list[list[int]], list[bool]]: ...
    @property
    def dim(self) -> int: ...
    @property
    def rows(self) -> int: ...
    @property
    def truncations(self) -> int: ...
    @property
    def max_length(self) -> int: ...
    @property
    def source_model(self) -> str | None: ...

def topk(scores: _F32, k: int) -> tuple[_F32, npt.NDArray[np.uint64]]: ...
def softmax(x: _F32, temperature: float = 1.0) -> _F32: ...
def dot_rows(rows: _F32, q: _F32) -> _F32:
    """``rows @ q`` (``rows`` C-contiguous ``[n, d]``) on this thread; lets the GIL go from 2**16 elements."""

def aggregate(
    scores: _F32, routes: npt.NDArray[np.uint32], n_routes: int, how: str = "max", n: int = 3
) -> _F32: ...

# Defaults boost = 1.15, penalty = 0.7 and max_gap = 0.08 are Rust constants (``...`` in the runtime
# signature).
def apply_affinity(
    scores: _F32,
    domains: npt.NDArray[np.uint32],
    active: list[bool],
    boost: float = ...,
    penalty: float = ...,
) -> _F32:
    """Each score times its factor when >= 0, divided by it when negative (``boost`` where the domain
    is active, ``penalty`` elsewhere): a boost never lowers a score and a penalty never raises one, for
    any sign."""

def detect_collision(
    scores: _F32, domains: npt.NDArray[np.uint32], max_gap: float = ...
) -> tuple[int, int, float] | None: ...
def simd_level() -> str:
    """Kernels in use: "avx2+fma" or "portable", then "+avx512f" (f32/f16 scans) and "+avx512vnni" (int8
    scans) where the CPU has them (capped by ROUTECORE_SIMD: "avx2" drops both, "portable" all)."""

def parallel_cutoff() -> int: ...
def set_parallel_cutoff(elements: int) -> None: ...
def route_parallel_cutoff() -> int: ...
def set_route_parallel_cutoff(elements: int) -> None: ...
def read_bandwidth(megabytes: int = 1024, threads: int = 1, reps: int = 5) -> float: ...
