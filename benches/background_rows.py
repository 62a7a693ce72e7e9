"""Which rows of the bundled background set the head's "none of these" class learns from, for the
benches' ``--background`` option (issue 34: in-scope ``none`` against out-of-scope ``none``).

The bundled set (``python/routecore/data/background.jsonl``, docs/calibration.md) holds 128 queries
written for this project, CLINC150's 100 out-of-scope *train* queries and 40 translations of them.
``own`` keeps the project's 128 only: the process reads a copy of the file without the others (in a
temporary folder), so the set's embeddings are computed once for it and cached as another model's
are; the prior's cuts stay the ones fitted with every row. It measures what CLINC150's out-of-scope
queries, which come from the same collection as its val and test ones, cost or gain the other sets.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import routecore.core.background as background

CHOICES = ("all", "own")


def use(which: str) -> None:
    """Route every router built after this call with the background rows ``which`` names (call it
    before any router is built: the rows are read once per process)."""
    if which == "all":
        return
    if which != "own":
        raise SystemExit(f"--background: one of {CHOICES}, got {which!r}")
    lines = background.BACKGROUND_FILE.read_text(encoding="utf-8").splitlines()
    own = [line for line in lines if line.strip() and json.loads(line)["source"] == "routecore"]
    path = Path(tempfile.mkdtemp(prefix="routecore-bg-")) / "background.jsonl"
    path.write_text("\n".join(own) + "\n", encoding="utf-8")
    background.BACKGROUND_FILE = path
