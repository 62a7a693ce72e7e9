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
    query: str
    tools: tuple[str, ...]
    line: int = 0


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
    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DatasetError(f"{p}:{n}: malformed JSON ({e.msg})") from None
            if not isinstance(obj, dict):
                raise DatasetError(f"{p}:{n}: expected a JSON object")
            yield n, obj


def load_routes(path: str | os.PathLike[str], *, language: str | None = None) -> Dataset:
    """``{"text", "label"}`` lines, with optional previous_route, language, secondary_label, confidence."""
    out = []
    for n, o in read_jsonl(path):
        if not isinstance(o.get("text"), str) or not isinstance(o.get("label"), str):
            raise DatasetError(f"{path}:{n}: needs string fields 'text' and 'label'")
        out.append(Sample(o["text"], o["label"], o.get("previous_route"), o.get("language", language), o.get("secondary_label"), o.get("confidence"), n))
    if not out:
        raise DatasetError(f"{path}: empty dataset")
    return Dataset(str(path), out)


def load_tool_queries(path: str | os.PathLike[str]) -> Dataset:
    """``{"query", "tools": [...]}`` lines."""
    out = []
    for n, o in read_jsonl(path):
        tools = o.get("tools")
        if not isinstance(o.get("query"), str) or not isinstance(tools, list) or not tools:
            raise DatasetError(f"{path}:{n}: needs 'query' (string) and 'tools' (non-empty list)")
        out.append(ToolSample(o["query"], tuple(str(t) for t in tools), n))
    if not out:
        raise DatasetError(f"{path}: empty dataset")
    return Dataset(str(path), out)


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
