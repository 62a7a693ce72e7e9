"""The package's import graph (issue 35 §5): no circle among its modules, counting imports inside
functions too, none among its sub-packages either, and `import routecore` imports none of the optional
extras. CI runs this file (scripts/test.sh); ``python scripts/import_cycles.py --edges --packages``
prints the same graphs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

from conftest import ROOT

PACKAGE = ROOT / "python" / "routecore"


def _graph_tool() -> ModuleType:
    """scripts/import_cycles.py, which builds the package's import graph and finds its circles."""
    spec = importlib.util.spec_from_file_location("import_cycles", ROOT / "scripts" / "import_cycles.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _circles(everywhere: bool, packages: bool = False) -> list[list[str]]:
    g = _graph_tool()
    files = {g.module_name(p, PACKAGE): p for p in PACKAGE.rglob("*.py")}
    graph = {m: g.imports(p, PACKAGE, set(files), everywhere) for m, p in files.items()}
    circles: list[list[str]] = g.circles(g.package_graph(graph) if packages else graph)
    return circles


def test_no_module_level_import_circles():
    assert not _circles(everywhere=False)


def test_no_import_circles_counting_imports_inside_functions():
    # Imports inside functions and under ``if TYPE_CHECKING:`` count too (issue 35 §5). The last three
    # circles were broken by dependency inversion: Encoder.load opens a static table through the folder
    # kind that core/static_encoder registers; PostgresMemory declares its URL schemes to
    # ExperienceMemory; Router.from_semantic_router builds the router from the importer's reader.
    assert not _circles(everywhere=True)


def test_no_import_circles_between_sub_packages():
    # The layers of docs/layout.md, bottom up: errors/decision, hub, config, llm, core, calibrate, decide,
    # memory, tools, updates, routers, then serve, integrations, importers, evaluation, doctor and cli.
    # A package imports only those below it, at module level and inside functions alike.
    assert not _circles(everywhere=False, packages=True)


def test_no_import_circles_between_sub_packages_counting_imports_inside_functions():
    # The last circles were broken by moving what a lower package needed down to it: CLARIFY to
    # routecore.decision, LanguagePolicies to decide, the semantic-router and MCP readers to config;
    # and by injection: the router hands updates its build (RouterInternals.build).
    assert not _circles(everywhere=True, packages=True)


def test_import_routecore_loads_no_optional_extra():
    code = (
        "import sys, routecore; "
        "bad = [m for m in ('routecore.serve', 'langgraph', 'mcp', 'ray', 'psycopg', 'uvicorn', 'starlette') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]"


def test_cli_starts_its_model_load_before_numpy_is_imported():
    # A warm ``routecore route`` loads the model on a thread while the main thread imports numpy and
    # the routers (issue 34 §5): up to that thread's start, nothing heavy may be imported.
    code = (
        "import sys, routecore.cli as c; a = c.build_parser().parse_args(['route', 'q']); "
        "import routecore.core.encoder; "
        "print([m for m in ('numpy', 'yaml', 'routecore.routers.router', 'routecore.decision') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]"
