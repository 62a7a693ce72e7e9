"""The peer of ``few_shot.py --peer``: semantic-router 1.1.1 on the same encoder, exemplars and queries.

``IndexedRouter(encoder, routes, top_k=5, aggregation="mean")`` as its README builds it, with no
``fit`` (a user with k utterances has nothing to fit on), at its default ``confidence_threshold``
(None: every query gets a route) and at 0.5; the encoder is routecore's, answering from the vectors
``few_shot.py`` already holds, so both routers see the same embeddings.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from semantic_router import Route
from semantic_router.routers import IndexedRouter

from peer_semantic_router import CachedRoutecoreEncoder

#: The peer's variants: its default threshold (None) and 0.5.
THRESHOLDS = {"sr": None, "sr@0.5": 0.5}


def peer_encoder(enc: Any, texts: Sequence[str], vectors: np.ndarray) -> Any:
    """routecore's encoder as semantic-router's, answering ``texts`` from ``vectors``."""
    wrapped = CachedRoutecoreEncoder(enc, name="routecore")
    wrapped.preload(list(texts), list(vectors))
    return wrapped


def peer_figures(
    wrapped: Any, routes: Sequence[Any], texts: Sequence[str], gold: np.ndarray
) -> dict[str, float]:
    """``{variant}_{routed,prec,right}`` for each variant of :data:`THRESHOLDS` (shares, as few_shot's:
    routed over in-scope queries, precision among every routed query, out-of-scope ones counting wrong)."""
    ins = gold != "oos"
    out: dict[str, float] = {}
    for name, threshold in THRESHOLDS.items():
        sr = IndexedRouter(
            wrapped,
            [Route(name=r.name, utterances=list(r.utterances)) for r in routes],
            top_k=5,
            aggregation="mean",
            confidence_threshold=threshold,
        )
        pred = np.array([sr(t).name for t in texts], dtype=object)
        routed = pred != None  # noqa: E711 (elementwise on an object array)
        right = routed & (pred == gold)
        out[f"{name}_routed"] = float(routed[ins].mean())
        out[f"{name}_prec"] = float(right[routed].mean()) if routed.any() else float("nan")
        out[f"{name}_right"] = float(right[ins].mean())
    return out
