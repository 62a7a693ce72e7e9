"""``routecore doctor``: what is wrong with a route config, with examples and numbers, and a cleaned copy.

    from routecore.doctor.doctor import diagnose, apply_edits, write_config
    report = diagnose("routes.yaml")            # or a Router
    print(report.to_dict()["misfits"])
    write_config(apply_edits(doc, report.edits), "routes.clean.yaml")

Every cut is on the encoder's own scale, read from the router's calibration
(:mod:`routecore.calibrate.calibration`): its temperature ``T`` (a gap of one ``T`` is a factor
*e* between two routes' probabilities), ``match`` (a paraphrase's typical best score)
and ``unrelated`` (an unrelated query's). Each exemplar is scored against every route's *other*
exemplars (leave-one-out, :mod:`routecore.calibrate.held_out`):

- a **misfit** is nearer another route than its own by ``T * ln(P / (1 - P))`` or more
  (``P`` = ``policy.route_precision``, unset 0.90: held out, another route would take it at the
  odds routed decisions are held to). Scored again against the config without the misfits, it is **misplaced**
  when one route would take it (more likely than all others together, and nearer a
  paraphrase than an unrelated query: score >= ``(match + unrelated) / 2``; the fix moves
  it there), **generic** when none would (near several routes: the fix drops it), and no
  fault when its own route wins once the other misfits are gone;
- an exemplar nearer the bundled background set than any route by that same gap, with no
  paraphrase in its own route (score < ``match``), is generic;
- **near-duplicates** share a route and a normalised text, or a cosine past both the
  near-copy cut of calibration (:func:`routecore.calibrate.held_out.near_duplicate_cut`) and
  ``1 - (1 - match) / 4`` (three quarters of the way from a paraphrase to the same text);
- **confused pairs**: routes whose (non-misfit) exemplars are, held out, nearer the other
  route at least :data:`~routecore.doctor.doctor_checks.MIN_CONFUSIONS` times;
- **thin routes**: fewer than :data:`MIN_EXEMPLARS` exemplars.

With ``data=`` (labelled JSONL) and ``log=`` (a RoutingMetrics decision log), the report
adds per-route accuracy and the routes queries fall out of (:mod:`routecore.doctor.doctor_usage`).
A route's description counts as an exemplar but is never edited; no edit empties a route.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from routecore.calibrate.fits import Targets
from routecore.calibrate.held_out import near_duplicate_cut
from routecore.doctor import doctor_checks as checks
from routecore.doctor.doctor_checks import DUPLICATE_SHARE

# Re-exported (``X as X``): the checks' types and the fix are part of the doctor's API.
from routecore.doctor.doctor_checks import ConfusedPair as ConfusedPair
from routecore.doctor.doctor_checks import Cuts as Cuts
from routecore.doctor.doctor_checks import Duplicate as Duplicate
from routecore.doctor.doctor_checks import Exemplar as Exemplar
from routecore.doctor.doctor_checks import Misfit as Misfit
from routecore.doctor.doctor_checks import PairExample as PairExample
from routecore.doctor.doctor_checks import normalised as normalised
from routecore.doctor.doctor_fix import apply_edits as apply_edits
from routecore.doctor.doctor_fix import edited_text as edited_text
from routecore.doctor.doctor_fix import write_config as write_config
from routecore.errors import ConfigError

if TYPE_CHECKING:
    from routecore.calibrate.calibration import Calibration
    from routecore.decide.tables import EncoderLike
    from routecore.routers.router import Router

#: A route with fewer exemplars is thin (the smallest k of the few-shot benchmarks, issue 34).
MIN_EXEMPLARS = 5


#: Route pairs are reported when at least this many held-out exemplars are nearer the other route.
@dataclass(frozen=True)
class ThinRoute:
    route: str
    exemplars: int
    wanted: int


@dataclass(frozen=True)
class CalibrationInfo:
    """Where the policy's numbers come from (``Router.calibrated``) and the calibration's own figures."""

    source: str
    calibration: str
    held_out: int
    temperature: float
    match: float
    unrelated: float
    min_score: float
    note: str | None


@dataclass(frozen=True)
class Edit:
    """``drop`` or ``move`` (applied by :func:`apply_edits`), or ``add`` (a suggestion only)."""

    action: str
    route: str
    index: int
    text: str
    to: str | None
    reason: str


@dataclass(frozen=True)
class DoctorReport:
    config: str
    model: str
    routes: int
    exemplars: int
    calibration: CalibrationInfo
    cuts: Cuts
    misfits: tuple[Misfit, ...]
    duplicates: tuple[Duplicate, ...]
    confused_pairs: tuple[ConfusedPair, ...]
    thin_routes: tuple[ThinRoute, ...]
    edits: tuple[Edit, ...]
    suggestions: tuple[str, ...]
    data: Any = None  # routecore.doctor.doctor_usage.DataReport
    log: Any = None  # routecore.doctor.doctor_usage.LogReport

    def to_dict(self) -> dict[str, Any]:
        """Every finding as plain JSON-ready values."""
        return asdict(self)


def _calibration(router: Router, V: np.ndarray, owners: np.ndarray, R: int, B: np.ndarray) -> Calibration:
    if router.calibration is not None:
        return router.calibration
    from routecore.calibrate.calibration import (
        zero_label,  # a manual policy: the scale still comes from the exemplars
    )

    return zero_label(V, owners.tolist(), R, B)


def _vectors(router: Router, n: int) -> np.ndarray:
    """The route exemplars' embeddings from the router's table (f32), else embedded again."""
    table = router.route_table.table
    if table.storage == "f32" and len(table.index) == n:
        ids, vecs, _, _ = table.index.vectors()
        V = np.empty((n, vecs.shape[1]), np.float32)
        V[np.asarray(ids, dtype=np.int64)] = vecs
        return V
    from routecore.decide.tables import embed_texts

    return embed_texts(router.encoder, list(table.texts))


def load_router(path: str | os.PathLike[str], encoder: EncoderLike | None = None) -> Router:
    """The router of a config file (its routes are what the doctor reads)."""
    from routecore.routers.router import Router

    return Router.from_config(path, encoder=encoder)


def diagnose(
    config_or_router: str | os.PathLike[str] | Router,
    data: str | os.PathLike[str] | None = None,
    log: str | os.PathLike[str] | None = None,
    *,
    encoder: EncoderLike | None = None,
    vectors: np.ndarray | None = None,
    precision: float | None = None,
) -> DoctorReport:
    """The :class:`DoctorReport` of a config file or a :class:`~routecore.routers.router.Router`.

    ``vectors``: the route exemplars' embeddings in table order (else read from the
    router, or embedded); ``data``: labelled JSONL; ``log``: a decision log; ``precision``:
    the odds ``P / (1 - P)`` another route must have over an exemplar's own for it to be a
    misfit (default: the policy's ``route_precision``)."""
    from routecore.calibrate.calibration import fallback_note
    from routecore.core.background import background_vectors

    if isinstance(config_or_router, (str, os.PathLike)):
        router, where = load_router(config_or_router, encoder), str(config_or_router)
    else:
        router, where = config_or_router, ""
    specs = list(router.route_specs)
    if not specs:
        raise ConfigError(f"{where or 'router'}: no routes to diagnose (the doctor reads routes)")
    names = [s.name for s in specs]
    exemplars = [e for s in specs for e in _route_exemplars(s)]  # in the router's table order
    owners = np.array([names.index(e.route) for e in exemplars], dtype=np.int64)
    V = np.asarray(vectors, dtype=np.float32) if vectors is not None else _vectors(router, len(exemplars))
    if len(V) != len(exemplars):
        raise ConfigError(f"vectors: {len(V)} rows for {len(exemplars)} exemplars")
    V = V / np.maximum(np.linalg.norm(V, axis=1, keepdims=True), 1e-12)
    B = background_vectors(router.encoder)
    cal = _calibration(router, V, owners, len(names), B)
    T = float(cal.temperature)
    P = float(Targets.of(router.policy).route_precision if precision is None else precision)
    if not 0.5 <= P < 1.0:
        raise ConfigError(f"precision must be in [0.5, 1), got {P!r}")
    rows = np.flatnonzero(np.bincount(owners, minlength=len(names))[owners] >= 2)
    dup_q = float(near_duplicate_cut(V, owners, rows)[0]) if len(rows) else math.inf
    m, u = float(cal.match), float(cal.unrelated)
    cuts = Cuts(
        T,
        T * math.log(P / (1.0 - P)),
        max(dup_q, 1.0 - (1.0 - m) * (1.0 - DUPLICATE_SHARE)),
        m,
        u,
        (m + u) / 2.0,
    )
    misfits = checks.misfits(exemplars, names, owners, V, B, cuts)
    gone = {m.exemplar for m in misfits}
    duplicates = checks.duplicates(exemplars, owners, V, cuts.duplicate, gone)
    gone |= {d.drop for d in duplicates}
    pairs = checks.confused_pairs(exemplars, names, owners, V, {m.exemplar for m in misfits})
    counts = np.bincount(owners, minlength=len(names))
    thin = tuple(ThinRoute(n, int(c), MIN_EXEMPLARS) for n, c in zip(names, counts) if c < MIN_EXEMPLARS)
    edits = _edits(misfits, duplicates, specs)
    info = CalibrationInfo(
        router.calibrated,
        cal.source,
        cal.stats.held_out,
        T,
        float(cal.match),
        float(cal.unrelated),
        float(cal.min_score),
        fallback_note(cal),
    )
    usage_data = usage_log = None
    if data is not None or log is not None:
        from routecore.doctor import doctor_usage

        usage_data = doctor_usage.data_report(router, data) if data is not None else None
        usage_log = doctor_usage.log_report(router, log) if log is not None else None
    report = DoctorReport(
        where or "<router>",
        str(router.encoder.model_id),
        len(names),
        len(exemplars),
        info,
        cuts,
        misfits,
        duplicates,
        pairs,
        thin,
        edits,
        (),
        usage_data,
        usage_log,
    )
    return _with_suggestions(report)


def _route_exemplars(spec: Any) -> list[Exemplar]:
    out = [Exemplar(spec.name, i, t) for i, t in enumerate(spec.utterances)]
    return out + ([Exemplar(spec.name, -1, spec.description)] if spec.description else [])


def _edits(
    misfits: Sequence[Misfit], duplicates: Sequence[Duplicate], specs: Sequence[Any]
) -> tuple[Edit, ...]:
    """Drops and moves, never of a description, never emptying a route (its best-placed exemplar stays)."""
    left = {s.name: len(s.utterances) + bool(s.description) for s in specs}
    edits = []
    for m in sorted(misfits, key=lambda m: m.gap, reverse=True):  # the clearest first
        e = m.exemplar
        if e.index < 0 or left[e.route] <= 1:
            continue
        left[e.route] -= 1
        why = f"nearer {m.nearest_route} than its own route by {m.gap:.1f} T"
        if m.kind == "misplaced":
            edits.append(Edit("move", e.route, e.index, e.text, m.to, why + f"; {m.to} would take it"))
        else:
            near = "the background" if m.near_routes == ("background",) else ", ".join(m.near_routes)
            edits.append(Edit("drop", e.route, e.index, e.text, None, f"generic: near {near}"))
    for d in duplicates:
        if left[d.drop.route] > 1:
            left[d.drop.route] -= 1
            edits.append(
                Edit(
                    "drop",
                    d.drop.route,
                    d.drop.index,
                    d.drop.text,
                    None,
                    f"near-duplicate of {d.keep.text!r} (cosine {d.cosine:.3f})",
                )
            )
    return tuple(edits)


def _with_suggestions(r: DoctorReport) -> DoctorReport:
    from dataclasses import replace

    lines = [
        f"{e.action} {e.text!r} from {e.route}" + (f" to {e.to}" if e.to else "") + f" ({e.reason})"
        for e in r.edits
        if e.action != "add"
    ]
    lines += [
        f"add at least {t.wanted - t.exemplars} exemplars to {t.route} ({t.exemplars} now)"
        for t in r.thin_routes
    ]
    lines += [
        f"tell {p.a} and {p.b} apart: add exemplars that only one of them fits, or merge them "
        f"({p.a_to_b + p.b_to_a} exemplars nearer the other route)"
        for p in r.confused_pairs[:10]
    ]
    extra: list[Edit] = []
    if r.log is not None:
        extra = [
            Edit("add", route, -1, q, None, "a logged query that fell out of its route")
            for route, q in r.log.to_add
        ]
        lines += [f"add {e.text!r} to {e.route} ({e.reason})" for e in extra]
    if r.calibration.note:
        lines.append(r.calibration.note)
    return replace(r, edits=r.edits + tuple(extra), suggestions=tuple(lines))
