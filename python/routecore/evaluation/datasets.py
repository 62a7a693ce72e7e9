"""Labelled datasets: JSONL readers with line-numbered errors, and loaders for
the public sets in ``../shared/datasets`` (read in place, never copied)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from routecore.errors import DatasetError


@dataclass(frozen=True)
class Sample:
    """A labelled routing example (``label`` may be the out-of-scope label)."""

    text: str
    label: str
    previous_route: str | None = None
    language: str | None = None
    secondary_label: str | None = None
    confidence: str | None = None  # clear / ambiguous / multi-intent
    line: int = 0


@dataclass(frozen=True)
class ToolSample:
    """A tool-selection query: its gold ``tools`` (empty: no tool fits) and, optionally,
    its own ``candidates``: tool names, or ``(name, description)`` pairs defined by the row."""

    query: str
    tools: tuple[str, ...]
    line: int = 0
    candidates: tuple[str | tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Dataset:
    name: str
    samples: list[Any] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.samples)


def read_jsonl(path: str | os.PathLike[str]) -> Iterable[tuple[int, dict[str, Any]]]:
    p = Path(path)
    if not p.is_file():
        raise DatasetError(f"dataset file not found: {p}")
    with open(p, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                msg = f"{p}:{n}: not UTF-8 text (byte {e.start} of the line: {e.reason})"
                raise DatasetError(msg) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DatasetError(f"{p}:{n}: malformed JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise DatasetError(f"{p}:{n}: expected a JSON object")
            yield n, obj


def load_routes(
    path: str | os.PathLike[str], *, language: str | None = None, oos_label: str = "oos"
) -> Dataset:
    """``{"text", "label"}`` lines, with optional previous_route, language, secondary_label, confidence;
    a ``"label": null`` is out of scope (read as ``oos_label``)."""
    out = []
    for n, o in read_jsonl(path):
        label = o.get("label", 0)  # 0: missing
        if not isinstance(o.get("text"), str) or not (label is None or isinstance(label, str)):
            raise DatasetError(
                f"{path}:{n}: needs a string 'text' and a 'label': a string, or null for out of scope"
            )
        out.append(
            Sample(
                o["text"],
                oos_label if label is None else label,
                o.get("previous_route"),
                o.get("language", language),
                o.get("secondary_label"),
                o.get("confidence"),
                n,
            )
        )
    if not out:
        raise DatasetError(f"{path}: empty dataset")
    return Dataset(str(path), out)


def _candidates(path: Any, n: int, o: dict[str, Any]) -> tuple[str | tuple[str, str], ...] | None:
    cands = o.get("candidates")
    if cands is None:
        return None
    if not isinstance(cands, list):
        raise DatasetError(
            f"{path}:{n}: 'candidates' must be a list of tool names or {{name, description}} objects"
        )
    out: list[str | tuple[str, str]] = []
    for c in cands:
        if isinstance(c, str) and c:
            out.append(c)
        elif (
            isinstance(c, dict)
            and isinstance(c.get("name"), str)
            and c["name"]
            and isinstance(c.get("description", ""), str)
        ):
            out.append((c["name"], c.get("description") or c["name"]))
        else:
            raise DatasetError(
                f"{path}:{n}: a candidate must be a tool name or a {{name, description}} object, "
                f"got {c!r:.80}"
            )
    names = [c if isinstance(c, str) else c[0] for c in out]
    if len(set(names)) != len(names):
        raise DatasetError(f"{path}:{n}: duplicate candidate names")
    missing = [t for t in o["tools"] if t not in names]
    if missing:
        raise DatasetError(f"{path}:{n}: gold tools {missing} are not among the row's candidates")
    return tuple(out)


def load_tool_queries(path: str | os.PathLike[str]) -> Dataset:
    """``{"query", "tools": [...], "candidates": [...]?}`` lines. ``tools`` may be empty
    (no tool fits) or hold several; ``candidates`` (names, or ``{name, description}``
    objects) limits the row to its own tools."""
    out = []
    for n, o in read_jsonl(path):
        tools = o.get("tools")
        if (
            not isinstance(o.get("query"), str)
            or not isinstance(tools, list)
            or not all(isinstance(t, str) and t for t in tools)
        ):
            raise DatasetError(
                f"{path}:{n}: needs 'query' (string) and 'tools' "
                "(a list of tool names, empty when no tool fits)"
            )
        out.append(ToolSample(o["query"], tuple(tools), n, _candidates(path, n, o)))
    if not out:
        raise DatasetError(f"{path}: empty dataset")
    return Dataset(str(path), out)


def is_tool_queries(path: str | os.PathLike[str]) -> bool:
    """Whether ``path``'s first row is a tool-selection row (``query`` and ``tools``), not a route row."""
    for _, o in read_jsonl(path):
        return "query" in o and "tools" in o
    return False


def load_tool_catalog(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """``{"name", "description", ...}`` lines (MetaTool's tools.jsonl); duplicate names are an error."""
    seen: dict[str, int] = {}
    out = []
    for n, o in read_jsonl(path):
        name = o.get("name")
        if not isinstance(name, str) or not name:
            raise DatasetError(f"{path}:{n}: a tool needs a 'name'")
        if name in seen:
            raise DatasetError(f"{path}:{n}: duplicate tool name {name!r} (first on line {seen[name]})")
        seen[name] = n
        out.append({"name": name, "description": str(o.get("description") or name)})
    if not out:
        raise DatasetError(f"{path}: empty tools file")
    return out


def shared_root() -> Path:
    env = os.environ.get("ROUTECORE_SHARED")
    if env:
        return Path(env) / "datasets"
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent.parent / "shared" / "datasets"
        if cand.is_dir():
            return cand
    raise DatasetError("../shared/datasets not found; set ROUTECORE_SHARED")


def clinc150(split: str) -> Dataset:
    return load_routes(shared_root() / "clinc150" / f"{split}.jsonl")


def banking77(split: str) -> Dataset:
    return load_routes(shared_root() / "banking77" / f"{split}.jsonl")


def massive(locale: str, split: str) -> Dataset:
    return load_routes(shared_root() / "massive" / locale / f"{split}.jsonl", language=locale)


def metatool(kind: str = "single_tool") -> tuple[Dataset, list[dict[str, Any]]]:
    root = shared_root() / "metatool"
    return load_tool_queries(root / f"{kind}.jsonl"), load_tool_catalog(root / "tools.jsonl")
