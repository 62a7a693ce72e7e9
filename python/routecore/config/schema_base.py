"""The building blocks of the config schema (routecore.config.config_schema, policy_schema):
bounded number and name types, and the strict struct bases."""

from __future__ import annotations

import math
import typing
from typing import Annotated, Dict, Tuple

from msgspec import UNSET, Meta, Struct

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
