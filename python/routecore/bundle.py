"""Router bundles: a folder with the config, the embeddings and the model id.

:func:`save` writes one (``bundle.json``, one ``.rci`` index per table and the
optional ``head.npz``); :func:`load` rebuilds the router without re-embedding,
and refuses a bundle made with another model. ``Router.save`` and
``Router.load`` call them.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from routecore.calibration import Calibration
from routecore.errors import ConfigError
from routecore.index import VectorIndex
from routecore.policy import Policy
from routecore.specs import parse_routes, parse_tools
from routecore.tables import EncoderLike

BUNDLE_VERSION = 2
#: Version 1 bundles (no calibration; every policy number written out) still load.
READABLE_VERSIONS = (1, 2)

#: The tables of a bundle, as ``<name>.rci`` files and keys of ``Router(_vectors=...)``.
TABLES = ("routes", "tools", "anti")

_R = TypeVar("_R")


def save(router: Any, path: str | os.PathLike[str], *, fitted: dict[str, Any] | None = None) -> None:
    """Write ``router`` (a :class:`routecore.router.Router`) as a bundle folder at ``path``."""
    d = Path(path)
    d.mkdir(parents=True, exist_ok=True)
    for name, table in zip(TABLES, (router._routes, router._tools, router._anti)):
        table.index.save(d / f"{name}.rci")
    meta = {"version": BUNDLE_VERSION, "model_id": router.encoder.model_id, "model_path": str(getattr(router.encoder, "path", "")),
            # The policy as given (unset thresholds null) and the calibration that fills them.
            "policy": router.spec_policy.to_dict(), "calibration": router.calibration.to_dict() if router.calibration else None,
            "routes": [asdict(r) for r in router.route_specs], "tools": [asdict(t) for t in router.tool_specs],
            "fitted": fitted or {}}
    if router.head is not None:
        router.head.save(d / "head.npz")
        meta["head"] = "head.npz"
    tmp = d / "bundle.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1, ensure_ascii=False))
    os.replace(tmp, d / "bundle.json")


def load(cls: type[_R], path: str | os.PathLike[str], *, encoder: EncoderLike | None = None, **kw: Any) -> _R:
    """A ``cls`` (a :class:`routecore.router.Router` class) from the bundle at ``path``; ``kw`` go to ``cls``."""
    d = Path(path)
    try:
        meta = json.loads((d / "bundle.json").read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{d} is not a router bundle: {e}") from None
    if meta.get("version") not in READABLE_VERSIONS:
        raise ConfigError(f"bundle version {meta.get('version')} is not supported (expected one of {READABLE_VERSIONS})")
    if encoder is None:
        from routecore.encoder import Encoder

        mp = meta.get("model_path")
        encoder = Encoder.load(mp if mp and Path(mp).is_dir() else None)
    if encoder.model_id != meta["model_id"]:
        raise ConfigError(f"bundle was made with model {meta['model_id']}, but the encoder is {encoder.model_id}; rebuild the bundle")
    vecs = {}
    for name in TABLES:
        ix = VectorIndex.load(d / f"{name}.rci")
        vecs[name] = ix.vectors()[1] if len(ix) else np.zeros((0, encoder.dim), np.float32)
    routes = parse_routes({"routes": meta["routes"]})
    tools = parse_tools({"tools": meta["tools"]})
    policy = kw.pop("policy", None) or Policy.from_dict(meta["policy"])
    if meta.get("calibration") and "calibration" not in kw:
        kw["calibration"] = Calibration.from_dict(meta["calibration"])
    if meta.get("head") and "head" not in kw:
        from routecore.evaluation.head import LinearHead

        kw["head"] = LinearHead.load(d / meta["head"])
    r = cls(routes, tools, encoder=encoder, policy=policy, _vectors=vecs, **kw)  # type: ignore[call-arg]
    r.fitted = meta.get("fitted", {})  # type: ignore[attr-defined]
    return r
