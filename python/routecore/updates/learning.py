"""A router that learns: labelled queries added to its routes while it serves (issue 37).

:meth:`routecore.routers.router.Router.learn` adds one query to a route, as an exemplar, with
the guards of the issue:

- a route the router does not have is refused (:class:`UnknownRouteError`);
- a near-duplicate of one of the route's exemplars is not added: its cosine to the
  nearest one reaches ``policy.learn_duplicate``, or, unset (the default), a cut on the
  calibration's similarity scale for the encoder in use (twice as far above an unrelated
  match as a paraphrase is: :data:`routecore.updates.learning_update.DUPLICATE_LEVEL`);
- an answer that contradicts a confident decision (the high tier, made without the LLM)
  is held for review (:meth:`Learner.held`), not learned;
- a route keeps at most ``policy.learn_cap`` learned exemplars (the oldest go first);
- each learned exemplar records its source (``user``, ``llm`` or ``agent``) and time, and
  can be listed (:meth:`Learner.learned`) and removed (:meth:`Learner.forget`).

**Cost.** Nothing is trained on the caller's thread: ``learn()`` embeds the query once,
decides it once (the contradiction guard), then builds a new route table with one more
row (the other rows' embeddings are reused: :mod:`routecore.updates.learning_update`), so that
the exemplar scores (top exemplars, the lexical score, a router without a head) see it at
once. The head keeps its weights until the refit: every ``policy.learn_refit_every``
learned exemplars a background thread rebuilds the head and the calibration as a live
update does (:mod:`routecore.updates.live`, off the writer lock), and swaps the result in with the
exemplars learned meanwhile added again. Warm-started gradient steps on the head at each
learn() were measured and dropped: they lowered precision among routed from 94-95 % to
83-88 % on the MASSIVE en replay (docs/learning.md). Readers never wait: each call reads
the route table once, the old one or the new one.

**Generations.** Each change (learn, forget, refit) makes a new generation; every
:class:`~routecore.decision.Decision` says which one decided it (``generation``; 0 is the
router as built or loaded, or last changed by a live update).
"""

from __future__ import annotations

import numbers
import threading
import time
import warnings
from collections import deque
from typing import AbstractSet, Any, Sequence

import numpy as np

from routecore.core.forks import unforked
from routecore.decide.arguments import stored_text
from routecore.decide.learned import LearnedRows
from routecore.decision import Decision
from routecore.errors import InvalidArgumentError, MemoryStoreError, UnknownRouteError
from routecore.llm.llm import no_llm, route_named
from routecore.memory.lesson_cache import store_key

# Re-exported (``X as X``): what learning returns and a bundle keeps (routecore.updates.learning_records).
from routecore.updates import learning_records as R
from routecore.updates.learning_records import SOURCES as SOURCES
from routecore.updates.learning_records import Learned as Learned
from routecore.updates.learning_records import LearnedExemplar as LearnedExemplar
from routecore.updates.learning_records import Review as Review
from routecore.updates.learning_records import Source as Source
from routecore.updates.learning_records import parse_saved as parse_saved
from routecore.updates.rebuild import Changeable

#: Answers to queries the router did not route (the head's best probability then, and whether its
#: best route was the answer) kept to fit the routing cut at the next refit; the oldest go first.
ANSWERS_KEPT = 2000
#: Below this many, the routing cut stays the calibration's (a default, not a fit).
MIN_ANSWERS = 200


def learner(router: Changeable) -> Learner:
    """The router's :class:`Learner` (made on first use)."""
    h = router.internals
    lr = h.learner
    if lr is None:
        with h.writer:
            lr = h.learner
            if lr is None:
                lr = h.learner = Learner(router)
    return lr  # type: ignore[no-any-return]


def after_route(router: Changeable, d: Any) -> None:
    """With ``policy.learn_from_llm``: learn the route an LLM fallback chose for ``d``'s query."""
    if (
        isinstance(d, Decision)
        and d.used_llm
        and d.action == "route"
        and d.route is not None
        and router.spec_policy.learn_from_llm
        and "\n" not in d.query  # a clarification's answer routes the two turns together
    ):
        learner(router).learn(d.query, d.route, source="llm")


def load_stored(router: Changeable) -> None:
    """When the router's lesson store holds learned exemplars (a restart), take them
    (:meth:`Learner.sync`)."""
    m = router.memory
    if m is None or not hasattr(m, "learned_exemplars"):
        return
    try:
        if m.learned_exemplars(store_key(router.encoder)):
            learner(router).sync()
    except MemoryStoreError as e:  # the router serves without them; sync_learned() tries again
        warnings.warn(
            f"learned exemplars not loaded from the lesson store: {e}", RuntimeWarning, stacklevel=3
        )


def saved(router: Changeable) -> list[LearnedExemplar]:
    """The learned exemplars a bundle keeps (their texts are the routes' exemplars already)."""
    lr = router.internals.learner
    if lr is None:
        return []
    out: list[LearnedExemplar] = lr.learned()
    return out


def restore(router: Changeable, entries: Sequence[LearnedExemplar]) -> None:
    """Mark ``entries`` of a loaded bundle as learned (listed, removable, counted in the cap)."""
    lr = learner(router)
    with router.internals.writer:
        lr.restore(entries)


class Learner:
    """The learned exemplars of one router, the answers held for review, and the background refit."""

    def __init__(self, router: Changeable):
        from routecore.updates import learning_update as U

        self.router = router
        self.entries: dict[int, tuple[LearnedExemplar, np.ndarray]] = {}
        self.reviews: list[Review] = []
        self.generation = 0
        self.next_id = 1
        self.since_refit = 0
        self.refits = 0
        self.forgot_at = 0  # the generation of the last removal (a refit begun before it is dropped)
        self._thread: threading.Thread | None = None
        self.state = U.State.of(router.route_table)
        #: (p1, the best route was the answer) of the answered queries the router did not route.
        self.answers: deque[tuple[float, bool]] = deque(maxlen=ANSWERS_KEPT)

    # -- reads -------------------------------------------------------------------------
    def learned(self, route: str | None = None) -> list[LearnedExemplar]:
        """The learned exemplars (of ``route``), oldest first (those of routes a live update removed
        are dropped)."""
        known = self.router.route_table.by_name
        if route is not None and route not in known:
            raise UnknownRouteError(f"unknown route {route!r}; known: {sorted(known)}")
        with self.router.internals.writer:
            self._sync()
            return [e for e, _ in self.entries.values() if route is None or e.route == route]

    def held(self) -> list[Review]:
        """The answers held for review, oldest first."""
        return list(self.reviews)

    # -- writes ------------------------------------------------------------------------
    def learn(
        self, query: str, route: str, *, source: str = "user", vector: Any = None, force: bool = False
    ) -> Learned:
        """Add ``query`` to ``route`` (the module doc says what is checked); ``force`` learns
        an answer the contradiction guard would hold (a reviewer's decision)."""
        from routecore.updates import learning_update as U

        if source not in SOURCES:
            raise InvalidArgumentError(f"source must be one of {SOURCES}, got {source!r}")
        query = stored_text(query, "learn(): the query")
        rt = self.router.route_table
        if route not in rt.by_name:  # a name its case folded names exactly one of ("orders": ORDERS)
            named = route_named(route.strip(), list(rt.by_name)) if isinstance(route, str) else None
            if named is None:
                raise UnknownRouteError(f"unknown route {route!r}; known: {sorted(rt.by_name)}")
            route = named
        v = (
            np.asarray(vector, np.float32).reshape(-1)
            if vector is not None
            else rt.encoder.encode_with_stats([query]).embeddings[0]
        )
        d = rt.route(query, vector=v, choose=no_llm)  # the semantic decision, without the LLM
        with self.router.internals.writer:
            self._sync()
            if d.tier == "low" and d.reason is not None and d.reason.code in ("low_confidence", "tie"):
                best = max(d.probabilities, key=d.probabilities.__getitem__) if d.probabilities else None
                self.answers.append((float(d.confidence), best == route))
            st = self.state
            nearest = st.nearest(v, route)
            cut = st.duplicate_cut(self.router.spec_policy, self.router.calibration)
            if nearest >= cut:
                why = R.duplicate(route, nearest, cut, d)
                return Learned("duplicate", route, self.generation, nearest, cut, reason=why)
            if d.action == "route" and d.tier == "high" and d.route != route and not force:
                rv = Review(query, route, str(d.route), float(d.confidence), source, time.time())
                self.reviews.append(rv)
                why = R.held(d)
                return Learned("held", route, self.generation, nearest, cut, review=rv, reason=why)
            now, store = time.time(), self._store()
            if store is not None:  # the store's id: unique across the replicas that share it
                eid = store.add_learned(
                    route, query, source, embedding=v, model_id=store_key(rt.encoder), created=now
                )
            else:
                eid, self.next_id = self.next_id, self.next_id + 1
            self.generation += 1
            e = LearnedExemplar(eid, route, query, source, now, self.generation)
            mine = [x for x, _ in self.entries.values() if x.route == route]
            cap = self.router.spec_policy.learn_cap
            # The same text learned for another route before: this answer replaces it.
            taught = [x for x, _ in self.entries.values() if x.text == query and x.route != route]
            gone = (*taught, *mine[: max(0, len(mine) + 1 - cap)])
            for g in gone:
                del self.entries[g.id]
            if gone and store is not None:
                store.remove_learned([g.id for g in gone])
            self.entries[e.id] = (e, v)
            if gone:
                self.forgot_at = self.generation
                self._rebuild({(g.route, g.text) for g in gone})
            stemmer = self.router.spec_policy.lexical_stemmer
            self._install(U.append(self.state, self.router.route_table, route, query, v, stemmer))
            self.since_refit += 1
            if self.since_refit >= self.router.spec_policy.learn_refit_every:
                self._start_refit()
            why = R.learned(route, nearest, cut, self.generation, len(gone))
            return Learned(
                "learned", route, self.generation, nearest, cut, exemplar=e, evicted=gone, reason=why
            )

    def forget(self, ids: Any) -> list[LearnedExemplar]:
        """Remove learned exemplars by id, one or a sequence of them (unknown ids raise
        :class:`InvalidArgumentError`, and nothing is removed); the head is retrained in the background."""
        given: Any = [ids] if isinstance(ids, numbers.Integral) and not isinstance(ids, bool) else ids
        listed = isinstance(given, (Sequence, AbstractSet)) and not isinstance(given, (str, bytes))
        if not listed or not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in given):
            raise InvalidArgumentError(f"forget() takes an id or a list of ids (ints), got {ids!r}")
        ids = [int(i) for i in given]
        with self.router.internals.writer:
            self._sync()
            unknown = [i for i in ids if i not in self.entries]
            if unknown:
                raise InvalidArgumentError(f"no learned exemplar has id {unknown}")
            gone = [self.entries.pop(i)[0] for i in ids]
            store = self._store()
            if gone and store is not None:
                store.remove_learned([e.id for e in gone])
            if gone:
                self.generation += 1
                self.forgot_at = self.generation
                self._rebuild({(e.route, e.text) for e in gone})
                self._start_refit()
            return gone

    def restore(self, saved: Sequence[LearnedExemplar]) -> None:
        """Take back the learned exemplars of a bundle (their texts are already the routes' exemplars)."""
        st = self.state
        for e in saved:
            v = st.vector_of(e.route, e.text)
            if v is not None:
                self.entries[e.id] = (e, v)
                self.next_id = max(self.next_id, e.id + 1)
        self._mark(self.router.route_table)

    def sync(self) -> int:
        """Take the router's lesson store as the truth: add the learned exemplars it holds that
        this router lacks (another replica's, or all after a restart; their embeddings are
        stored), drop those it no longer holds. Returns how many changed; the head is refitted
        in the background when any did."""
        from routecore.updates import learning_update as U

        store = self._store()
        if store is None:
            return 0
        rows = store.learned_exemplars(store_key(self.router.encoder))
        with self.router.internals.writer:
            self._sync()
            rt, dim = self.router.route_table, self.router.encoder.dim
            stored = {r.id for r in rows}
            drop = [e for e, _ in self.entries.values() if e.id not in stored]
            for e in drop:
                del self.entries[e.id]
            if drop:
                self.generation += 1
                self.forgot_at = self.generation
                self._rebuild({(e.route, e.text) for e in drop})
            have = {(e.route, e.text) for e, _ in self.entries.values()}
            new = [
                r
                for r in rows
                if r.id not in self.entries
                and r.route in rt.by_name
                and r.embedding.size == dim
                and (r.route, r.text) not in have
                and r.text not in rt.by_name[r.route].utterances
            ]
            if new:
                self.generation += 1
                for r in new:
                    e = LearnedExemplar(r.id, r.route, r.text, r.source, r.created, self.generation)
                    self.entries[r.id] = (e, r.embedding)
                stemmer = self.router.spec_policy.lexical_stemmer
                rows_in = [(r.route, r.text, r.embedding) for r in new]
                self._install(U.append_many(self.state, self.router.route_table, rows_in, stemmer))
            if drop or new:
                self._start_refit()
            return len(drop) + len(new)

    def _store(self) -> Any:
        """The router's lesson store when it keeps learned exemplars (routecore.memory.memory), else None."""
        m = self.router.memory
        return m if m is not None and hasattr(m, "learned_exemplars") else None

    def wait(self, timeout: float | None = None) -> None:
        """Wait for a background refit in flight (tests, benchmarks, before a save)."""
        t = self._thread
        if t is not None:
            t.join(timeout)

    # -- internals (under the writer lock) ------------------------------------------
    def _sync(self) -> None:
        """Follow a live update that replaced the route table: its specs hold the learned texts
        of routes that remain; entries of removed routes (or texts no longer there) are dropped."""
        from routecore.updates import learning_update as U

        rt = self.router.route_table
        if rt is self.state.rt:
            return
        self.state = U.State.of(rt)
        for i, (e, _) in list(self.entries.items()):
            if self.state.vector_of(e.route, e.text) is None:
                del self.entries[i]

    def _install(self, rt: Any) -> None:
        from routecore.updates import learning_update as U

        rt.generation = self.generation
        self.state = U.State.of(rt, self.state)
        self._mark(rt)
        self.router.route_table = rt

    def _mark(self, rt: Any) -> None:
        """Tell ``rt`` which of its exemplars are learned (:mod:`routecore.decide.learned`)."""
        rows = frozenset((e.route, e.text) for e, _ in self.entries.values())
        rt.learned = LearnedRows(rows) if rows else None

    def _rebuild(self, drop: set[tuple[str, str]]) -> None:
        """Install a route table without the exemplars ``drop`` ((route, text) pairs)."""
        from routecore.updates import learning_update as U

        stemmer = self.router.spec_policy.lexical_stemmer
        self._install(U.without(self.state, self.router.route_table, drop, stemmer))

    def _start_refit(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return  # the next learn after it ends starts another
        self.since_refit = 0
        self._thread = threading.Thread(target=self._refit, name="routecore-learn-refit", daemon=True)
        self._thread.start()

    def _refit(self) -> None:
        from routecore.updates import learning_update as U

        r = self.router
        with r.internals.writer:
            answers = list(self.answers) if len(self.answers) >= MIN_ANSWERS else []
            job = U.RefitJob.begin(r, self.state, self.generation, answers)
        if job is None:
            return
        with unforked():  # numpy's BLAS threads: a fork from another thread now would hang (core.forks)
            parts = job.build()  # off the lock: readers and learn() go on
        with r.internals.writer:
            if not job.still_valid(r, self.state, self.forgot_at):
                return
            later = [(e, v) for e, v in self.entries.values() if e.generation > job.generation]
            r.internals.install(parts)
            self.state = U.State.of(r.route_table, self.state)
            stemmer = r.spec_policy.lexical_stemmer
            for e, v in later:
                r.route_table = U.append(self.state, r.route_table, e.route, e.text, v, stemmer)
                self.state = U.State.of(r.route_table, self.state)
            self.generation += 1
            self.refits += 1
            r.route_table.generation = self.generation
            self.state = U.State.of(r.route_table, self.state)
            self._mark(r.route_table)
