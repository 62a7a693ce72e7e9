"""Lexical (BM25) scores beside the dense ones (issue 14).

A :class:`LexicalTable` holds one native BM25 index (``routecore._native.LexicalIndex``)
over the same texts as a :class:`~routecore.decide.tables.ScoreTable`: one document per
exemplar, labelled with its route or tool; a tool's name (split on ``_ - .`` and
camelCase by the tokenizer) goes into each of its documents. A query's lexical
score for a label is the best BM25 of its documents, divided by the query's best
over all labels, so it lies in [0, 1]. The router adds ``weight`` times it to the
label's cosine before anything else is decided (:meth:`LexicalTable.bias`); the weight is
fitted by the calibration (:func:`fit_weight`), or set in the policy.

The score is also multiplied by the query's *coverage*, the idf-weighted share of its
words that some document holds: a French query against English exemplars shares a
word or two by accident, and without this its best accidental match would gain as
much as a real one (MASSIVE en-US routes, fr-FR queries: top-1 fell 68.3 -> 59.3 %).

Stop words are not a language list: they are the words found in at least
:data:`STOP_SHARE` of the bundled background queries (generic requests in nine
languages), so "what", "comment" or "什么" carry no weight in any language the
background covers.

Terms may be stemmed (``stemmer``: Snowball ``"english"`` or ``"french"`` on plain
words; ``"none"`` by default). Stemming is a fitted or a configured choice, not a
default: on the intent sets it cost up to half a point of top-1 (MASSIVE en-US,
CLINC150) while it lifted tool recall on MetaTool, so ``routecore fit --tools`` picks
the tools' stemmer and BM25 ``b`` on the validation split with the weight
(:data:`TOOL_FORMS`), the calibration keeps them (``tool_lexical_stemmer``,
``tool_lexical_b``), and ``Policy.lexical_stemmer`` / ``tool_lexical_stemmer`` set
them by hand.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from routecore import _native

#: A word in at least this share of the background queries is a stop word.
STOP_SHARE = 0.02
#: BM25 length normalisation of the core (``routecore_core::lexical::DEFAULT_B``).
DEFAULT_B = 0.75
#: The stemmers of the core, in its order.
STEMMERS = ("none", "english", "french")
#: The (stemmer, b) pairs ``fit --tools`` tries on a validation split, the default first
#: (kept on ties): short tool descriptions may want less length normalisation.
TOOL_FORMS = tuple((s, b) for s in STEMMERS for b in (DEFAULT_B, 0.5, 0.25, 0.0))
#: Candidate weights (cosine units, multiplied by the calibrated scale) tried by :func:`fit_weight`.
WEIGHT_GRID_SCALES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
#: The weight, in calibrated scale units, when there is nothing to fit it on (no held-out
#: exemplars): a full lexical match lifts a label by a factor e**2 in probability.
LEXICAL_PRIOR_SCALES = 2.0
#: Zero-label: the chosen weight is the smallest that brings this share of the best held-out gain.
GAIN_SHARE = 0.8
#: A weight is kept only if it makes this many more held-out rows right than no weight (and at least one).
MIN_GAIN_SHARE = 0.005


@lru_cache(maxsize=len(STEMMERS))
def stop_words(stemmer: str = "none") -> tuple[str, ...]:
    """The words whose term (as an index with ``stemmer`` makes it) is in at least
    :data:`STOP_SHARE` of the background queries: every token of those queries that
    stems to such a term, unstemmed (the index stems its stop words itself)."""
    from routecore.core.background import background_texts

    texts = background_texts()[0]
    index = _native.LexicalIndex(stemmer=stemmer)
    seen: dict[str, int] = {}
    forms: dict[str, set[str]] = {}
    for t in texts:
        terms = index.terms(t)
        for w, term in zip(index.tokens(t), terms):
            forms.setdefault(term, set()).add(w)
        for term in set(terms):
            seen[term] = seen.get(term, 0) + 1
    return tuple(sorted(w for term, n in seen.items() if n >= STOP_SHARE * len(texts) for w in forms[term]))


class LexicalTable:
    """BM25 over the exemplar ``texts`` of ``n_labels`` labels (``owners[i]``: the label of text ``i``).

    ``prefixes[label]`` is prepended to each of that label's documents (tool names);
    ``stemmer`` and ``b``: the index's terms and BM25 length normalisation."""

    def __init__(
        self,
        texts: Sequence[str],
        owners: Sequence[int],
        n_labels: int,
        prefixes: Sequence[str] | None = None,
        *,
        stemmer: str = "none",
        b: float = DEFAULT_B,
    ):
        self.n_labels = n_labels
        self.owners = np.asarray(owners, dtype=np.uint32)
        docs = [f"{prefixes[o]} {t}" if prefixes else t for t, o in zip(texts, owners)]
        if stemmer not in STEMMERS:
            from routecore.errors import ConfigError

            raise ConfigError(f"lexical stemmer must be one of {STEMMERS}, got {stemmer!r}")
        self.index = _native.LexicalIndex(list(stop_words(stemmer)), b=b, stemmer=stemmer)
        if docs:
            self.index.add(docs, self.owners)

    @classmethod
    def from_index(
        cls, index: "_native.LexicalIndex", owners: Sequence[int], n_labels: int
    ) -> "LexicalTable":
        """A table around a saved ``index`` (a bundle's), whose documents must be labelled ``owners``."""
        from routecore.errors import ConfigError

        self = cls.__new__(cls)
        self.n_labels, self.owners, self.index = n_labels, np.asarray(owners, dtype=np.uint32), index
        if len(index) != len(self.owners) or not np.array_equal(index.labels(), self.owners):
            raise ConfigError(
                f"the lexical index holds {len(index)} documents "
                f"that are not the {len(self.owners)} exemplars of its table"
            )
        return self

    def bias(self, query: str, weight: float, lead: int = 0) -> np.ndarray | None:
        """What each label's cosine gains: ``weight`` times its best BM25 over the query's
        best, times the query's coverage, in [0, ``weight``]; ``None`` when no token of
        the query is indexed or ``weight`` is 0 (nothing to add). With ``lead``, the
        array starts with that many zeros: a :class:`~routecore.decide.tables.ScoreTable`
        whose :attr:`~routecore.decide.tables.ScoreTable.lead` it is takes it without a copy."""
        if not weight:
            return None
        return self.index.label_bias(query, self.n_labels, weight, lead)

    def scores(self, query: str) -> np.ndarray:
        """Per label, the best BM25 of its documents over the query's best, times the
        query's coverage: float32 in [0, 1]."""
        s = self.bias(query, 1.0)
        return np.zeros(self.n_labels, np.float32) if s is None else s

    def scores_batch(self, queries: Sequence[str]) -> np.ndarray:
        """:meth:`scores` of each query: float32 [queries, labels]."""
        return _scaled(*self.index.score_labels_covered_batch(list(queries), self.n_labels))

    def held_out(self, queries: Sequence[str], excluded: Sequence[np.ndarray]) -> np.ndarray:
        """:meth:`scores` of each query with the documents ``excluded[i]`` left out (leave-one-out
        with near-duplicates, as the dense calibration leaves them out)."""
        sets = [np.asarray(e, dtype=np.uint32) for e in excluded]
        return _scaled(*self.index.score_labels_covered_batch(list(queries), self.n_labels, sets))


def _scaled(S: np.ndarray, cover: np.ndarray) -> np.ndarray:
    """Label scores ``S`` [queries, labels] over each query's best, times its coverage ``cover``."""
    if not S.size:
        return S
    top = S.max(axis=1, keepdims=True)
    scaled: np.ndarray = np.divide(S, top, out=np.zeros_like(S), where=top > 0) * cover[:, None]
    return scaled


def fit_weight(
    dense: np.ndarray, lex: np.ndarray, gold: np.ndarray, scale: float, gain_share: float = GAIN_SHARE
) -> tuple[float, dict[str, float]]:
    """The weight (cosine units, on a grid of calibrated ``scale`` units) for the lexical score.

    The smallest weight that makes at least ``gain_share`` of the best gain's extra rows
    right: :data:`GAIN_SHARE` for held-out exemplars (harder than real queries: their
    largest gain overweights the lexical score on test sets), 1 for a validation split of
    real queries. 0 unless the gain is at least :data:`MIN_GAIN_SHARE` of the rows and the
    rows it fixes outnumber those it breaks beyond chance. ``dense``, ``lex``: held-out
    scores [rows, labels]; ``gold``: each row's label.
    Returns the weight and the held-out accuracy without and with it.
    """
    if len(gold) == 0:
        return 0.0, {}
    dense_right = np.argmax(dense, axis=1) == gold
    rights = [np.argmax(dense + u * scale * lex, axis=1) == gold for u in WEIGHT_GRID_SCALES]
    accs = [float(r.mean()) for r in rights]
    base, best = accs[0], max(accs)
    none = {"lexical_heldout_accuracy_dense": base, "lexical_heldout_accuracy_fused": base}
    if (best - base) * len(gold) < max(1.0, MIN_GAIN_SHARE * len(gold)):
        return 0.0, none
    i = next(i for i, a in enumerate(accs) if a - base >= gain_share * (best - base))
    # The rows it fixes must outnumber those it breaks beyond chance (one-sided sign
    # test at 95 %): on a few dozen held-out rows a gain of two is noise.
    fixed, broken = int((rights[i] & ~dense_right).sum()), int((dense_right & ~rights[i]).sum())
    if fixed - broken < 1.645 * np.sqrt(fixed + broken):
        return 0.0, none
    return WEIGHT_GRID_SCALES[i] * scale, {
        "lexical_heldout_accuracy_dense": base,
        "lexical_heldout_accuracy_fused": accs[i],
    }


def fit_form(
    table_for: Callable[[str, float], LexicalTable],
    queries: Sequence[str],
    dense: np.ndarray,
    gold: np.ndarray,
    scale: float,
    stemmer: str | None = None,
) -> tuple[str, float, float, dict[str, float], dict[str, float]]:
    """The lexical form of a catalog fitted on a validation split: each (stemmer, ``b``) of
    :data:`TOOL_FORMS` gets its weight (:func:`fit_weight`, the best gain: real queries),
    and the form whose fused top-1 is the highest wins (the first, unstemmed with the
    core's ``b``, on ties, or when no weight helps). ``table_for(stemmer, b)`` builds the
    table; ``dense``: the queries' cosines [rows, labels]; ``gold``: each row's label.
    ``stemmer`` (a policy's): only the forms with that stemmer are tried.
    Returns the stemmer, ``b``, weight, :func:`fit_weight`'s stats and each form's top-1."""
    forms = [f for f in TOOL_FORMS if stemmer is None or f[0] == stemmer]
    best: tuple[float, str, float, float, dict[str, float]] | None = None
    tried: dict[str, float] = {}
    for s, b in forms:
        w, stats = fit_weight(dense, table_for(s, b).scores_batch(list(queries)), gold, scale, gain_share=1.0)
        acc = stats.get("lexical_heldout_accuracy_fused", 0.0)
        tried[f"{s}/{b:g}"] = round(acc, 5)
        if w and (best is None or acc > best[0]):
            best = (acc, s, b, w, stats)
    if best is None:
        return forms[0][0], forms[0][1], 0.0, fit_weight(dense, np.zeros_like(dense), gold, scale)[1], tried
    return best[1], best[2], best[3], best[4], tried


def held_out_docs(
    V: np.ndarray, owners: np.ndarray, rows: np.ndarray, near_duplicate: np.ndarray | None
) -> list[np.ndarray]:
    """Per held-out row, the documents its dense leave-one-out score left out: itself and
    its label's near-duplicates (cosine >= that row's ``near_duplicate``), unless that leaves the
    label empty."""
    out = []
    for i, r in enumerate(rows.tolist()):
        same = np.flatnonzero(owners == owners[r])
        if near_duplicate is not None:
            dup = same[(V[same] @ V[r]) >= near_duplicate[i]]
            if len(dup) < len(same):
                out.append(np.union1d(dup, [r]))
                continue
        out.append(np.array([r]))
    return out


def fit_table(
    table: LexicalTable,
    texts: Sequence[str],
    V: np.ndarray,
    owners: np.ndarray,
    rows: np.ndarray,
    fit_on: tuple[np.ndarray, np.ndarray | None],
    fuse: Sequence[tuple[np.ndarray, np.ndarray | None]],
    scale: float,
) -> tuple[float, list[np.ndarray], dict[str, float]]:
    """Fit ``table``'s weight on the held-out rows' dense scores ``fit_on``; return it with
    each dense score set of ``fuse`` fused. Each set comes with its rows' near-duplicate
    cut (their label's documents at or above it were left out with the row; None: only
    the row itself); ``scale``: the weight grid's unit."""
    queries = [texts[r] for r in rows.tolist()]
    lex: dict[int, np.ndarray] = {}

    def held_out(cut: np.ndarray | None) -> np.ndarray:
        if id(cut) not in lex:
            lex[id(cut)] = table.held_out(queries, held_out_docs(V, owners, rows, cut))
        return lex[id(cut)]

    w, stats = fit_weight(fit_on[0], held_out(fit_on[1]), owners[rows], scale)
    if not w:
        return 0.0, [d for d, _ in fuse], stats
    return w, [d + w * held_out(cut) for d, cut in fuse], stats
