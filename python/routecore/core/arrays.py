"""Input normalisation shared by the index backends."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from routecore.errors import InvalidArgumentError


def as_f32(x: Any, what: str) -> np.ndarray:
    """Return ``x`` as a C-contiguous float32 array of rank 1 or 2.

    A C-contiguous float32 array passes through untouched (the native side reads
    it without copying); anything else numeric (float64, strided views, lists) is
    converted once. Non-numeric input is rejected with a message.
    """
    if isinstance(x, np.ndarray) and x.dtype == np.float32 and x.flags.c_contiguous:
        arr = x
    else:
        try:
            arr = np.ascontiguousarray(x, dtype=np.float32)
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(
                f"{what}: expected numeric vectors convertible to float32 ({e})"
            ) from None
    if arr.ndim not in (1, 2):
        raise InvalidArgumentError(f"{what}: expected a vector or a 2-D batch, got shape {arr.shape}")
    return arr


def as_ids(ids: Any) -> np.ndarray:
    """Ids as a uint64 array; rejects negative, fractional and non-numeric ids."""
    if isinstance(ids, (int, np.integer)):
        ids = [ids]
    arr = np.asarray(ids)
    if arr.ndim != 1:
        raise InvalidArgumentError(f"ids: expected a 1-D sequence, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InvalidArgumentError(f"ids: expected integers, got dtype {arr.dtype}")
    if arr.size and arr.min() < 0:
        raise InvalidArgumentError("ids: must be >= 0")
    return np.ascontiguousarray(arr, dtype=np.uint64)


def as_names(values: Sequence[str] | str | None, n: int, what: str) -> list[str] | None:
    """Labels or domains as a list of ``n`` strings (one string is repeated)."""
    if values is None:
        return None
    if isinstance(values, str):
        return [values] * n
    out = [str(v) for v in values]
    if len(out) != n:
        raise InvalidArgumentError(f"{what}: {len(out)} given for {n} vectors")
    return out
