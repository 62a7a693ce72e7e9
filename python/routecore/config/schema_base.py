"""The building blocks of the config schema (routecore.config.config_schema, policy_schema):
bounded number and name types, the strict struct bases, and :func:`record_from_dict` for the
dataclass records read back from bundles and files."""

from __future__ import annotations

import math
import typing
from dataclasses import fields
from typing import Annotated, Any, Dict, Mapping, Tuple, TypeVar

from msgspec import UNSET, Meta, Struct

from routecore.errors import ConfigError

Unit = Annotated[float, Meta(ge=0.0, le=1.0)]
NonNegative = Annotated[float, Meta(ge=0.0)]
Positive = Annotated[float, Meta(gt=0.0)]
Name = Annotated[str, Meta(min_length=1, max_length=256)]
Text = Annotated[str, Meta(min_length=1)]
Count = Annotated[int, Meta(ge=0, le=1 << 31)]
AtLeastOne = Annotated[int, Meta(ge=1, le=1 << 31)]


class Strict(Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Finite(Strict):
    """msgspec's bounds reject NaN but let infinities through: these structs check their floats."""

    def __post_init__(self) -> None:
        names = FLOAT_FIELDS.get(type(self))
        if names is None:
            hints = typing.get_type_hints(type(self))
            names = FLOAT_FIELDS[type(self)] = tuple(
                n for n in self.__struct_fields__ if "float" in str(hints[n])
            )
        for name in names:
            v = getattr(self, name)
            if v is not None and v is not UNSET and not math.isfinite(v):
                raise ValueError(f"`{name}` must be finite, got {v}")


FLOAT_FIELDS: Dict[type, Tuple[str, ...]] = {}

_R = TypeVar("_R")


def record_from_dict(cls: type[_R], d: Any, what: str) -> _R:
    """The dataclass ``cls`` of the mapping ``d`` (a bundle's or a file's), field by field.

    Raises:
        ConfigError: ``d`` is not a mapping, names a key ``cls`` does not have, or misses a
            required one (the message starts with ``what``).
    """
    known = sorted(f.name for f in fields(cls))  # type: ignore[arg-type]
    if not isinstance(d, Mapping):
        raise ConfigError(f"{what}: expected an object of {known}, got {type(d).__name__}")
    extra = sorted(set(d) - set(known))
    if extra:
        raise ConfigError(f"{what}: unknown keys {extra}; expected an object of {known}")
    try:
        return cls(**d)
    except TypeError as e:
        raise ConfigError(f"{what}: {e}") from None
