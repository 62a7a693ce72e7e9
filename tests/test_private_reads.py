"""No module of the package reads another module's private names (issue 35 §4), checked on the source:

* ``from routecore.x import _name`` in a module other than ``routecore.x``;
* ``module._name`` where ``module`` is another routecore module bound by an import;
* ``obj._name`` (``obj`` not ``self``, ``cls`` or ``super()``) where ``_name`` is an attribute or method that
  only classes of other modules define (``self._name = ...``, ``def _name``, a class-level ``_name``).

* ``from routecore.pkg._mod import ...`` (or ``import routecore.pkg._mod``) outside ``routecore.pkg``: a
  private module is its package's (``core/_faiss_backend`` is read by ``core`` only).

``routecore._native`` (the package's own compiled core) is everyone's. A private name that a class of this
module defines too is taken as this module's own: the check reads names, not types.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "python" / "routecore"
ALLOWED = {"_native"}


def _private(name: str) -> bool:
    return (
        name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and name not in ALLOWED
    )


def _outside_home(importer: str, target: str) -> bool:
    """Whether ``target`` is a private module (a ``_name`` part) and ``importer`` is outside its package."""
    parts = target.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if _private(part):
            home = ".".join(parts[:i])
            return not (importer == home or importer.startswith(home + "."))
    return False


def _module(path: Path, package: Path) -> str:
    name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
    return name.removesuffix(".__init__")


def _class_privates(tree: ast.Module) -> set[str]:
    """The private names the classes of one module define."""
    out: set[str] = set()
    for c in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for n in c.body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.add(n.name)
            targets = (
                n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
            )
            out.update(t.id for t in targets if isinstance(t, ast.Name))
        for n in ast.walk(c):
            if (
                isinstance(n, ast.Attribute)
                and isinstance(n.ctx, ast.Store)
                and isinstance(n.value, ast.Name)
                and n.value.id in ("self", "cls")
            ):
                out.add(n.attr)
    return {n for n in out if _private(n)}


def private_reads(package: Path = PACKAGE) -> list[str]:
    """``file:line: what`` for each read of another module's private name."""
    files = {_module(p, package): p for p in package.rglob("*.py")}
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in files.items()}
    owners: dict[str, set[str]] = {}
    for m, tree in trees.items():
        for name in _class_privates(tree):
            owners.setdefault(name, set()).add(m)
    found: list[str] = []
    for m, tree in trees.items():
        where = files[m].relative_to(package.parent)
        modules: dict[str, str] = {}  # local name -> routecore module
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                modules.update({a.asname: a.name for a in n.names if a.asname and a.name in files})
                found += [f"{where}:{n.lineno}: import {a.name}" for a in n.names if _outside_home(m, a.name)]
            elif isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("routecore"):
                if _outside_home(m, n.module):
                    found.append(
                        f"{where}:{n.lineno}: from {n.module} import (a private module of its package)"
                    )
                for a in n.names:
                    if f"{n.module}.{a.name}" in files:
                        modules[a.asname or a.name] = f"{n.module}.{a.name}"
                    elif _private(a.name) and n.module != m:
                        found.append(f"{where}:{n.lineno}: from {n.module} import {a.name}")
        for n in ast.walk(tree):
            if not (isinstance(n, ast.Attribute) and _private(n.attr)):
                continue
            v = n.value
            if isinstance(v, ast.Name) and v.id in ("self", "cls"):
                continue
            if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "super":
                continue
            if isinstance(v, ast.Name) and v.id in modules:
                if modules[v.id] != m:
                    found.append(f"{where}:{n.lineno}: {ast.unparse(n)} (a private of {modules[v.id]})")
                continue
            defined = owners.get(n.attr, set())
            if defined and m not in defined:
                found.append(
                    f"{where}:{n.lineno}: {ast.unparse(n)} (a private of {', '.join(sorted(defined))})"
                )
    return sorted(found)


def test_no_module_reads_another_modules_private_names():
    assert private_reads() == []


def test_the_check_finds_each_kind_of_read(tmp_path):
    pkg = tmp_path / "routecore"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("class A:\n    def __init__(self):\n        self._x = 1\n\n_helper = 2\n")
    (pkg / "b.py").write_text(
        "from routecore import a\nfrom routecore.a import A, _helper\n"
        "from routecore.sub._mine import y\n\n\ndef f(obj: A):\n"
        "    return obj._x, a._helper\n"
    )
    (pkg / "sub").mkdir()
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "_mine.py").write_text("y = 1\n")
    (pkg / "sub" / "c.py").write_text("from routecore.sub._mine import y\n")  # its own package's: fine
    assert {line.split(": ", 1)[1] for line in private_reads(pkg)} == {
        "from routecore.a import _helper",
        "from routecore.sub._mine import (a private module of its package)",
        "obj._x (a private of routecore.a)",
        "a._helper (a private of routecore.a)",
    }
