"""The command line's cache of embedded configs: a bundle per (config, overlay, model, routecore version).

Building a router from a config embeds every exemplar and calibrates the policy
(seconds with the bundled model, most of a cold ``routecore route``); a bundle
loads in milliseconds. The CLI keeps one bundle per content hash under
``$ROUTECORE_HOME/configs/`` (the cache root that also holds pulled models), so
a second call with the same config skips the embedding. ``--no-cache`` (or
``ROUTECORE_NO_CACHE=1``) turns it off; the library itself never uses it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable

# Re-exported (``X as X``): the switch lives below this module, where routecore.core.background reads it.
from routecore.core.cache_env import NO_CACHE_ENV as NO_CACHE_ENV
from routecore.core.cache_env import enabled as enabled
from routecore.errors import RoutecoreError


def key(files: list[Path | None], model_id: str) -> str:
    """The cache key of the config files' bytes, the model, routecore's version and the
    policy's defaults (a config that leaves a field unset follows them)."""
    from routecore._native import __version__
    from routecore.config.config_files import read_text
    from routecore.decide.policy import Policy
    from routecore.routers import bundle

    h = hashlib.sha256(f"{model_id}\0{__version__}\0{bundle.BUNDLE_VERSION}\0{Policy()!r}".encode())
    for f in files:
        # read as a config file is (a FIFO or /dev/zero refused, a size limit), not read_bytes()
        h.update(b"\0" + (read_text(f).encode("utf-8") if f is not None else b"-"))
    return h.hexdigest()[:32]


def cached_router(files: list[Path | None], encoder: Any, build: Callable[[], Any], **load_kw: Any) -> Any:
    """The router of a cached bundle for ``files`` and ``encoder``, else ``build()`` saved into the cache.

    A cache that cannot be read is rebuilt; one that cannot be written is skipped."""
    from routecore.hub.models import home
    from routecore.routers.router import Router

    # an edited config.json or a swapped tokenizer.json makes another key: the bundle is built again
    model = f"{encoder.model_id}/{getattr(encoder, 'files_id', '')}"
    d = home() / "configs" / key(files, model)
    if (d / "bundle.json").is_file():
        try:
            return Router.load(d, encoder=encoder, **load_kw)
        except (RoutecoreError, OSError, ValueError):
            pass  # damaged or from another build: make it again
    router = build()
    try:
        d.parent.mkdir(parents=True, exist_ok=True)
        router.save(d)
    except (RoutecoreError, OSError):
        pass  # a read-only cache only costs the next call its embedding
    return router
