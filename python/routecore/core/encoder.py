"""`Encoder`: text → float32 embeddings through the native ONNX Runtime encoder."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Sequence

from routecore import _native
from routecore.core.cpu_share import DEFAULT_SHARE, CpuShare
from routecore.core.runtime import onnxruntime_library
from routecore.errors import InvalidArgumentError
from routecore.hub import models

if TYPE_CHECKING:  # not imported at run time: the command line loads its model while numpy imports
    import numpy as np

Kind = Literal["query", "passage"]
#: The most intra-op threads an encoder accepts (the core refuses more too).
MAX_THREADS = 1024
#: An encoder's threads at most per CPU this process may run on: more only share the same cores, and
#: a thousand threads under an address-space limit made the load hang instead of failing.
THREADS_PER_CPU = 4


def max_threads() -> int:
    """The most threads :meth:`Encoder.load` starts here: :data:`THREADS_PER_CPU` per usable CPU."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(MAX_THREADS, THREADS_PER_CPU * max(cpus, 1))


#: Texts are cut at ``max_length`` times this many characters before tokenizing.
CHARS_PER_TOKEN = 64


@dataclass(frozen=True)
class EncodeOutput:
    """Embeddings with what they cost."""

    embeddings: np.ndarray
    truncated: tuple[int, ...]
    tokenize_ms: float
    infer_ms: float
    cache_hits: int


@dataclass(frozen=True)
class CacheStats:
    """The query cache's ``hits`` and ``misses`` since load (or :meth:`Encoder.clear_cache`), the
    entries it holds (``size``) and can hold (``capacity``)."""

    hits: int
    misses: int
    size: int
    capacity: int


#: The largest query cache, in entries (its hash map is allocated up front; 2**62 made the native
#: allocation panic).
MAX_CACHE = 1 << 20


#: How :meth:`Encoder.load` opens a model folder whose ``config.json`` names its ``"kind"``, by kind. The
#: module of each such encoder registers it (:func:`register_folder_kind`), so this one imports none of
#: them; ``routecore.core`` imports them all, before any code can reach ``Encoder.load``.
_FOLDER_KINDS: dict[str, Callable[[Path], Encoder]] = {}


def register_folder_kind(kind: str, opener: Callable[[Path], Encoder]) -> None:
    """Have :meth:`Encoder.load` open model folders of ``kind`` with ``opener`` (a folder → an
    :class:`Encoder`, usually a subclass's constructor): ``routecore.core.static_encoder`` registers
    ``"static"``."""
    _FOLDER_KINDS[kind] = opener


def folder_kind(folder: Path) -> str | None:
    """The ``"kind"`` a model folder's ``config.json`` names (``"static"``), or ``None`` for a transformer
    (no kind, or no readable config: the transformer loader reports a broken folder)."""
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    kind = cfg.get("kind") if isinstance(cfg, dict) else None
    return kind if isinstance(kind, str) else None


class Encoder:
    """A loaded sentence-embedding model (ONNX Runtime, run from Rust).

    Thread-safe: many Python threads may share one encoder; the GIL is released
    while it tokenizes and runs the model.
    """

    def __init__(self, native: _native.Encoder, path: Path, background: CpuShare | None = None):
        self._native = native
        self.path = path
        #: The bound on :meth:`encode_background`'s sustained share of one core.
        self.background = background if background is not None else CpuShare()
        self._model_id: str | None = None
        self._files_id: str | None = None

    @classmethod
    def load(
        cls,
        path_or_name: str | os.PathLike[str] | None = None,
        *,
        variant: str | None = None,
        threads: int | None = None,
        cache_size: int = 1024,
        runtime_path: str | os.PathLike[str] | None = None,
        spinning: bool = True,
        background_share: float = DEFAULT_SHARE,
    ) -> "Encoder":
        """Open a model folder, a pulled or distilled model by name, or the bundled default.

        A static table (``"kind": "static"`` in ``config.json``, from ``routecore models distill``)
        opens as a :class:`routecore.core.static_encoder.StaticEncoder`; ``variant``, ``threads``,
        ``cache_size``, ``runtime_path`` and ``spinning`` do not apply to it.

        Args:
            variant: a key of ``models`` in ``config.json`` (``"int8"``, ``"fp32"``).
            threads: intra-op threads (default: physical cores).
            cache_size: LRU query-cache capacity (0 disables it).
            runtime_path: ``libonnxruntime`` to load (default: ``$ROUTECORE_ORT_LIB``,
                then the ``onnxruntime`` wheel).
            spinning: let ONNX Runtime's threads busy-wait after a run (its default).
                Turning it off frees the cores sooner but made a MiniLM encode
                ~0.6 ms slower on 2 cores (BENCHMARKS.md).
            background_share: the share of one core :meth:`encode_background` (recording a lesson)
                may take, sustained, after a burst of one second of work (:class:`CpuShare`); 1 lifts
                the bound.
        """
        if threads is not None and (
            isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= MAX_THREADS
        ):
            raise InvalidArgumentError(
                f"threads must be a whole number between 1 and {MAX_THREADS}, got {threads!r}"
            )
        if threads is not None and threads > max_threads():
            most = max_threads()
            raise InvalidArgumentError(
                f"threads={threads} is more than {most}: {THREADS_PER_CPU} per CPU this "
                "process may use (more would only share the same cores)"
            )
        if (
            isinstance(cache_size, bool)
            or not isinstance(cache_size, int)
            or not 0 <= cache_size <= MAX_CACHE
        ):
            raise InvalidArgumentError(
                f"cache_size must be a whole number between 0 and {MAX_CACHE}, got {cache_size!r}"
            )
        folder = models.resolve(path_or_name)
        opener = _FOLDER_KINDS.get(folder_kind(folder) or "")
        if opener is not None:  # a distilled table ("static"): no ONNX Runtime
            return opener(folder)
        background = CpuShare(background_share)
        models.check_model_files(folder)
        lib = onnxruntime_library(runtime_path)
        native = _native.Encoder.load(str(folder), str(lib), variant, threads, cache_size, spinning)
        encoder = cls(native, folder, background)
        from routecore.core.background import check_reference

        check_reference(encoder)  # a folder that ships reference embeddings must reproduce them
        return encoder

    @property
    def dim(self) -> int:
        """The width of the embeddings."""
        return self._native.dim

    @property
    def threads(self) -> int:
        """Threads ONNX Runtime runs the model on."""
        return self._native.threads

    @property
    def max_length(self) -> int:
        """Tokens read of a text (longer texts are truncated, and counted in :attr:`truncations`)."""
        return self._native.max_length

    @property
    def truncations(self) -> int:
        """Texts truncated at ``max_length`` since load."""
        return self._native.truncations

    @property
    def onnx_path(self) -> Path:
        """The ONNX file the model runs from."""
        return Path(self._native.onnx_path)

    @property
    def model_id(self) -> str:
        """``<folder name>:<sha256 of the ONNX file, 16 hex>`` (identifies embeddings)."""
        if self._model_id is None:
            self._model_id = f"{self.path.name}:{self._file_digest()[:16]}"
        return self._model_id

    def _file_digest(self) -> str:
        """The SHA-256 (hex) of the ONNX file, hashed by the loader while the session was built."""
        return self._native.onnx_sha256

    @property
    def files_id(self) -> str:
        """SHA-256 (16 hex) of the model's ``config.json`` and ``tokenizer.json``: what changes a vector
        besides the ONNX file that :attr:`model_id` covers (pooling, prefixes, maximum length, the
        vocabulary). Bundles and the command line's config cache record it: a bundle made before either
        file changed is refused, and the cache is rebuilt."""
        if self._files_id is None:
            h = hashlib.sha256()
            for name in ("config.json", "tokenizer.json"):
                h.update(name.encode() + b"\0")
                try:
                    h.update((self.path / name).read_bytes())
                except OSError:
                    h.update(b"-")
            self._files_id = h.hexdigest()[:16]
        return self._files_id

    def encode(self, texts: str | Sequence[str], kind: Kind = "query") -> np.ndarray:
        """Embed ``texts``: float32 ``[n, dim]`` (L2-normalised when the config says so)."""
        return self.encode_with_stats(texts, kind).embeddings

    def encode_with_stats(self, texts: str | Sequence[str], kind: Kind = "query") -> EncodeOutput:
        """Like :meth:`encode`, plus truncations, timings and cache hits.

        A text longer than ``max_length * CHARS_PER_TOKEN`` characters is cut to that
        length before tokenizing: the model only sees its first ``max_length`` tokens
        anyway, and a 10 MB query used to cost 9 s of tokenizing."""
        cap = self.max_length * CHARS_PER_TOKEN
        batch = [t[:cap] for t in as_texts(texts)]
        return _output(self._native.encode(batch, kind))

    def encode_background(self, texts: str | Sequence[str], kind: Kind = "query") -> EncodeOutput:
        """:meth:`encode_with_stats` for background work (a lesson being recorded): what the cache
        misses runs on one thread of lower priority (nice 10, on Linux), on a session of its own
        (opened on first use, about 130 MB for e5; the first of those a batch uses), so that it
        takes a core the calls being served leave idle instead of every intra-op thread, spinning
        (issue 36 §6). Embeddings agree with :meth:`encode`'s to a cosine of 0.9995 at least, as
        batched ones do. An encoder of one thread runs it on its session, at normal priority.

        Sustained, this work takes at most :attr:`background`'s share of one core: past a burst, a call
        waits before it runs (``Encoder.load(background_share=...)``)."""
        cap = self.max_length * CHARS_PER_TOKEN
        batch = [t[:cap] for t in as_texts(texts)]
        self.background.wait()
        start = time.perf_counter()
        try:
            return _output(self._native.encode_background(batch, kind))
        finally:
            self.background.spent(time.perf_counter() - start)

    def tokenize(self, texts: str | Sequence[str], kind: Kind = "query") -> list[list[int]]:
        """Token ids the model sees (prefix and special tokens included, truncated)."""
        return self._native.tokenize(as_texts(texts), kind)[0]

    def cache_stats(self) -> CacheStats:
        """The query cache's counters (:class:`CacheStats`)."""
        s = self._native.cache_stats()
        return CacheStats(hits=s.hits, misses=s.misses, size=s.size, capacity=s.capacity)

    def clear_cache(self) -> None:
        """Empty the query cache and reset its counters."""
        self._native.clear_cache()

    def __repr__(self) -> str:
        return f"Encoder(path={str(self.path)!r}, dim={self.dim}, threads={self.threads})"


def _output(native: tuple[np.ndarray, list[int], _native.EncodeStats]) -> EncodeOutput:
    emb, truncated, st = native
    return EncodeOutput(emb, tuple(truncated), st.tokenize_ns / 1e6, st.infer_ns / 1e6, st.cache_hits)


def as_texts(texts: str | Sequence[str]) -> list[str]:
    """``texts`` as a list of valid strings (lone surrogates replaced by U+FFFD); a non-string is
    an :class:`InvalidArgumentError`."""
    if isinstance(texts, str):
        return [_valid(texts)]
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise InvalidArgumentError(f"texts[{i}] is {type(t).__name__}, expected str")
        out[i] = _valid(t)
    return out


def _valid(text: str) -> str:
    """``text`` with lone surrogates (an emoji cut in half by a JSON API) replaced by U+FFFD,
    so the rest of it is still embedded; valid text is returned as it is."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
