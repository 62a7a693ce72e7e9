"""The incremental part of learning (:mod:`routecore.updates.learning`): a route table with one
row more or some rows fewer, and the background refit of the head and calibration.

A new route table is a shallow copy of the one in use with a new
:class:`~routecore.decide.tables.ScoreTable` (the embeddings of the other rows reused, not
recomputed), new specs and a new BM25 table; the speller and the language policies
are kept (the background refit rebuilds everything). The old table is never changed,
so a reader that holds it goes on with it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from routecore.calibrate.calibration_record import kept_calibration
from routecore.decide.tables import ScoreTable, exemplar_texts, known_vectors
from routecore.updates.rebuild import Changeable, Rebuild, rebuild_of

#: A learned query this close to an exemplar of its route is a near-duplicate: on the calibration's
#: similarity scale (``Calibration.similarity``: 0 is an unrelated best match under the encoder in
#: use, 1 a paraphrase), this level, twice a paraphrase's distance above an unrelated match.
DUPLICATE_LEVEL = 2.0
#: Without a calibration (every threshold set by hand): this quantile of the cosines of the
#: config's same-route exemplar pairs.
DUPLICATE_QUANTILE = 0.99


@dataclass
class State:
    """What learning keeps of the route table ``rt``: its rows' embeddings ``V`` in exemplar
    order, their route positions ``owners``, and the near-duplicate cut calibrated on the
    config's exemplars (carried from table to table)."""

    rt: Any
    V: np.ndarray
    owners: np.ndarray
    cut: float | None = None

    @classmethod
    def of(cls, rt: Any, prev: State | None = None) -> State:
        rows = rt.learn_rows
        if rows is None:
            have = known_vectors(rt.table)
            texts, owners = exemplar_texts(rt.specs)
            dim = rt.encoder.dim
            V = np.stack([have[t] for t in texts]) if texts else np.zeros((0, dim), np.float32)
            rows = (np.ascontiguousarray(V, dtype=np.float32), np.asarray(owners, np.int64))
            rt.learn_rows = rows
        st = cls(rt, rows[0], rows[1])
        if prev is not None:
            st.cut = prev.cut
        return st

    def nearest(self, v: np.ndarray, route: str) -> float:
        """The cosine of ``v`` to the nearest exemplar of ``route``."""
        rows = self.owners == self.rt.table.pos[route]
        return float((self.V[rows] @ v).max()) if rows.any() else -1.0

    def duplicate_cut(self, spec_policy: Any, calibration: Any) -> float:
        """``policy.learn_duplicate``; else :data:`DUPLICATE_LEVEL` on the similarity scale of the
        calibration in force when learning began (kept through the refits: theirs, with more
        exemplars, moved it from 0.96 to 0.88 on the MASSIVE en replay, and then most queries the
        router did not route counted as duplicates); else the :data:`DUPLICATE_QUANTILE` of the
        same-route pairs. Below 1: a copy is a duplicate."""
        if spec_policy.learn_duplicate is not None:
            return float(spec_policy.learn_duplicate)
        if self.cut is None and calibration is not None:  # the calibration in force when learning began
            self.cut = min(calibration.similarity(DUPLICATE_LEVEL), 1.0 - 1e-4)
        if self.cut is None:
            G = self.V @ self.V.T
            same = self.owners[:, None] == self.owners[None, :]
            np.fill_diagonal(same, False)
            q = float(np.quantile(G[same], DUPLICATE_QUANTILE)) if same.any() else np.inf
            self.cut = min(q, 1.0 - 1e-4)
        return self.cut

    def vector_of(self, route: str, text: str) -> np.ndarray | None:
        """The embedding of exemplar ``text`` of ``route``, or None when the route lacks it."""
        spec = self.rt.by_name.get(route)
        if spec is None or text not in spec.utterances:
            return None
        start = int(np.searchsorted(self.owners, self.rt.table.pos[route]))
        row: np.ndarray = self.V[start + spec.utterances.index(text)]
        return row


def _table(rt: Any, specs: list[Any], V: np.ndarray, owners: np.ndarray, stemmer: str) -> Any:
    """A shallow copy of ``rt`` over ``specs`` whose exemplar rows are ``V`` (exemplar order)."""
    texts, own = exemplar_texts(specs)
    new = copy.copy(rt)
    new.specs, new.by_name = specs, {s.name: s for s in specs}
    t = rt.table
    new.table = ScoreTable(t.names, t.domains, texts, own, V, V.shape[1], t.storage)
    if rt.lexical is not None:
        from routecore.core.lexical import LexicalTable

        new.lexical = LexicalTable(texts, own, len(specs), stemmer=stemmer)
    new.forget_head()
    new.learn_rows = (V, owners)
    return new


def append(st: State, rt: Any, route: str, text: str, v: np.ndarray, stemmer: str) -> Any:
    """A route table with ``text`` (embedding ``v``) one more exemplar of ``route``; the head is kept."""
    return append_many(st, rt, [(route, text, v)], stemmer)


def append_many(st: State, rt: Any, rows: list[tuple[str, str, np.ndarray]], stemmer: str) -> Any:
    """A route table with ``rows`` ((route, text, embedding)) more exemplars, in one build."""
    add: dict[int, list[tuple[str, np.ndarray]]] = {}
    for route, text, v in rows:
        add.setdefault(rt.table.pos[route], []).append((text, np.asarray(v, np.float32)))
    specs, V, owners = list(rt.specs), st.V, st.owners
    for o in sorted(add, reverse=True):  # from the last route: the rows of earlier ones stay put
        spec, items = specs[o], add[o]
        at = int(np.searchsorted(owners, o)) + len(spec.utterances)  # before its description
        V = np.insert(V, at, np.stack([v for _, v in items]), axis=0)
        owners = np.insert(owners, at, [o] * len(items))
        specs[o] = replace(spec, utterances=(*spec.utterances, *(t for t, _ in items)))
    return _table(rt, specs, V, owners, stemmer)


def without(st: State, rt: Any, drop: set[tuple[str, str]], stemmer: str) -> Any:
    """A route table without the exemplars ``drop`` ((route, text) pairs); the head is kept."""
    specs, keep = list(rt.specs), np.ones(len(st.V), bool)
    for o, spec in enumerate(rt.specs):
        gone = [i for i, u in enumerate(spec.utterances) if (spec.name, u) in drop]
        if gone:
            start = int(np.searchsorted(st.owners, o))
            keep[[start + i for i in gone]] = False
            specs[o] = replace(
                spec, utterances=tuple(u for u in spec.utterances if (spec.name, u) not in drop)
            )
    return _table(rt, specs, st.V[keep], st.owners[keep], stemmer)


@dataclass
class RefitJob:
    """A rebuild of the head and the calibration over the route table of one generation, as a
    live update makes it (:func:`routecore.updates.live.apply`), run off the writer lock."""

    router: Changeable
    rt: Any
    tc: Any
    generation: int
    args: Rebuild

    @classmethod
    def begin(
        cls, router: Changeable, st: State, generation: int, answers: Sequence[tuple[float, bool]] = ()
    ) -> RefitJob | None:
        """The job for the router's tables now, or None when its head cannot be rebuilt here (a
        fitted head: ``routecore fit --head``) or a live update replaced the table. ``answers``:
        answered queries the router did not route, (best probability, right); they lower the
        routing cut where they were right often enough (:func:`routecore.calibrate.fits.learned_medium`)."""

        rt, tc, sp = router.route_table, router.tool_catalog, router.spec_policy
        if rt is not st.rt:
            return None
        fitted = router.calibration is not None and router.calibration.source == "fitted"
        if rt.head is not None and (sp.head != "exemplars" or fitted):
            return None
        calibration = kept_calibration(router.calibration, set(rt.by_name), True)
        head, head_threshold = rt.head, None
        if head is not None:
            head_threshold = head.threshold if calibration is not None else None
            head = None
        texts = exemplar_texts(rt.specs)[0]
        args = rebuild_of(
            router, rt.specs, tc.specs, sp, head, calibration, head_threshold, dict(zip(texts, st.V))
        )
        if answers:
            args = replace(
                args, answers=(np.array([a[0] for a in answers]), np.array([a[1] for a in answers]))
            )
        return cls(router, rt, tc, generation, args)

    def build(self) -> Any:
        """The new parts (:class:`routecore.routers.assembly.Parts`)."""
        return self.router.internals.build(self.args)

    def still_valid(self, router: Changeable, st: State, forgot_at: int) -> bool:
        """Whether the parts may replace the router's: no live update and no removal since the job began."""
        return router.tool_catalog is self.tc and router.route_table is st.rt and forgot_at <= self.generation
