"""The switch of routecore's on-disk caches: ``ROUTECORE_NO_CACHE=1`` turns off the command line's
config cache (:mod:`routecore.routers.config_cache`) and the cached embeddings of the calibration sets
(:mod:`routecore.core.background`). It imports nothing of routecore, so both can read it."""

from __future__ import annotations

import os

NO_CACHE_ENV = "ROUTECORE_NO_CACHE"


def enabled() -> bool:
    """Whether the on-disk caches are on (``$ROUTECORE_NO_CACHE`` unset, or not 1/true/yes/on)."""
    return os.environ.get(NO_CACHE_ENV, "").strip().upper() not in ("1", "TRUE", "YES", "ON")
