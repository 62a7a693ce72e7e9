"""The README's Python example runs from any directory and writes nothing there."""

from __future__ import annotations

import re
import subprocess
import sys

from conftest import ROOT


def test_the_python_example_runs_anywhere_and_writes_nothing(tmp_path):
    code = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)[0]
    (tmp_path / "example.py").write_text(code, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    p = subprocess.run(
        [sys.executable, str(tmp_path / "example.py")], cwd=work, capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr
    assert list(work.iterdir()) == []
    assert "route RAG" in p.stdout or "route " in p.stdout
