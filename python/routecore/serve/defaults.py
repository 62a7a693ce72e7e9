"""Micro-batching defaults (:mod:`routecore.serve.batcher`, which documents the measurements behind
them), in a module of their own so that the command's parser reads them without importing asyncio."""

from __future__ import annotations

#: Longest wait, in ms, for more requests to join a micro-batch.
DEFAULT_WINDOW_MS = 5.0
#: Requests per micro-batch at most.
DEFAULT_MAX_BATCH = 32
