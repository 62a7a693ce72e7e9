"""Shared fixtures: paths to ../shared and the bundled encoder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ROUTECORE_SHARED", ROOT.parent / "shared"))
MODELS = SHARED / "models"
DATASETS = SHARED / "datasets"

# The tests sit in one folder per package (tests/<package>/test_x.py, beside the shared helpers here).
# A few import another folder's test module by name (test_llm's loopback LLM server, test_tools'
# router): every folder is on sys.path, whatever order pytest collects them in, or a file run alone.
for _folder in sorted(Path(__file__).parent.iterdir()):
    if any(_folder.glob("test_*.py")) and str(_folder) not in sys.path:
        sys.path.append(str(_folder))


def missing(msg: str) -> None:
    """Something a test needs is missing: under CI that fails the test, elsewhere it skips."""
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def need_shared(path: Path) -> Path:
    """Return ``path``; under CI a missing ``../shared`` fails, elsewhere it skips."""
    if not path.exists():
        missing(f"{path} is missing (../shared holds the real models and datasets)")
    return path


@pytest.fixture(scope="session")
def encoder():
    from routecore import Encoder

    return Encoder.load()


@pytest.fixture(scope="session")
def it_ops_router(encoder):
    """The IT-ops example router (read-only: a test that sets an attribute puts it back)."""
    from routecore import Router
    from routecore.examples import IT_OPS_ROUTES

    return Router.from_config(IT_OPS_ROUTES, encoder=encoder)


@pytest.fixture(scope="session")
def tools_router(encoder):
    """The example tool catalog's router (read-only, as ``it_ops_router``)."""
    from routecore import Router
    from routecore.examples import TOOLS

    return Router.from_config(TOOLS, encoder=encoder)


@pytest.fixture(scope="session")
def it_ops_with_tools(tmp_path_factory):
    """A config file of the IT-ops routes and the example tools (what a sidecar serves)."""
    import yaml

    from routecore.examples import IT_OPS_ROUTES, TOOLS

    cfg = yaml.safe_load(IT_OPS_ROUTES.read_text(encoding="utf-8"))
    cfg["tools"] = yaml.safe_load(TOOLS.read_text(encoding="utf-8"))["tools"]
    path = tmp_path_factory.mktemp("combo") / "routes.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="session", autouse=True)
def routecore_home(tmp_path_factory):
    """Caches (the CLI's embedded configs, eval embeddings) go to a temporary folder, never
    the user's ``~/.cache/routecore``, unless ``ROUTECORE_HOME`` is set for the run."""
    if os.environ.get("ROUTECORE_HOME"):
        yield Path(os.environ["ROUTECORE_HOME"])
        return
    home = tmp_path_factory.mktemp("routecore_home")
    os.environ["ROUTECORE_HOME"] = str(home)
    yield home
    del os.environ["ROUTECORE_HOME"]
