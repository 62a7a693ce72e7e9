"""The package's import graph (issue 35 §5): no circle among module-level imports, and
`import routecore` imports none of the optional extras."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "python" / "routecore"


def _module(path: Path) -> str:
    name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package modules ``path`` imports at module level (not inside functions)."""
    name = _module(path)
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = pkg.split(".")
            base = (
                ".".join(parts[: len(parts) - node.level + 1] + [node.module or ""])
                if node.level
                else node.module
            )
            if base:
                out |= {base.rstrip(".")} | {f"{base}.{a.name}" for a in node.names}
    return {m for m in out if m in modules and m not in (name, "routecore")}


def test_no_module_level_import_circles():
    files = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = {m: _imports(p, set(files)) for m, p in files.items()}
    state: dict[str, int] = {}  # 1: on the path, 2: done
    circles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                circles.append(path[path.index(d) :] + [d])
            elif d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not circles, circles


def test_import_routecore_loads_no_optional_extra():
    code = (
        "import sys, routecore; "
        "bad = [m for m in ('routecore.serve', 'langgraph', 'mcp', 'ray', 'psycopg', 'uvicorn', 'starlette') "
        "if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "[]"
