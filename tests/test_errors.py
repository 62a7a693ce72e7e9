"""routecore.errors: a missing optional extra is one typed error, a RoutecoreError and an ImportError,
whose message names the pip command; the extras themselves stay installed (monkeypatched away)."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable

import pytest

from routecore.errors import MissingExtraError, RoutecoreError, missing_extra


def _httpx() -> Any:
    from routecore.llm import llm_async

    return llm_async._httpx()  # the module's own loader of its extra


def _psycopg() -> Any:
    from routecore.memory.pg_connection import load_psycopg

    return load_psycopg()


def _mcp() -> Any:
    from routecore.config.mcp_tools import list_mcp_tools

    return list_mcp_tools(["python -c pass"])


def _faiss() -> Any:
    return importlib.import_module("routecore.core._faiss_backend")


def _serve() -> Any:
    import routecore.serve as serve

    return serve.create_app


def _langgraph() -> Any:
    return importlib.import_module("routecore.integrations.langgraph")


def _ray() -> Any:
    return importlib.import_module("routecore.integrations.ray")


@pytest.mark.parametrize(
    "module, load, extra",
    [
        ("httpx", _httpx, "llm-async"),
        ("psycopg", _psycopg, "postgres"),
        ("mcp", _mcp, "mcp"),
        ("faiss", _faiss, "faiss"),
        ("starlette", _serve, "serve"),
        ("langchain_core", _langgraph, "langgraph"),
        ("ray", _ray, "ray"),
    ],
)
def test_a_missing_extra_names_its_pip_command(
    module: str, load: Callable[[], Any], extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the extra's modules, and routecore's that import it when first imported (restored afterwards)
    fresh = (
        "routecore.core._faiss_backend",
        "routecore.serve.app",
        "routecore.integrations.langgraph",
        "routecore.integrations.ray",
    )
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".") or m in fresh]:
        monkeypatch.delitem(sys.modules, name)
    for name in fresh:  # `from package import module` reads the package's attribute first
        parent, _, child = name.rpartition(".")
        if parent in sys.modules:
            monkeypatch.delattr(sys.modules[parent], child, raising=False)
    monkeypatch.setitem(sys.modules, module, None)  # `import module` now fails as if not installed
    with pytest.raises(MissingExtraError, match=rf"pip install 'routecore\[{extra}\]'") as e:
        load()
    assert isinstance(e.value, RoutecoreError) and isinstance(e.value, ImportError)


def test_missing_extra_keeps_the_detail() -> None:
    e = missing_extra("x needs y", "z", "No module named 'y'")
    assert str(e) == "x needs y: pip install 'routecore[z]' (No module named 'y')"


def test_score_maps_of_mismatched_lengths_are_invalid_arguments() -> None:
    from routecore.decision import ScoreMap
    from routecore.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="2 names for 1 values"):
        ScoreMap(["A", "B"], [0.5])


@pytest.mark.parametrize("writer", ["doctor", "importers"])
def test_a_config_that_cannot_be_written_is_a_storage_error(tmp_path: Any, writer: str) -> None:
    """Both public writers of configs map the file system's errors to StorageIOError."""
    from routecore.errors import StorageIOError

    if writer == "doctor":
        from routecore.doctor import write_config as write
    else:
        from routecore.importers import write_config as write
    with pytest.raises(StorageIOError, match="cannot write"):
        write({"routes": []}, tmp_path / "no such folder" / "routes.yaml")
    assert not list(tmp_path.iterdir())
