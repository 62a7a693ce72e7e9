"""The import circles of python/routecore (issue 35 §5): strongly connected components of its
import graph, once with module-level imports only and once with the imports inside functions too.
tests/test_import_graph.py (run in CI) fails on any circle between modules or between sub-packages, in
either graph.

    python scripts/import_cycles.py            # the sizes of both
    python scripts/import_cycles.py --edges    # and each circle's modules and edges (file:line)
    python scripts/import_cycles.py --packages # and the circles among sub-packages (routecore.core, ...)

``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``; the
package ``routecore`` itself is left out (every module is under it). Imports under
``if TYPE_CHECKING:`` count as function-level ones. Exits 1 when any circle is found.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "routecore"


def module_name(path: Path, package: Path) -> str:
    name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
    return name[: -len(".__init__")] if name.endswith(".__init__") else name


def _module_level(tree: ast.Module) -> list[ast.stmt]:
    """The statements run at import: the body, and the bodies of top-level ifs and trys that are
    not ``if TYPE_CHECKING:``."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        out.append(node)
        if isinstance(node, ast.If) and not (
            isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        ):
            todo[:0] = node.body + node.orelse
        elif isinstance(node, ast.Try):
            todo[:0] = node.body + [s for h in node.handlers for s in h.body] + node.orelse + node.finalbody
    return out


def imports(path: Path, package: Path, modules: set[str], everywhere: bool) -> dict[str, int]:
    """The package modules ``path`` imports (``everywhere``: inside functions too), each with the
    line of its first import."""
    name = module_name(path, package)
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: dict[str, int] = {}
    for node in ast.walk(tree) if everywhere else _module_level(tree):
        targets: set[str] = set()
        if isinstance(node, ast.Import):
            targets = {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            parts = pkg.split(".")
            base = (
                ".".join(parts[: len(parts) - node.level + 1] + [node.module or ""])
                if node.level
                else node.module
            )
            if base:
                base = base.rstrip(".")
                targets = {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
        for t in targets:
            while t and t not in modules:
                t = t.rsplit(".", 1)[0] if "." in t else ""
            if t and t not in (name, package.name):
                out.setdefault(t, node.lineno)
    return out


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(graph) + 100))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found, key=len, reverse=True)


def package_of(module: str) -> str:
    """The sub-package a module sits in (``routecore.core`` for ``routecore.core.encoder``); a module at
    the top (``routecore.errors``, ``routecore.decision``) stands for itself."""
    parts = module.split(".")
    return ".".join(parts[:2])


def package_graph(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """``graph`` with each module replaced by its sub-package (edges inside one package dropped)."""
    out: dict[str, dict[str, int]] = {}
    for m, targets in graph.items():
        src = out.setdefault(package_of(m), {})
        for t, line in targets.items():
            if package_of(t) != package_of(m):
                src.setdefault(package_of(t), line)
    for targets in list(out.values()):
        for t in targets:
            out.setdefault(t, {})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--edges", action="store_true", help="list each circle's modules and edges")
    ap.add_argument("--packages", action="store_true", help="also the circles among sub-packages")
    ap.add_argument("--package", type=Path, default=PACKAGE, help="the package folder (default: routecore's)")
    args = ap.parse_args()
    files = {module_name(p, args.package): p for p in args.package.rglob("*.py")}
    any_found = False
    for label, everywhere in (("module-level imports", False), ("function-level imports too", True)):
        graph = {m: imports(p, args.package, set(files), everywhere) for m, p in files.items()}
        found = circles(graph)
        any_found = any_found or bool(found)
        print(f"{label}: {len(found)} circle(s), sizes {[len(c) for c in found]}")
        for comp in found if args.edges else ():
            print(f"  {len(comp)}: {', '.join(comp)}")
            for m in comp:
                for t, line in sorted(graph[m].items()):
                    if t in comp:
                        print(f"      {files[m].relative_to(args.package.parent)}:{line} -> {t}")
        if args.packages:
            pcs = circles(package_graph(graph))
            print(f"  between sub-packages: {len(pcs)} circle(s): {[', '.join(c) for c in pcs]}")
    return 1 if any_found else 0


if __name__ == "__main__":
    sys.exit(main())
