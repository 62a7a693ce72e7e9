"""The bundled background set: generic out-of-scope queries in nine languages, and the
parallel set: everyday requests with their translations into five languages.

Calibration scores the background against a router's exemplars to place the
out-of-scope cut, the tool floor and the lexical stop words, and the parallel set
to adapt the policy to queries in other languages (routecore.languages). See
scripts/make_background.py for how both were made, and README.md for their sources
and licences.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

#: Where the background set lives.
BACKGROUND_FILE = Path(__file__).resolve().parent / "data" / "background.jsonl"


@lru_cache(maxsize=1)
def _rows() -> tuple[dict[str, str], ...]:
    return tuple(json.loads(line) for line in BACKGROUND_FILE.read_text(encoding="utf-8").splitlines() if line.strip())


def background_texts() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The bundled background set: (texts, sources)."""
    return tuple(r["text"] for r in _rows()), tuple(r["source"] for r in _rows())


def background_languages() -> tuple[str, ...]:
    """The language of each background sentence (ISO 639-1), in the order of :func:`background_texts`."""
    return tuple(r["lang"] for r in _rows())


_EMBEDDED: dict[tuple[str, str], np.ndarray] = {}


def _embedded(which: str, texts: list[str], encoder: Any) -> np.ndarray:
    """``texts`` embedded by ``encoder``, kept per set and model for the process."""
    key = (which, encoder.model_id)
    if key not in _EMBEDDED:
        _EMBEDDED[key] = np.concatenate([encoder.encode_with_stats(texts[i:i + 64]).embeddings for i in range(0, len(texts), 64)])
    return _EMBEDDED[key]


def background_vectors(encoder: Any) -> np.ndarray:
    """The background set embedded by ``encoder`` (kept per model for the process)."""
    return _embedded("background", list(background_texts()[0]), encoder)


#: Everyday requests with their translations (routecore.languages; scripts/make_background.py).
PARALLEL_FILE = BACKGROUND_FILE.with_name("parallel.jsonl")


@lru_cache(maxsize=1)
def parallel_rows() -> tuple[tuple[int, str, str], ...]:
    """The bundled parallel set: (sentence id, language, text) per row."""
    rows = (json.loads(line) for line in PARALLEL_FILE.read_text(encoding="utf-8").splitlines() if line.strip())
    return tuple((int(r["id"]), str(r["lang"]), str(r["text"])) for r in rows)


def parallel_vectors(encoder: Any) -> np.ndarray:
    """The parallel set embedded by ``encoder``, in the order of :func:`parallel_rows` (kept per model)."""
    return _embedded("parallel", [t for _, _, t in parallel_rows()], encoder)
