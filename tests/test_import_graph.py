"""The package's import graph (issue 35 §5): no circle among its modules, counting imports inside
functions too, no new one among its sub-packages, and `import routecore` imports none of the optional
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


#: The sub-packages that import each other at module level (scripts/import_cycles.py --packages): the
#: layer each package sits in, bottom up, is errors/decision, hub, config, core, calibrate, decide, llm,
#: memory, tools, routers, then serve, integrations, importers, evaluation, doctor and cli (docs/layout.md).
#: These two pairs go both ways; a new pair fails here.
KNOWN_PACKAGE_LEVEL = {
    # decide.route_outcomes asks llm's fallback (LLMRequest, LLMChoice); llm.llm offers decide's CLARIFY.
    frozenset({"routecore.decide", "routecore.llm"}),
    # Router.learn and the live updates are in updates, which rebuilds through routers.assembly.
    frozenset({"routecore.routers", "routecore.updates"}),
}


def test_no_new_module_level_circles_between_sub_packages():
    new = [c for c in _circles(everywhere=False, packages=True) if frozenset(c) not in KNOWN_PACKAGE_LEVEL]
    assert not new, new


#: The groups of sub-packages that reach each other once imports inside functions count: besides the two
#: pairs above, Router.from_mcp calls into integrations and Router.from_semantic_router into importers
#: (integrations.ray also uses serve, and all three import routers back), and calibrate.languages reads
#: decide.policy's type (under TYPE_CHECKING). A circle that is not inside one of them fails here.
KNOWN_PACKAGE_FUNCTION_LEVEL = (
    frozenset(
        {
            "routecore.importers",
            "routecore.integrations",
            "routecore.routers",
            "routecore.serve",
            "routecore.updates",
        }
    ),
    frozenset({"routecore.calibrate", "routecore.decide", "routecore.llm"}),
)


def test_no_new_circles_between_sub_packages_counting_imports_inside_functions():
    circles = _circles(everywhere=True, packages=True)
    new = [c for c in circles if not any(set(c) <= known for known in KNOWN_PACKAGE_FUNCTION_LEVEL)]
    assert not new, new


def test_import_routecore_loads_no_optional_extra():
    code = (
        "import sys, routecore; "
        "bad = [m for m in ('routecore.serve', 'langgraph', 'mcp', 'ray', 'psycopg', 'uvicorn', 'starlette') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]"
