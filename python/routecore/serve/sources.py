"""Where the sidecar's router comes from: a config file or a bundle folder, and the
stamp that tells when it changed on disk (hot reload)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Hashable, Optional, Union

from routecore.errors import ConfigError

# -- where the router comes from ------------------------------------------------------


class RouterSource:
    """A router from a config file (``config``) or a bundle folder (``bundle``), and the
    stamp that tells when it changed on disk.

    The encoder (``model``, default the bundled one) is loaded once and shared by
    every reload. A config is embedded through the command line's cache of
    embedded configs (:mod:`routecore.routers.config_cache`) unless ``cache=False``.

    ``fast_model`` (a name or folder) or ``static`` (the model's distilled table): a config is
    served behind that fast encoder (:class:`routecore.serve.fast_tier.FastTier`), loaded once too."""

    def __init__(
        self,
        config: Union[str, os.PathLike[str], None] = None,
        bundle: Union[str, os.PathLike[str], None] = None,
        *,
        overlay: Union[str, os.PathLike[str], None] = None,
        model: Optional[str] = None,
        encoder: Any = None,
        llm_url: Optional[str] = None,
        llm_model: Optional[str] = None,
        cache: bool = True,
        static: bool = False,
        fast_model: Optional[str] = None,
    ):
        if (config is None) == (bundle is None):
            raise ConfigError("give a config file or a bundle folder (one of them)")
        from routecore.serve.fast_tier import check_fast_args

        check_fast_args(static, fast_model, None if bundle is None else str(bundle))
        self.static, self.fast_model = static, fast_model
        self.fast_encoder: Any = None
        self.config = Path(config) if config is not None else None
        self.bundle = Path(bundle) if bundle is not None else None
        self.overlay = Path(overlay) if overlay is not None else None
        self.model, self.encoder, self.cache = model, encoder, cache
        self.llm_url, self.llm_model = llm_url, llm_model

    def __repr__(self) -> str:
        return f"RouterSource({'config' if self.config else 'bundle'}={str(self.config or self.bundle)!r})"

    def _encoder(self) -> Any:
        if self.encoder is None:
            from routecore.core.encoder import Encoder

            self.encoder = Encoder.load(self.model) if self.model else Encoder.load()
        return self.encoder

    def load(self, memory: Any = None) -> Any:
        from routecore.llm.llm import llm_from_config
        from routecore.routers.router import Router

        enc = self._encoder()
        if self.bundle is not None:
            llm = llm_from_config(None, "command line", base_url=self.llm_url, model=self.llm_model)
            return Router.load(self.bundle, encoder=enc, llm=llm, memory=memory)
        from routecore.config.specs import read_config_file

        path = self.config
        assert path is not None
        data = read_config_file(path)
        llm = llm_from_config(data.get("llm"), str(path), base_url=self.llm_url, model=self.llm_model)
        strong = self._config_router(path, enc, llm, memory)
        if not self.static and self.fast_model is None:
            return strong
        from routecore.serve.fast_tier import fast_tier

        return fast_tier(self._config_router(path, self._fast(), None, None), strong)

    def _config_router(self, path: Path, enc: Any, llm: Any, memory: Any) -> Any:
        """The router of the config ``path`` embedded by ``enc``, through the cache of embedded
        configs unless it is off."""
        from routecore.routers import config_cache
        from routecore.routers.router import Router

        extra = {"tool_overlay": self.overlay} if self.overlay else {}

        def build() -> Any:
            return Router.from_config(path, encoder=enc, llm=llm, memory=memory, **extra)

        if not self.cache or not config_cache.enabled():
            return build()
        return config_cache.cached_router([path, self.overlay], enc, build, llm=llm, memory=memory)

    def _fast(self) -> Any:
        """The fast tier's encoder (``--fast-model``, ``--static``), loaded once and kept across reloads."""
        if self.fast_encoder is None:
            from routecore.core.encoder import Encoder
            from routecore.serve.fast_tier import fast_encoder_name

            self.fast_encoder = Encoder.load(fast_encoder_name(self.model, self.static, self.fast_model))
        return self.fast_encoder

    def stamp(self) -> Hashable:
        """What changes when the files change (a save replaces ``bundle.json`` last)."""
        files = [self.bundle / "bundle.json"] if self.bundle is not None else [self.config, self.overlay]
        out: list[Optional[tuple[int, int, int]]] = []
        for f in files:
            if f is None:
                continue
            try:
                st = f.stat()
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append(None)
        return tuple(out)


#: Seconds a file written in place must stay unchanged before it is loaded (``--reload-settle``).
DEFAULT_RELOAD_SETTLE = 5.0


def _replaced(loaded: Hashable, current: Hashable) -> bool:
    """Whether every file that differs between two stamps of :meth:`RouterSource.stamp` is a new file
    (another inode): it was put in place by a rename, so it is whole."""
    if not isinstance(loaded, tuple) or not isinstance(current, tuple) or len(loaded) != len(current):
        return False
    changed = [(a, b) for a, b in zip(loaded, current) if a != b]
    return bool(changed) and all(a is not None and b is not None and a[2] != b[2] for a, b in changed)


class ChangeWatch:
    """When a change of the files on disk is loaded (hot reload).

    A file replaced by a rename (a new inode: ``Router.save``, editors' atomic saves, a Kubernetes
    ConfigMap's symlink swap) is whole, and is loaded at the next poll. A file written in place may
    be caught half-written, so it is loaded only once its stamp has stayed the same for ``settle_s``
    seconds; a writer that pauses longer than that between two writes is read half-way (write
    configs by a rename, or keep the pauses shorter)."""

    def __init__(self, settle_s: float = DEFAULT_RELOAD_SETTLE, clock: Callable[[], float] = time.monotonic):
        self.settle_s, self._clock = settle_s, clock
        self._seen: Hashable = None
        self._since = 0.0

    def due(self, loaded: Hashable, current: Hashable) -> bool:
        """Whether the files, whose stamp is ``current`` now and was ``loaded`` at the last load,
        should be loaded now (called at each poll)."""
        if current == loaded:
            self._seen = None
            return False
        now = self._clock()
        if self._seen is None or current != self._seen:
            self._seen, self._since = current, now
        return _replaced(loaded, current) or now - self._since >= self.settle_s


class _Fixed:
    """A router given as an object (never reloaded) or a callable (called again on each reload)."""

    def __init__(self, router: Any):
        self.router = router

    def load(self, memory: Any = None) -> Any:
        r = self.router() if callable(self.router) and not hasattr(self.router, "route") else self.router
        if memory is not None and getattr(r, "memory", None) is None:
            r.memory = memory
        return r

    def stamp(self) -> Hashable:
        return None


def source_of(router_source: Any) -> Any:
    """A :class:`RouterSource` for a path, the object itself when it can load and stamp, else a
    fixed router."""
    if isinstance(router_source, (str, os.PathLike)):
        p = Path(router_source)
        return RouterSource(bundle=p) if p.is_dir() else RouterSource(config=p)
    if hasattr(router_source, "load") and hasattr(router_source, "stamp"):
        return router_source
    return _Fixed(router_source)
