"""Shared fixtures: paths to ../shared and the bundled encoder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ROUTECORE_SHARED", ROOT.parent / "shared"))
MODELS = SHARED / "models"
DATASETS = SHARED / "datasets"


def need_shared(path: Path) -> Path:
    """Return ``path``; under CI a missing ``../shared`` fails, elsewhere it skips."""
    if path.exists():
        return path
    msg = f"{path} is missing (../shared holds the real models and datasets)"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def encoder():
    from routecore import Encoder

    return Encoder.load()
