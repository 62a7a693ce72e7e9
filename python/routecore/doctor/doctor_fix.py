"""Applying :mod:`routecore.doctor.doctor`'s edits to a config document, and writing it as YAML
(``routecore doctor --fix OUT``)."""

from __future__ import annotations

import copy
import json
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


def edited_text(source: str, edits: Sequence[Any], fixed: Mapping[str, Any]) -> str | None:
    """The YAML text ``source`` with the ``drop`` and ``move`` edits made on its lines, so that its
    comments, order and layout stay, or None when its layout does not allow it (a flow-style
    ``[...]`` list of utterances, an utterance over several lines or beside another on its line, a
    move to a route with no utterance listed, JSON) or the edited text does not read as ``fixed``
    (:func:`apply_edits`' document)."""
    import yaml

    from routecore.config.config_files import load_yaml

    try:
        root = yaml.compose(source, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    items = _utterance_lines(root, source.splitlines())
    lines = source.splitlines(keepends=True)
    if items is None:
        return None
    gone: set[int] = set()
    added: dict[int, list[str]] = {}  # after the line: the lines inserted
    for e in edits:
        if e.action not in ("drop", "move"):
            continue
        at = items.get(e.route, [])
        if not 0 <= e.index < len(at) or at[e.index][1] != e.text:
            return None
        gone.add(at[e.index][0])
        if e.action == "move":
            target = items.get(str(e.to), [])
            if not target:
                return None
            last, _, prefix = target[-1]
            added.setdefault(last, []).append(f"{prefix}{json.dumps(e.text, ensure_ascii=False)}\n")
    out: list[str] = []
    for i, line in enumerate(lines):
        if i not in gone:
            out.append(line if line.endswith("\n") or i + 1 < len(lines) else line + "\n")
        out.extend(added.get(i, ()))
    text = "".join(out)
    try:
        return text if load_yaml(text) == dict(fixed) else None
    except ConfigError:
        return None


def _utterance_lines(root: Any, lines: list[str]) -> dict[str, list[tuple[int, str, str]]] | None:
    """Each route's utterances as (line, text, the line's text before it: indentation and dash), when
    each is a one-line item of a block list alone on its line; else None."""
    import yaml

    def get(node: Any, key: str) -> Any:
        if isinstance(node, yaml.MappingNode):
            return next((v for k, v in node.value if getattr(k, "value", None) == key), None)
        return None

    routes = get(root, "routes")
    if not isinstance(routes, yaml.SequenceNode):
        return None
    out: dict[str, list[tuple[int, str, str]]] = {}
    for r in routes.value:
        name, utts = get(r, "name"), get(r, "utterances")
        if not isinstance(name, yaml.ScalarNode):
            return None
        if utts is None:
            continue
        if not isinstance(utts, yaml.SequenceNode) or utts.flow_style:
            return None
        mine: list[tuple[int, str, str]] = []
        for item in utts.value:
            if not isinstance(item, yaml.ScalarNode):
                return None
            start, end = item.start_mark, item.end_mark
            prefix = lines[start.line][: start.column]
            if end.line != start.line or prefix.strip() != "-":  # one line, alone on it after its dash
                return None
            mine.append((start.line, item.value, prefix))
        out[str(name.value)] = mine
    return out


def write_config(doc: Mapping[str, Any], path: str | os.PathLike[str], *, text: str | None = None) -> None:
    """Write ``doc`` as YAML to ``path``, whole or not at all (a temporary file, then a rename);
    ``text``: the YAML to write instead (:func:`edited_text`: the source's layout and comments kept).

    Raises:
        StorageIOError: the file cannot be written (no such folder, no permission, disk full).
    """
    import yaml

    from routecore.core.atomic import temp_beside

    p = Path(path)
    if text is None:
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
