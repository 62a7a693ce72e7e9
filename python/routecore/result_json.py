"""The JSON form of results: :class:`ScoreMap` (a score array read by name), :func:`plain` and
:class:`JsonResult` (``to_dict`` / ``to_json``), and the ``null`` JSON writes for a score that is not
finite (:mod:`routecore.decision` re-exports them)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np

from routecore.errors import InvalidArgumentError


class ScoreMap(Mapping[str, float]):
    """Read-only ``name -> score`` view over a per-route array.

    Built in O(1) however many routes there are (no per-route Python loop on
    the routing path). It compares equal to a dict with the same items, and
    ``dict(m)`` / :meth:`to_dict` give a plain dict.
    """

    __slots__ = ("_names", "_values", "_pos")

    def __init__(
        self, names: Sequence[str], values: np.ndarray | Sequence[float], pos: dict[str, int] | None = None
    ):
        self._names = names
        self._values = values if isinstance(values, np.ndarray) else np.asarray(values)
        self._pos = pos
        if len(self._names) != len(self._values):
            raise InvalidArgumentError(f"{len(self._names)} names for {len(self._values)} values")

    def __getitem__(self, name: str) -> float:
        if self._pos is None:
            self._pos = {n: i for i, n in enumerate(self._names)}
        return float(self._values[self._pos[name]])

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def to_dict(self) -> dict[str, float]:
        """A plain ``{name: score}`` copy, in this map's order."""
        return dict(zip(self._names, self._values.tolist()))

    def values_for(self, names: Sequence[str]) -> np.ndarray:
        """The scores of ``names`` as a new float64 array, 0.0 for a name this map lacks: one copy of
        the values, no per-name lookup, when ``names`` are this map's own in the same order."""
        if names is self._names or list(names) == list(self._names):
            return np.array(self._values, dtype=np.float64)
        return np.array([self.get(n, 0.0) for n in names], dtype=np.float64)

    def __repr__(self) -> str:
        return f"ScoreMap({self.to_dict()!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ScoreMap, (list(self._names), self._values))


def plain(v: Any) -> Any:
    """Dataclasses and score maps as plain dicts/lists, ready for ``json.dumps``."""
    if isinstance(v, ScoreMap):
        return v.to_dict()
    if is_dataclass(v) and not isinstance(v, type):
        return {f.name: plain(getattr(v, f.name)) for f in fields(v)}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


class JsonResult:
    """``to_json`` of a result: its ``to_dict`` as JSON text (every router's result has both)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self, **kw: Any) -> str:
        """:meth:`to_dict` as JSON text (``kw`` go to :func:`json.dumps`). A score that is not finite
        (``-inf``: a route a clarification's answer did not offer) is ``null``, as ``/v1/route`` writes it."""
        return json.dumps(_finite(self.to_dict()), ensure_ascii=False, allow_nan=False, **kw)


def _finite(v: Any) -> Any:
    """``v`` with every float that is not finite as None: JSON has no ``Infinity``."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def scores_from_json(m: Mapping[str, float | None]) -> dict[str, float]:
    """A score map read back from JSON: ``null`` is the ``-inf`` :func:`_finite` wrote."""
    return {k: -math.inf if x is None else x for k, x in m.items()}
