"""The arguments every router verb shares, checked the same way: caller-given query vectors
(:func:`query_vectors`), active domains (:func:`context_domains_arg`) and per-query values of a
batch (:func:`per_query`)."""

from __future__ import annotations

import warnings
from typing import AbstractSet, Any, Iterable, Sequence

import numpy as np

from routecore.core.arrays import as_f32
from routecore.decision import CLARIFY, Decision
from routecore.errors import ConfigError, DimensionMismatchError, InvalidArgumentError, NonFiniteError
from routecore.llm.llm import route_named


def query_vectors(vectors: Any, dim: int, n: int | None = None) -> np.ndarray:
    """Caller-given query embeddings as unit float32 rows (``n`` of them when given).

    Raises:
        DimensionMismatchError: a row is not ``dim`` wide, or there are not ``n`` rows.
        NonFiniteError: a value is NaN or infinite, or a row is all zeros.
    """
    arr = as_f32(vectors, "vector")
    arr = arr.reshape(1, -1) if arr.ndim == 1 else arr
    if arr.shape[1] != dim or (n is not None and arr.shape[0] != n):
        want = f"{n} x {dim}" if n is not None else f"{dim} wide"
        raise DimensionMismatchError(f"query vectors: expected {want}, got shape {tuple(arr.shape)}")
    if not np.isfinite(arr).all():
        raise NonFiniteError("query vectors hold NaN or infinite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any():
        raise NonFiniteError("a query vector is all zeros: it has no direction to compare")
    if np.abs(norms - 1).max() <= 1e-5:  # already unit (the encoder's own): used as given
        return arr
    unit: np.ndarray = (arr / norms).astype(np.float32, copy=False)
    return unit


def context_domains_arg(context_domains: Any, legacy: Any = None, legacy_name: str = "") -> tuple[str, ...]:
    """The caller's active domains as every verb takes them (``context_domains=``: a list of domain
    names, or empty); ``legacy``: the one domain an earlier argument named ``legacy_name`` gave
    (deprecated: a :class:`DeprecationWarning`, and never both).

    Raises:
        InvalidArgumentError: not a list of names (a str alone is one), or both forms given.
    """
    if legacy is not None:
        warnings.warn(
            f"{legacy_name}= is deprecated: give context_domains=[...]", DeprecationWarning, stacklevel=3
        )
        if not isinstance(legacy, str):
            raise InvalidArgumentError(f"{legacy_name} must be a domain name, got {legacy!r}")
        if context_domains:
            raise InvalidArgumentError(f"give context_domains= or {legacy_name}=, not both")
        return (legacy,)
    if (
        isinstance(context_domains, str)
        or not isinstance(context_domains, (list, tuple, set, frozenset))
        or not all(isinstance(d, str) for d in context_domains)
    ):
        raise InvalidArgumentError(
            f"context_domains must be a list of domain names (or empty), got {context_domains!r}"
        )
    return tuple(context_domains)


def scored_domains(
    context_domains: Sequence[str], known: AbstractSet[str], what: str = "route"
) -> tuple[list[str], tuple[tuple[str, str], ...]]:
    """The active domains a table's scores read (those of ``known``, the domains some route, or tool,
    belongs to) and, when others were given, a ``context_domain`` alert that names them: a domain no
    route has would move every route's score alike (a typo: "operatoins"), so it is set aside."""
    if not context_domains:
        return [], ()
    kept = [d for d in context_domains if d in known]
    unknown = [d for d in context_domains if d not in known]
    if not unknown:
        return kept, ()
    said = f"no {what} belongs to context domain(s) {', '.join(map(repr, unknown))}: not applied to scores"
    if known:
        said += f" (the {what}s' domains: {', '.join(sorted(known))})"
    return kept, (("context_domain", said),)


def previous_arg(previous: Any) -> Any:
    """The previous route as a decision reads it: a clarify decision's ``route`` (``CLARIFY``, what a
    chat loop passes on as ``previous=d.route``, in any case: no route may be named so) is no route.

    Raises:
        InvalidArgumentError: not a str or None.
    """
    if previous is not None and not isinstance(previous, str):
        raise InvalidArgumentError(f"previous must be a route name or None, got {type(previous).__name__}")
    return None if previous is not None and previous.upper() == CLARIFY else previous


def known_route(previous: Any, names: Iterable[str]) -> str | None:
    """The route of ``names`` that ``previous`` names: None for None, blank or ``CLARIFY``; a name,
    its case folded when that names exactly one ("billing" for BILLING).

    Raises:
        InvalidArgumentError: not a str or None, or none of ``names``.
    """
    previous = previous_arg(previous)
    if previous is None or not previous.strip():
        return None
    names, previous = list(names), previous.strip()
    named = route_named(previous, names)  # as an LLM's answer is read
    if named is None:
        raise InvalidArgumentError(f"unknown previous route {previous!r}; known: {sorted(names)}")
    return named


def clarify_arg(clarify: Any, names: Iterable[str]) -> Decision | None:
    """The ``clarify`` decision a query answers, checked: a :class:`Decision` whose action is ``clarify``
    and whose candidates are routes of ``names`` (a decision read back from JSON, say).

    Raises:
        InvalidArgumentError: not a Decision, not a clarification, or candidates that are no routes here.
    """
    if clarify is None:
        return None
    if not isinstance(clarify, Decision):
        raise InvalidArgumentError(f"clarify must be the clarify Decision, got {type(clarify).__name__}")
    if clarify.action != "clarify":
        raise InvalidArgumentError(f"clarify: a decision whose action is {clarify.action!r}, not 'clarify'")
    cands = clarify.candidates
    if not all(isinstance(c, str) for c in cands):
        raise InvalidArgumentError(f"clarify: candidates must be a list of route names, got {list(cands)!r}")
    unknown = sorted(set(cands) - set(names))
    if unknown:
        raise InvalidArgumentError(f"clarify: candidates {unknown} are not routes of this router")
    return clarify


def previous_query_arg(previous_query: Any) -> str | None:
    """The previous turn's text as a follow-up reading takes it: None when absent or blank (a lone
    surrogate, which no encoder reads, dropped).

    Raises:
        InvalidArgumentError: not a str or None.
    """
    if previous_query is not None and not isinstance(previous_query, str):
        got = type(previous_query).__name__
        raise InvalidArgumentError(f"previous_query must be the previous turn's text or None, got {got}")
    text = (previous_query or "").encode("utf-8", "ignore").decode("utf-8").strip()
    return text or None


def per_query(value: Any, n: int, what: str) -> list[Any]:
    """``value`` for each of ``n`` queries: one value (or None) for all, or a list of ``n``."""
    if value is None or isinstance(value, str):
        return [value] * n
    try:
        out = list(value)
    except TypeError:
        msg = f"{what}: one value for all queries, or a list of one per query; got {value!r}"
        raise InvalidArgumentError(msg) from None
    if len(out) != n:
        raise InvalidArgumentError(f"{what}: {len(out)} values for {n} queries (give one, or one per query)")
    return out


def part_of(value: Any, what: str, want: str, *verbs: str) -> None:
    """Check a constructor's part by the verbs it must have (a duck-typed check: a caller's own
    stand-in passes), e.g. ``part_of(r, "layer 'intent'", "a Router", "route", "encoder")``.

    Raises:
        ConfigError: ``value`` lacks one of ``verbs``.
    """
    if not all(hasattr(value, v) for v in verbs):
        raise ConfigError(f"{what} must be {want}, got {type(value).__name__}")


def stored_text(text: Any, what: str, blank: bool = False) -> str:
    """``text`` as a store keeps it (a learned exemplar, a lesson, its context): lone surrogates (half an
    emoji from a JSON API, which no file or database can hold) removed, as a query's are.

    Raises:
        InvalidArgumentError: not a str, or (unless ``blank``) nothing but blanks and lone surrogates.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"{what} must be a str, got {type(text).__name__}")
    clean = text if text.isascii() else "".join(ch for ch in text if not "\ud800" <= ch <= "\udfff")
    if not blank and not clean.strip():
        raise InvalidArgumentError(f"{what} must be a non-blank string")
    return clean
