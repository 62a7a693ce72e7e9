"""Rewrite the flat paths of before the sub-packages (issue 35 §5) in the files given: for code written
against the old layout, e.g. a branch merged after it.

    python scripts/relayout_paths.py tests/test_route_decide.py docs/new_page.md

``routecore.policy`` becomes ``routecore.decide.policy`` (imports, strings, docstrings),
``from routecore import policy`` becomes ``from routecore.decide import policy``, and the file paths
``python/routecore/policy.py`` and ``tests/test_policy.py`` become ``python/routecore/decide/policy.py``
and ``tests/decide/test_policy.py``. Where each module and test lives is read from the tree, so the
map follows later moves; docs/layout.md says what each package holds. A test file given at tests/
that belongs in a package folder is reported, not moved (``git mv`` it). Run ``ruff check --fix``
and ``ruff format`` afterwards: the import blocks may need sorting.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "routecore"
#: The sub-packages that existed before the flat modules moved: their modules were never flat.
OLD_PACKAGES = {"serve", "evaluation", "importers", "examples"}
OLD_IN_INTEGRATIONS = {"langgraph", "ray"}


def module_map() -> dict[str, str]:
    """Each formerly flat module's name -> its sub-package today."""
    out: dict[str, str] = {}
    for p in PACKAGE.glob("*/*.py"):
        pkg, mod = p.parent.name, p.stem
        if mod == "__init__" or pkg in OLD_PACKAGES or (pkg == "integrations" and mod in OLD_IN_INTEGRATIONS):
            continue
        out[mod] = pkg
    return out


def test_map() -> dict[str, str]:
    """Each test module that sits in a package folder -> that folder."""
    return {p.stem: p.parent.name for p in (ROOT / "tests").glob("*/test_*.py")}


def rewrite(text: str, modules: dict[str, str], tests: dict[str, str]) -> str:
    names = "|".join(sorted(modules, key=len, reverse=True))

    def split_from(m: re.Match[str]) -> str:
        indent, body = m.group(1), m.group(2)
        inner, hash_, comment = body.strip("()").partition("#")
        items = [i.strip() for i in inner.replace("\n", " ").split(",") if i.strip()]
        rest = [i for i in items if i.split(" as ")[0].strip() not in modules]
        moved: dict[str, list[str]] = {}
        for i in items:
            if i not in rest:
                moved.setdefault(modules[i.split(" as ")[0].strip()], []).append(i)
        if not moved:
            return m.group(0)
        lines = [f"{indent}from routecore import {', '.join(rest)}"] if rest else []
        lines += [f"{indent}from routecore.{pkg} import {', '.join(its)}" for pkg, its in moved.items()]
        return "\n".join(lines) + (f"  #{comment.rstrip()}" if hash_ else "")

    # module names first in `from routecore import x`, then dotted names (which a split line no longer has)
    text = re.sub(r"^([ \t]*)from routecore import (\([^)#]*\)|[^\n(]*)$", split_from, text, flags=re.M)
    text = re.sub(
        rf"(?<![\w.])routecore\.({names})(?![\w])",
        lambda m: f"routecore.{modules[m.group(1)]}.{m.group(1)}",
        text,
    )
    # a package named as its module (llm, memory, doctor) was doubled by the line above in `from ... import`
    text = re.sub(
        r"from routecore\.(\w+)\.\1 import (\w+)\b",
        lambda m: (
            f"from routecore.{m.group(1)} import {m.group(2)}"
            if modules.get(m.group(2)) == m.group(1) and m.group(2) != m.group(1)
            else m.group(0)
        ),
        text,
    )
    text = re.sub(
        rf"(?<![\w])routecore/({names})\.py(?![\w])",
        lambda m: f"routecore/{modules[m.group(1)]}/{m.group(1)}.py",
        text,
    )
    tnames = "|".join(sorted(tests, key=len, reverse=True))
    return re.sub(
        rf"(?<![\w/])tests/({tnames})\.py(?![\w])",
        lambda m: f"tests/{tests[m.group(1)]}/{m.group(1)}.py",
        text,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    args = ap.parse_args()
    modules, tests = module_map(), test_map()
    for f in args.files:
        text = f.read_text(encoding="utf-8")
        new = rewrite(text, modules, tests)
        if new != text:
            f.write_text(new, encoding="utf-8")
            print(f"rewrote {f}")
        folder = modules.get(f.stem[len("test_") :]) if f.name.startswith("test_") else None
        if folder and f.resolve().parent == ROOT / "tests":
            print(f"  {f} tests routecore.{folder}.{f.stem[5:]}: git mv {f} tests/{folder}/{f.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
