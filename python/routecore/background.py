"""The bundled background set: generic out-of-scope queries in nine languages.

Calibration scores it against a router's exemplars to place the out-of-scope cut,
the tool floor and the lexical stop words (see scripts/make_background.py for how
the set was made, and README.md for its sources and licences).
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


_BACKGROUND: dict[str, np.ndarray] = {}


def background_vectors(encoder: Any) -> np.ndarray:
    """The background set embedded by ``encoder`` (kept per model for the process)."""
    key = encoder.model_id
    if key not in _BACKGROUND:
        texts = list(background_texts()[0])
        _BACKGROUND[key] = np.concatenate([encoder.encode_with_stats(texts[i:i + 64]).embeddings for i in range(0, len(texts), 64)])
    return _BACKGROUND[key]
