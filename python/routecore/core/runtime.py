"""Locating the ONNX Runtime shared library that the native encoder loads."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from routecore.errors import RuntimeUnavailableError

ENV_VAR = "ROUTECORE_ORT_LIB"


def onnxruntime_library(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Absolute path of ``libonnxruntime.so.*``.

    Order: ``explicit``, then ``$ROUTECORE_ORT_LIB``, then the library shipped in the
    ``onnxruntime`` wheel under ``onnxruntime/capi/`` (found without importing it).
    """
    if explicit is not None:
        return _existing(Path(explicit), "the runtime_path argument")
    env = os.environ.get(ENV_VAR)
    if env:
        return _existing(Path(env), f"${ENV_VAR}")
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeUnavailableError(
            f"the onnxruntime package is not installed; `pip install onnxruntime` or set {ENV_VAR}"
        )
    capi = Path(next(iter(spec.submodule_search_locations))) / "capi"
    candidates = sorted(capi.glob("libonnxruntime.so*")) + sorted(capi.glob("libonnxruntime*.dylib"))
    candidates += sorted(capi.glob("onnxruntime.dll"))
    if not candidates:
        raise RuntimeUnavailableError(f"no libonnxruntime shared library under {capi}; set {ENV_VAR}")
    # Prefer the fully versioned file (libonnxruntime.so.1.31.1).
    return max(candidates, key=lambda p: len(p.name)).resolve()


def _existing(p: Path, source: str) -> Path:
    if not p.is_file():
        raise RuntimeUnavailableError(f"ONNX Runtime library from {source} does not exist: {p}")
    return p.resolve()
