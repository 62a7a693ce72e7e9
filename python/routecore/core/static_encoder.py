"""`StaticEncoder`: the :class:`~routecore.core.encoder.Encoder` interface over a static embedding table.

A table distilled by ``routecore models distill`` (:mod:`routecore.hub.distill`) embeds a text as
the mean of its tokenizer pieces' rows, L2-normalised, in Rust (`routecore._native.StaticEncoder`):
no transformer, no ONNX Runtime, no query cache (a lookup costs less than the cache would), and
each text on its own, so embeddings never depend on the batch. ``Encoder.load("NAME-static")``
returns one: this module registers the ``"static"`` folder kind with
:func:`routecore.core.encoder.register_folder_kind` (``routecore.core`` imports it), so the encoder module
does not import this one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

from routecore import _native
from routecore.core.encoder import (
    CHARS_PER_TOKEN,
    CacheStats,
    EncodeOutput,
    Encoder,
    Kind,
    as_texts,
    folder_kind,
    register_folder_kind,
)

#: The table file, which :attr:`StaticEncoder.model_id` hashes.
EMBEDDINGS = "embeddings.f16"


#: The ``"kind"`` in a static table's ``config.json``.
KIND = "static"


def is_static(folder: Path) -> bool:
    """Whether ``folder``'s ``config.json`` says ``"kind": "static"``."""
    return folder_kind(folder) == KIND


class StaticEncoder(Encoder):
    """A loaded static table; thread-safe. Same calls as :class:`Encoder` (``kind`` is accepted
    and has no effect: a static table has no prefixes); :attr:`threads` is 1 and the cache is empty."""

    def __init__(self, native: _native.StaticEncoder, path: Path):  # noqa: D107
        self._static = native
        self.path = path
        self._model_id: str | None = None
        self._files_id: str | None = None

    @classmethod
    def open(cls, folder: Path) -> "StaticEncoder":
        """Open the static model folder ``folder``."""
        return cls(_native.StaticEncoder.load(str(folder)), folder)

    @property
    def dim(self) -> int:
        """The width of the embeddings."""
        return self._static.dim

    @property
    def threads(self) -> int:
        """1: a query is a table lookup (a large batch splits across the cores)."""
        return 1

    @property
    def max_length(self) -> int:
        """Pieces read of a text."""
        return self._static.max_length

    @property
    def truncations(self) -> int:
        """Texts truncated at ``max_length`` since load."""
        return self._static.truncations

    @property
    def rows(self) -> int:
        """Pieces that have a row."""
        return self._static.rows

    @property
    def source_model(self) -> str | None:
        """The model id of the encoder the table was distilled from."""
        return self._static.source_model

    @property
    def onnx_path(self) -> Path:
        """The table file (there is no ONNX graph): what :attr:`model_id` hashes."""
        return self.path / EMBEDDINGS

    def _file_digest(self) -> str:
        h = hashlib.sha256()
        with open(self.onnx_path, "rb") as f:
            while chunk := f.read(1 << 22):
                h.update(chunk)
        return h.hexdigest()

    def encode_with_stats(self, texts: str | Sequence[str], kind: Kind = "query") -> EncodeOutput:
        """Unit embeddings of ``texts`` and what they cost (:class:`EncodeOutput`), as
        :meth:`Encoder.encode_with_stats` returns them."""
        cap = self.max_length * CHARS_PER_TOKEN
        batch = [t[:cap] for t in as_texts(texts)]
        emb, truncated, st = self._static.encode(batch, kind)
        return EncodeOutput(emb, tuple(truncated), st.tokenize_ns / 1e6, st.infer_ns / 1e6, 0)

    def encode_background(self, texts: str | Sequence[str], kind: Kind = "query") -> EncodeOutput:
        """:meth:`encode_with_stats` (a table lookup takes one thread anyway)."""
        return self.encode_with_stats(texts, kind)

    def tokenize(self, texts: str | Sequence[str], kind: Kind = "query") -> list[list[int]]:
        """Piece ids (no special tokens, truncated)."""
        return self._static.tokenize(as_texts(texts), kind)[0]

    def cache_stats(self) -> CacheStats:
        """All zero: a table has no query cache (a lookup costs less than a cache hit)."""
        return CacheStats(hits=0, misses=0, size=0, capacity=0)

    def clear_cache(self) -> None:
        """Nothing to clear (no query cache)."""
        return None

    def __repr__(self) -> str:
        return f"StaticEncoder(path={str(self.path)!r}, dim={self.dim}, rows={self.rows})"


register_folder_kind(KIND, StaticEncoder.open)
