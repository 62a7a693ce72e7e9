"""The bundled background set: generic out-of-scope queries in nine languages, and the
parallel set: everyday requests with their translations into five languages.

Calibration scores the background against a router's exemplars to place the
out-of-scope cut, the tool floor and the lexical stop words, and the parallel set
to adapt the policy to queries in other languages (routecore.calibrate.languages). See
scripts/make_background.py for how both were made, and README.md for their sources
and licences.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from routecore.core.atomic import temp_beside

#: Where the background set lives.
BACKGROUND_FILE = Path(__file__).resolve().parents[1] / "data" / "background.jsonl"


@lru_cache(maxsize=1)
def _rows() -> tuple[dict[str, str], ...]:
    return tuple(
        json.loads(line) for line in BACKGROUND_FILE.read_text(encoding="utf-8").splitlines() if line.strip()
    )


def background_texts() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The bundled background set: (texts, sources)."""
    return tuple(r["text"] for r in _rows()), tuple(r["source"] for r in _rows())


def background_languages() -> tuple[str, ...]:
    """The language of each background sentence (ISO 639-1), in the order of :func:`background_texts`."""
    return tuple(r["lang"] for r in _rows())


_EMBEDDED: dict[tuple[str, str], np.ndarray] = {}
#: The embeddings of both sets, shipped in a bundled model's folder (scripts/make_calibration_sets.py)
#: or cached for any other model under ``$ROUTECORE_HOME/calibration/``.
SETS_FILE = "calibration-sets.npz"


def sets_digest() -> str:
    """A digest of both sets' texts: embeddings of other texts are never reused."""
    h = hashlib.sha256()
    for t in background_texts()[0] + tuple(t for _, _, t in parallel_rows()):
        h.update(t.encode("utf-8") + b"\x1f")
    return h.hexdigest()[:16]


def _stored(path: Path, model_id: str) -> dict[str, np.ndarray] | None:
    """Both sets' embeddings from ``path`` when it holds these texts' by this model: the same ONNX
    file (the id's hash), whatever its folder is called."""
    try:
        with np.load(path, allow_pickle=False) as z:
            if (
                str(z["model_id"]).rsplit(":", 1)[-1] != model_id.rsplit(":", 1)[-1]
                or str(z["digest"]) != sets_digest()
            ):
                return None
            return {k: np.ascontiguousarray(z[k], dtype=np.float32) for k in ("background", "parallel")}
    except (OSError, KeyError, ValueError):
        return None


#: Rows of a shipped set a model must reproduce when it loads (:func:`check_reference`).
REFERENCE_ROWS = 3
#: The cosine they must keep: the same computation, so only float noise between CPUs' kernels
#: (e5: 0.9999998); all-MiniLM-L6-v2's tokenizer in e5's folder gave 0.741, ``cls`` pooling 0.879.
REFERENCE_COSINE = 0.99


def check_reference(encoder: Any) -> None:
    """A :class:`routecore.errors.ModelError` when the model folder ships its sets' embeddings
    (``calibration-sets.npz``, for this ONNX file) and the model as loaded (tokenizer, pooling,
    prefixes) does not reproduce the first :data:`REFERENCE_ROWS` of them: a swapped
    ``tokenizer.json`` or an edited ``config.json`` would otherwise embed, and misroute, silently."""
    from routecore.errors import ModelError

    path = Path(encoder.onnx_path).parent / SETS_FILE
    if not path.is_file():
        return
    # The model id hashes the ONNX file (~0.07 s for e5) while the rows encode: both release the GIL.
    hashing = threading.Thread(target=lambda: encoder.model_id, daemon=True)
    hashing.start()
    # One text a call: a batch would open the batch worker sessions (0.6 s for e5 on 2 cores) that a
    # CLI call never needs; the rows are batch-invariant either way.
    got = np.concatenate([encoder.encode([t]) for t in background_texts()[0][:REFERENCE_ROWS]])
    encoder.clear_cache()  # a fresh encoder: its query cache and counters as the user gets them
    hashing.join()
    sets = _stored(path, encoder.model_id)
    if sets is None:  # not this model's sets: nothing to check against
        return
    ref = sets["background"][:REFERENCE_ROWS]
    cos = (got * ref).sum(axis=1) / np.maximum(
        np.linalg.norm(got, axis=1) * np.linalg.norm(ref, axis=1), 1e-12
    )
    if float(cos.min()) < REFERENCE_COSINE:
        raise ModelError(
            f"{encoder.path}: the model does not reproduce the reference embeddings it ships ({path.name}: "
            f"cosine {float(cos.min()):.3f} < {REFERENCE_COSINE}); its tokenizer.json or config.json is not "
            "the one the model was made with"
        )


def _cache_path(model_id: str, files_id: str | None = None) -> Path | None:
    """Where another model's set embeddings are cached (None: caching off, ROUTECORE_NO_CACHE=1),
    per ONNX file and, when the encoder says it, per tokenizer and config (``Encoder.files_id``)."""
    from routecore.core.cache_env import enabled
    from routecore.hub.models import home

    name = model_id.replace(":", "_") + (f"_{files_id}" if files_id else "")
    return home() / "calibration" / f"{name}.npz" if enabled() else None


def write_sets(path: Path, model_id: str, sets: dict[str, np.ndarray]) -> None:
    """Write both sets' embeddings to ``path`` atomically (a temporary name, then a rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = temp_beside(path, f".{path.stem}.")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(
                f,
                model_id=np.array(model_id),
                digest=np.array(sets_digest()),
                background=sets["background"],
                parallel=sets["parallel"],
            )
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def encode_sets(encoder: Any) -> dict[str, np.ndarray]:
    """Both sets embedded by ``encoder``, 64 texts a call."""
    out = {}
    for which, texts in (
        ("background", list(background_texts()[0])),
        ("parallel", [t for _, _, t in parallel_rows()]),
    ):
        out[which] = np.concatenate(
            [encoder.encode_with_stats(texts[i : i + 64]).embeddings for i in range(0, len(texts), 64)]
        )
    return out


def _embedded(which: str, encoder: Any) -> np.ndarray:
    """One set embedded by ``encoder``, kept per model for the process: from the model folder's
    shipped file, else from the cache, else encoded (and cached)."""
    model_id = encoder.model_id
    if (which, model_id) not in _EMBEDDED:
        onnx = getattr(encoder, "onnx_path", None)
        sets = _stored(Path(onnx).parent / SETS_FILE, model_id) if onnx is not None else None
        cache = _cache_path(model_id, getattr(encoder, "files_id", None)) if sets is None else None
        if sets is None and cache is not None:
            sets = _stored(cache, model_id)
        if sets is None:
            sets = encode_sets(encoder)
            if cache is not None:
                try:
                    write_sets(cache, model_id, sets)
                except OSError:  # a read-only cache: embed again next time
                    pass
        for k, v in sets.items():
            _EMBEDDED[(k, model_id)] = v
    return _EMBEDDED[(which, model_id)]


def background_vectors(encoder: Any) -> np.ndarray:
    """The background set embedded by ``encoder`` (kept per model for the process)."""
    return _embedded("background", encoder)


#: Everyday requests with their translations (routecore.calibrate.languages; scripts/make_background.py).
PARALLEL_FILE = BACKGROUND_FILE.with_name("parallel.jsonl")


@lru_cache(maxsize=1)
def parallel_rows() -> tuple[tuple[int, str, str], ...]:
    """The bundled parallel set: (sentence id, language, text) per row."""
    rows = (
        json.loads(line) for line in PARALLEL_FILE.read_text(encoding="utf-8").splitlines() if line.strip()
    )
    return tuple((int(r["id"]), str(r["lang"]), str(r["text"])) for r in rows)


def parallel_vectors(encoder: Any) -> np.ndarray:
    """The parallel set embedded by ``encoder``, in the order of :func:`parallel_rows` (kept per model)."""
    return _embedded("parallel", encoder)
