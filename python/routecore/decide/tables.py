"""Score tables: the exemplar indexes a router scores queries against.

Holds :class:`ScoreTable` (one native index whose labels are route or tool
names), the helpers that collect and embed the specs' exemplar texts
(:func:`exemplar_texts`, :func:`embed_texts`) and those made beforehand
(:class:`TableVectors`, :class:`TableLexical`, :class:`KnownVectors`), the :class:`EncoderLike`
protocol, the ``AUTO_INT8_ELEMENTS`` storage cut-off, and
:func:`collision_alert`, the ambiguity alert for two close routes or tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

import numpy as np

from routecore import _native
from routecore.core.index import VectorIndex
from routecore.core.lexical import LexicalTable
from routecore.core.progress import Progress
from routecore.decide.policy import Policy, resolved
from routecore.decision import Alert

if TYPE_CHECKING:
    from routecore.calibrate.peer_cut import PeerCut


@dataclass
class Step:
    """One native routing step (``_native.StepResult``), per-route arrays in spec order, and what
    the decision adds to it. ``raw`` holds the cosines plus any bias (lexical, entities), ``dense``
    the cosines alone; ``bound`` is each int8 estimate's error bound (0 when exact)."""

    raw: np.ndarray
    bound: np.ndarray
    adjusted: np.ndarray
    #: The routes' probabilities (empty when the step computed none).
    probs: np.ndarray
    dense: np.ndarray
    route_domains: np.ndarray
    #: The best exemplars: their scores, ids, label codes and (with a bias) cosines.
    top_scores: np.ndarray
    top_ids: np.ndarray
    top_labels: np.ndarray
    top_dense: np.ndarray | None
    #: ``(first, second, gap)`` label codes of the top two routes' collision.
    collision: tuple[int, int, float] | None
    #: What the lexical pass added to each route (spec order), when it ran.
    lexical: np.ndarray | None = None
    #: Which routes prefer an entity the query holds, when any route prefers one.
    preferred: np.ndarray | None = None
    entities: tuple[Any, ...] = ()
    #: Only the routes preferring the query's entities compete.
    entity_scope: bool = False
    #: The linear head's verdict: out of scope, its best probability, its out-of-scope
    #: probability (None without a head), the cut it used and the language whose cut that was.
    head_oos: bool = False
    head_p1: float = 0.0
    head_oos_p: float | None = None
    head_threshold: float = 0.0
    head_language: tuple[str, float, float] | None = None
    #: With another encoder's decision on the query (a cascade's): this router's own best probability
    #: before the two were combined (what the traffic cut observes).
    own_best: float | None = None
    #: The pair's cuts for such a combined decision (routecore.calibrate.peer_cut); None: the router's own.
    peer_cut: PeerCut | None = None


class EncoderLike(Protocol):
    """What the router needs of an encoder (``routecore.Encoder`` fits)."""

    @property
    def dim(self) -> int: ...

    @property
    def model_id(self) -> str: ...

    def encode_with_stats(self, texts: Sequence[str], kind: Any = "query") -> Any: ...


#: ``storage="auto"`` keeps tables of at least this many elements (rows x dim) as int8.
AUTO_INT8_ELEMENTS = 1 << 18


class ScoreTable:
    """An index of exemplars whose labels are the names of specs (routes or tools).

    Args:
        names, domains: one per spec, in spec order.
        texts, owners: the exemplar texts and the position of the spec each belongs to.
        vectors: the exemplars' embeddings (one row per text).
        dim: the embedding dimension.
        storage: ``"auto"`` (int8 from ``AUTO_INT8_ELEMENTS`` elements), ``"f32"``, ``"f16"`` or ``"int8"``.
    """

    def __init__(
        self,
        names: list[str],
        domains: list[str],
        texts: list[str],
        owners: list[int],
        vectors: np.ndarray | None,
        dim: int,
        storage: str,
    ):
        self.names: list[str] = names
        self.domains: list[str] = domains
        self.texts: list[str] = texts
        if storage == "auto":
            storage = "int8" if len(texts) * dim >= AUTO_INT8_ELEMENTS else "f32"
        self.storage = storage
        self.index = VectorIndex(dim, backend="flat", storage=storage)
        # StepParams per distinct policy values (step())
        self._steps: dict[tuple[Any, ...], _native.StepParams] = {}
        if len(texts):
            self.index.add(
                np.arange(len(texts)), vectors, [names[o] for o in owners], [domains[o] for o in owners]
            )
        label_names = self.labels = self.index.label_names()
        self.pos = {n: i for i, n in enumerate(names)}
        code_of = {n: i for i, n in enumerate(label_names)}
        codes = np.array([code_of.get(n, 0) for n in names], dtype=np.int64)
        # Names interned in spec order (code 0 is the empty label): a slice, not a gather.
        self.codes: np.ndarray | slice = (
            slice(1, len(names) + 1) if np.array_equal(codes, np.arange(1, len(names) + 1)) else codes
        )
        #: 1 when the label codes are the specs' positions + 1 (a per-spec array after one
        #: zero is then in code order: see :meth:`coded`), else 0.
        self.lead = 1 if isinstance(self.codes, slice) else 0
        dom = {d: i for i, d in enumerate(sorted(set(domains)))}
        self.domain_ids = np.array([dom[d] for d in domains], dtype=np.uint32)
        #: The domains some label belongs to (a caller's other active domains are set aside).
        self.known_domains = frozenset(d for d in dom if d)

    def step(
        self,
        policy: Policy,
        active: Sequence[str],
        top: int,
        aggregation: str | None = None,
        exact_top: int | None = None,
        exact_floor: float = float("inf"),
        probabilities: bool = True,
        exact: Sequence[str] = (),
    ) -> _native.StepParams:
        """The parameters of one native step (``_native.StepParams``) under ``policy``, kept
        per distinct set of values: most calls of a router share one."""
        key = (
            policy.temperature,
            aggregation or policy.aggregation,
            policy.top_n,
            tuple(active),
            policy.affinity_boost,
            policy.affinity_penalty,
            policy.collision_gap,
            top,
            exact_top or policy.exact_top,
            policy.exact_band,
            exact_floor,
            probabilities,
            tuple(exact),
        )
        p = self._steps.get(key)
        if p is None:
            if len(self._steps) >= 64:  # per-query exact routes (previous route, clarified candidates) vary
                self._steps.clear()
            p = self._steps[key] = _native.StepParams(
                aggregation=key[1],
                top_n=policy.top_n,
                temperature=resolved(policy.temperature, "temperature"),
                active_domains=list(active),
                boost=resolved(policy.affinity_boost, "affinity_boost"),
                penalty=resolved(policy.affinity_penalty, "affinity_penalty"),
                collision_gap=resolved(policy.collision_gap, "collision_gap"),
                top_exemplars=top,
                exact_top=key[8],
                exact_band=policy.exact_band,
                exact_floor=exact_floor,
                probabilities=probabilities,
                exact_routes=list(exact),
            )
        return p

    def lexical_bias(
        self, lexical: LexicalTable | None, text: str, weight: float
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """What each spec's cosine gains from ``lexical``'s score for ``text`` (hybrid scoring):
        in this table's label-code order when :attr:`lead` allows it (:meth:`coded` then takes
        it without a copy), and its view in spec order; None when there is nothing to add."""
        if lexical is None or not text:
            return None
        coded = lexical.bias(text, weight, self.lead)
        return None if coded is None else (coded, coded[self.lead :])

    def coded(self, bias: np.ndarray | None) -> np.ndarray | None:
        """``bias`` (spec order) in label-code order, as the native step takes it. A bias
        already in code order (:attr:`lead` zeros then spec order, one entry per label
        code, as :meth:`~routecore.core.lexical.LexicalTable.bias` makes it) is taken as it is."""
        if bias is None or (self.lead and len(bias) == len(self.labels)):
            return bias
        coded = np.zeros(len(self.labels), np.float32)
        coded[self.codes] = bias
        return coded

    def score(
        self,
        q: np.ndarray,
        policy: Policy,
        active: list[str],
        top: int,
        aggregation: str | None = None,
        exact_top: int | None = None,
        exact_floor: float = float("inf"),
        probabilities: bool = True,
        exact: Sequence[str] = (),
        bias: np.ndarray | None = None,
    ) -> Step:
        """One native step; per-route arrays come back in spec order.

        ``bias`` (spec order) is added to each route's cosine before anything else
        (hybrid scoring); ``raw`` then holds the sums and ``dense`` the cosines."""
        p = self.step(policy, active, top, aggregation, exact_top, exact_floor, probabilities, exact)
        return self.in_spec_order(self.index.native.score_routes(q, p, self.coded(bias)))

    def in_spec_order(self, r: _native.StepResult) -> Step:
        """A native step's result (``_native.StepResult``, label-code order) in spec order."""
        c = self.codes
        raw, probs = r.raw[c], r.probs
        return Step(
            raw=raw,
            bound=r.bound[c],
            adjusted=r.adjusted[c],
            probs=probs[c] if len(probs) else probs,
            dense=r.dense[c] if r.dense is not None else raw,
            route_domains=r.route_domains,
            top_scores=r.top_scores,
            top_ids=r.top_ids,
            top_labels=r.top_labels,
            top_dense=r.top_dense,
            collision=r.collision,
        )


def score_many(
    tables: Sequence[ScoreTable],
    q: np.ndarray,
    steps: Sequence[_native.StepParams],
    biases: Sequence[np.ndarray | None],
) -> list[Step]:
    """One native step per table on the one vector ``q``, in one native call (context
    layers); ``steps[i]`` (:meth:`ScoreTable.step`) and ``biases[i]`` (spec order) go with
    ``tables[i]``. Results as :meth:`ScoreTable.score` gives them."""
    out = _native.score_many(
        [t.index.native for t in tables], q, list(steps), [t.coded(b) for t, b in zip(tables, biases)]
    )
    return [t.in_spec_order(r) for t, r in zip(tables, out)]


def score_batch(
    table: ScoreTable, Q: np.ndarray, steps: Sequence[_native.StepParams], biases: Sequence[np.ndarray | None]
) -> list[Step]:
    """One native step per row of ``Q`` on ``table``, in one native call that reads the exemplar
    table once per tile for all of them (a batch's decisions); ``steps[i]`` and ``biases[i]``
    (spec order) go with row ``i``. Results as :meth:`ScoreTable.score` gives them."""
    out = table.index.native.score_routes_batch(Q, list(steps), [table.coded(b) for b in biases])
    return [table.in_spec_order(r) for r in out]


def embed_texts(
    encoder: EncoderLike, texts: list[str], batch: int = 64, progress: Progress | None = None
) -> np.ndarray:
    """The embeddings of ``texts`` (one row each), encoded ``batch`` at a time."""
    if not texts:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    out = []
    for i in range(0, len(texts), batch):
        out.append(encoder.encode_with_stats(texts[i : i + batch]).embeddings)
        if progress is not None:
            progress.advance(len(out[-1]))
    return np.concatenate(out)


def exemplar_texts(specs: Sequence[Any], attr: str = "exemplars") -> tuple[list[str], list[int]]:
    """The texts of ``attr`` (an attribute or a method) of every spec, and the position of the spec
    of each."""
    texts, owners = [], []
    for i, s in enumerate(specs):
        for t in getattr(s, attr)() if callable(getattr(s, attr)) else getattr(s, attr):
            texts.append(t)
            owners.append(i)
    return texts, owners


@dataclass(frozen=True, eq=False)  # arrays: no element-wise ==
class TableVectors:
    """A router's exemplar embeddings, made beforehand (a bundle's, an evaluation's cache): one
    float32 row per text of :func:`exemplar_texts`, in that order, for ``routes`` (the routes'
    exemplars), ``tools`` (the tools' exemplars) and ``anti`` (the tools' anti-patterns). A table
    left ``None`` is embedded from its specs. ``Router(vectors=...)`` takes it."""

    routes: np.ndarray | None = None
    tools: np.ndarray | None = None
    anti: np.ndarray | None = None


@dataclass(frozen=True, eq=False)
class KnownVectors:
    """Embeddings a rebuild may reuse (a live update, a learning refit), text -> vector, for the routes'
    exemplars, the tools' exemplars and the tools' anti-patterns: :func:`known_vectors` of a table. A
    text none of them holds is embedded."""

    routes: Mapping[str, np.ndarray] = field(default_factory=dict)
    tools: Mapping[str, np.ndarray] = field(default_factory=dict)
    anti: Mapping[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class TableLexical:
    """A router's BM25 indexes, made beforehand (a bundle's): one ``_native.LexicalIndex`` over the
    routes' and one over the tools' exemplar texts, documents in :func:`exemplar_texts` order. One
    left ``None`` is built from its specs when ``Policy.lexical`` is on. ``Router(lexical_indexes=...)``
    takes it."""

    routes: _native.LexicalIndex | None = None
    tools: _native.LexicalIndex | None = None


def build_table(
    specs: Sequence[Any],
    encoder: EncoderLike,
    storage: str,
    vectors: np.ndarray | None = None,
    attr: str = "exemplars",
) -> ScoreTable:
    """The :class:`ScoreTable` of the ``attr`` texts of ``specs``; embeds them unless ``vectors``
    are given."""
    texts, owners = exemplar_texts(specs, attr)
    if vectors is None:
        vectors = embed_texts(encoder, texts)
    return ScoreTable(
        [s.name for s in specs], [s.domain for s in specs], texts, owners, vectors, encoder.dim, storage
    )


def collision_alert(a: str, b: str, gap: float, table: ScoreTable, what: str) -> Alert:
    """The ambiguity alert for ``a`` and ``b`` (names in ``table``, ``what``: "route" or "tool")
    within ``gap``."""
    da, db = table.domains[table.pos[a]], table.domains[table.pos[b]]

    def of(d: str) -> str:
        return f"domain '{d}'" if d else "no domain"

    msg = (
        f"Ambiguity alert: the {what}s '{a}' ({of(da)}) and '{b}' ({of(db)}) score within {gap:.3f} of each "
        f"other (adjusted cosines). Check which the user means before using '{a}'"
        + (f"; if the request is about '{db}', use '{b}'." if db else ".")
    )
    return Alert("collision", msg, {"first": a, "second": b, "gap": float(gap), "domains": [da, db]})


def known_vectors(table: ScoreTable) -> dict[str, np.ndarray]:
    """The embeddings of a table's exemplars by text (rows were added with ids 0..n-1 in exemplar order)."""
    if not len(table.index):
        return {}
    ids, v, _, _ = table.index.vectors()
    return dict(zip(table.texts, v[np.argsort(ids, kind="stable")]))
