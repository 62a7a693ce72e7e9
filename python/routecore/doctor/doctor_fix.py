"""Applying :mod:`routecore.doctor.doctor`'s edits to a config document, and writing it as YAML
(``routecore doctor --fix OUT``)."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from routecore.doctor.doctor_checks import normalised
from routecore.errors import ConfigError, StorageIOError


def apply_edits(doc: Mapping[str, Any], edits: Sequence[Any]) -> dict[str, Any]:
    """A copy of the config document ``doc`` with the ``drop`` and ``move`` edits applied (``add``
    edits are suggestions, not applied); a moved text is not added twice to its new route."""
    out = copy.deepcopy(dict(doc))
    routes = out.get("routes")
    if not isinstance(routes, list):
        raise ConfigError("the config has no routes list to edit")
    by = {r.get("name"): r for r in routes if isinstance(r, dict)}
    drop: dict[str, set[int]] = {}
    for e in edits:
        if e.action not in ("drop", "move"):
            continue
        entry = by.get(e.route)
        utts = entry.get("utterances") if entry is not None else None
        if not isinstance(utts, list) or not 0 <= e.index < len(utts) or utts[e.index] != e.text:
            raise ConfigError(
                f"edit {e.action} {e.text!r} of {e.route}: not in this config (edits of another version?)"
            )
        drop.setdefault(e.route, set()).add(e.index)
        if e.action == "move":
            if e.to not in by:
                raise ConfigError(f"edit move {e.text!r}: {e.to!r} is not a route")
            target = by[e.to].setdefault("utterances", [])
            if normalised(e.text) not in {normalised(t) for t in target}:
                target.append(e.text)
    for name, idx in drop.items():
        by[name]["utterances"] = [t for i, t in enumerate(by[name]["utterances"]) if i not in idx]
    return out


def write_config(doc: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write ``doc`` as YAML to ``path``, whole or not at all (a temporary file, then a rename).

    Raises:
        StorageIOError: the file cannot be written (no such folder, no permission, disk full).
    """
    import yaml

    from routecore.core.atomic import temp_beside

    p = Path(path)
    text = yaml.safe_dump(dict(doc), sort_keys=False, allow_unicode=True, width=1000)
    try:
        fd, tmp = temp_beside(p, f".{p.name}.")
    except OSError as e:
        raise StorageIOError(f"cannot write {p}: {e}") from e
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, p)
    except BaseException as e:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(e, OSError):
            raise StorageIOError(f"cannot write {p}: {e}") from e
        raise
