"""Building a router's parts (route table, tool catalog, calibration) from specs,
and rebuilding them for live updates with only the new exemplars embedded."""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from routecore.calibrate.calibration import Calibration, for_router
from routecore.calibrate.fits import Targets, learned_medium
from routecore.config.specs import RouteSpec, ToolSpec, unique
from routecore.core.lexical import LexicalTable
from routecore.core.progress import Progress, ProgressArg
from routecore.decide.policy import Policy
from routecore.decide.tables import (
    EncoderLike,
    KnownVectors,
    TableLexical,
    TableVectors,
    embed_texts,
    exemplar_texts,
)
from routecore.errors import ConfigError
from routecore.routers.route_table import RouteTable
from routecore.tools.tool_catalog import ToolCatalog, lexical_form
from routecore.updates.rebuild import Rebuild

#: The exemplar tables of a router: (key, which specs, the attribute holding the texts).
KEYS = (
    ("routes", "routes", "exemplars"),
    ("tools", "tools", "exemplars"),
    ("anti", "tools", "anti_patterns"),
)


@dataclass
class Parts:
    """What a :class:`~routecore.routers.router.Router` composes: one consistent snapshot."""

    route_table: RouteTable
    tool_catalog: ToolCatalog
    calibration: Calibration | None
    embedded: int  # exemplar texts embedded to build it
    embed_ms: float  # the time that took


def build(
    routes: Sequence[RouteSpec],
    tools: Sequence[ToolSpec],
    *,
    encoder: EncoderLike,
    spec_policy: Policy,
    llm: Any = None,
    memory: Any = None,
    head: Any = None,
    storage: str = "auto",
    calibration: Calibration | None = None,
    vectors: TableVectors | None = None,
    known: KnownVectors | None = None,
    lexical: TableLexical | None = None,
    progress: ProgressArg = None,
    head_threshold: float | None = None,
    answers: tuple[np.ndarray, np.ndarray] | None = None,
) -> Parts:
    """The parts of a router over ``routes`` and ``tools``.

    ``vectors``: tables' exemplar embeddings in exemplar order (a bundle's; a table left ``None``
    is embedded); ``lexical``: BM25 indexes of the same texts (a bundle's); ``known``: per table,
    embeddings by text to reuse (a live update, :class:`KnownVectors`); other texts are embedded. Without
    ``calibration`` the policy's unset numbers are calibrated zero-label (unless every one is set).
    ``head_threshold``: the exemplar head's out-of-scope cut to keep with ``calibration``'s tiers
    (only the serving head is trained again). ``answers``: (best probability, right) of answered
    queries the router did not route (a learning refit): the routing cut comes down to where they
    were right on ``Policy.route_precision`` (:func:`routecore.calibrate.fits.learned_medium`)."""
    # routes and tools built in code: one name each, as a config's (look-alikes too: "GENERAL", "general")
    unique([r.name for r in routes], "route", "Router")
    unique([t.name for t in tools], "tool", "Router")
    given, reuse = vectors or TableVectors(), known or KnownVectors()
    vec: dict[str, np.ndarray] = {}
    owners: dict[str, list[int]] = {}
    texts: dict[str, list[str]] = {}
    todo: dict[str, list[str]] = {}
    specs = {"routes": routes, "tools": tools}
    for key, which, attr in KEYS:
        texts[key], owners[key] = exemplar_texts(specs[which], attr)
        v = getattr(given, key)
        if v is not None:
            vec[key] = _checked(v, key, len(texts[key]), encoder.dim)
        else:
            have = getattr(reuse, key)
            todo[key] = list(dict.fromkeys(t for t in texts[key] if t not in have))
    n_todo = sum(map(len, todo.values()))
    bar = Progress(n_todo, "embedding exemplars", progress) if progress and n_todo else None
    t0 = time.perf_counter()
    for key, todo_texts in todo.items():
        new = dict(zip(todo_texts, embed_texts(encoder, todo_texts, progress=bar)))
        have = getattr(reuse, key)
        rows = [have[t] if t in have else new[t] for t in texts[key]]
        vec[key] = (
            np.stack(rows).astype(np.float32, copy=False) if rows else np.zeros((0, encoder.dim), np.float32)
        )
    embed_ms = (time.perf_counter() - t0) * 1e3
    lex: dict[str, Any] = {"routes": None, "tools": None}
    if spec_policy.lexical:  # BM25 tables of the same texts (tools: their names too); a bundle's are loaded
        saved = lexical or TableLexical()
        if routes:
            lex["routes"] = (
                LexicalTable.from_index(saved.routes, owners["routes"], len(routes))
                if saved.routes
                else LexicalTable(
                    texts["routes"], owners["routes"], len(routes), stemmer=spec_policy.lexical_stemmer
                )
            )
        if tools:
            stemmer, b = lexical_form(
                spec_policy, calibration
            )  # a bundle's or a live update's calibration keeps its fit
            lex["tools"] = (
                LexicalTable.from_index(saved.tools, owners["tools"], len(tools))
                if saved.tools
                else LexicalTable(
                    texts["tools"], owners["tools"], len(tools), [t.name for t in tools], stemmer=stemmer, b=b
                )
            )
    if calibration is None and not spec_policy.is_manual():
        calibration = for_router(
            encoder,
            spec_policy,
            vec["routes"],
            owners["routes"],
            len(routes),
            vec["tools"],
            owners["tools"],
            len(tools),
            lexical=lex["routes"] and (lex["routes"], texts["routes"]),
            tool_lexical=lex["tools"] and (lex["tools"], texts["tools"]),
        )
    if head is None and spec_policy.head == "exemplars" and len(routes) >= 2:
        head, calibration = _exemplar_head(
            encoder,
            spec_policy,
            vec["routes"],
            owners["routes"],
            routes,
            calibration,
            lex,
            texts,
            progress,
            head_threshold,
        )
    if answers is not None and calibration is not None:
        calibration = learned_medium(calibration, answers, Targets.of(spec_policy).route_precision)
    policy = spec_policy.resolve(calibration)
    route_table = RouteTable(
        routes,
        encoder=encoder,
        policy=policy,
        llm=llm,
        head=head,
        storage=storage,
        vectors=vec["routes"],
        lexical=lex["routes"],
    )
    tool_catalog = ToolCatalog(
        tools,
        encoder=encoder,
        policy=policy,
        memory=memory,
        storage=storage,
        vectors=vec["tools"],
        anti_vectors=vec["anti"],
        lexical=lex["tools"],
    )
    route_table.set_languages(spec_policy, calibration)
    tool_catalog.set_languages(spec_policy, calibration)
    return Parts(route_table, tool_catalog, calibration, n_todo, embed_ms)


def rebuild(r: Rebuild) -> Parts:
    """:func:`build` with what a live update or a learning refit rebuilds a router with."""
    return build(
        r.routes,
        r.tools,
        encoder=r.encoder,
        spec_policy=r.spec_policy,
        llm=r.llm,
        memory=r.memory,
        head=r.head,
        storage=r.storage,
        calibration=r.calibration,
        known=r.known,
        head_threshold=r.head_threshold,
        answers=r.answers,
    )


def _checked(v: np.ndarray, key: str, rows: int, dim: int) -> np.ndarray:
    """Given embeddings of the ``key`` table: ``rows`` x ``dim`` (a ConfigError otherwise)."""
    v = np.asarray(v)
    if v.ndim != 2 or v.shape[0] != rows or (rows and v.shape[1] != dim):
        raise ConfigError(
            f"TableVectors.{key} holds an array of shape {v.shape}, not one row of {dim} "
            f"per {key} exemplar ({rows})"
        )
    return v.astype(np.float32, copy=False)


def _exemplar_head(
    encoder: EncoderLike,
    spec_policy: Policy,
    V: np.ndarray,
    owners: list[int],
    routes: Sequence[RouteSpec],
    calibration: Calibration | None,
    lex: dict[str, Any],
    texts: dict[str, list[str]],
    progress: ProgressArg,
    head_threshold: float | None = None,
) -> tuple[Any, Calibration | None]:
    """The head of ``Policy(head="exemplars")`` and the calibration with its cuts
    (a manual policy keeps no calibration: the head only brings its scope cut). With
    ``head_threshold`` and a ``calibration`` that holds a head's cuts, only the serving
    head is trained and both are kept (a live update with ``recalibrate=False``)."""
    from routecore.calibrate.exemplar_head import (
        fit_exemplar_head,
        out_of_scope_rows,
        prior_fit,
        serving_head,
        with_head,
    )
    from routecore.calibrate.head_languages import language_fits
    from routecore.calibrate.prior import prior_for
    from routecore.core.background import (
        background_languages,
        background_vectors,
        parallel_rows,
        parallel_vectors,
    )

    base = calibration or for_router(
        encoder,
        spec_policy,
        V,
        owners,
        len(routes),
        np.zeros((0, V.shape[1]), np.float32),
        [],
        0,
        lexical=lex["routes"] and (lex["routes"], texts["routes"]),
    )
    # The out-of-scope class holds background queries in the languages the exemplars are
    # written in: others would teach the head that a language is out of scope.
    B = background_vectors(encoder)
    homes = {n for n, v in base.languages.items() if v.covered}
    if homes:
        B = B[np.array([lang in homes for lang in background_languages()])]
    if head_threshold is not None and calibration is not None:
        return serving_head(
            V, np.asarray(owners), [r.name for r in routes], B, base, head_threshold
        ), calibration
    model_id = str(getattr(encoder, "model_id", ""))
    prior = prior_for(model_id, spec_policy.route_precision) if spec_policy.prior else None
    if prior is not None and (calibration is None or calibration.source == "zero-label"):
        # The model's measured prior holds the cuts: one training, no folds (routecore.calibrate.prior).
        oos = out_of_scope_rows(B, V, base, np.asarray(owners))
        head = serving_head(V, np.asarray(owners), [r.name for r in routes], B, base, 0.0, oos=oos)
        fit = prior_fit(head, prior, base, len(V), len(B), len(oos))
        if calibration is None:
            return head, None
        per_language = language_fits(fit, calibration.languages, parallel_vectors(encoder), parallel_rows())
        return head, replace(with_head(calibration, fit, per_language), source="prior")
    targets = Targets.of(spec_policy)
    # No lexical gain: the router does not add the lexical score to the head's probabilities.
    fitted = fit_exemplar_head(
        V, np.asarray(owners), [r.name for r in routes], B, base, targets=targets, progress=progress
    )
    if fitted.stats.cuts_fallback:
        # Too few exemplars to hold out: a head whose cuts nothing vouches for would decide
        # worse than the calibrated cosines, so the router keeps those and says why.
        skipped = replace(fitted.stats, skipped="too few exemplars to fit the head's cuts out of fold")
        return None, (
            replace(calibration, stats=replace(calibration.stats, head=skipped))
            if calibration is not None
            else None
        )
    if calibration is None or calibration.source != "zero-label":
        return fitted.head, calibration
    per_language = language_fits(
        fitted, calibration.languages, parallel_vectors(encoder), parallel_rows(), targets
    )
    return fitted.head, with_head(calibration, fitted, per_language)
