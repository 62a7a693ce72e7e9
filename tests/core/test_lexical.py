"""The native lexical (BM25) index, `routecore._native.LexicalIndex`, against a
pure-Python BM25 over the same tokens; leave-one-out, stop words, files and
their damage, threads. Also the per-label ``bias`` of the native routing step,
through which the lexical scores reach routing."""

from __future__ import annotations

import collections
import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore import _native
from routecore._native import LexicalIndex

WORDS = [
    "get",
    "logs",
    "ha_get_logs",
    "searchFlights",
    "flights",
    "the",
    "de",
    "état",
    "etat",
    "INC12291856",
    "kafka",
    "服务器",
    "宕机",
    "đăng",
    "nhập",
    "Ticket",
    "reset",
    "password",
    "getSystemLogs",
]


def bm25(docs: list[str], stop: set[str], query: str, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """BM25 by the book over the distinct query tokens (the tokens are the index's own)."""
    bags = [collections.Counter(t for t in LexicalIndex.tokens(d) if t not in stop) for d in docs]
    lens = [sum(c.values()) for c in bags]
    n = len(docs)
    avg = (sum(lens) / n) or 1.0
    q = {t for t in LexicalIndex.tokens(query) if t not in stop}
    out = []
    for bag, ln in zip(bags, lens):
        s = 0.0
        for t in q:
            tf = bag.get(t, 0)
            if tf:
                df = sum(1 for o in bags if t in o)
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * ln / avg))
        out.append(s)
    return out


def test_tokens():
    assert LexicalIndex.tokens("Peux-tu me donner l'état de l'incident INC20481234 ?") == [
        "peux-tu",
        "peux",
        "tu",
        "me",
        "donner",
        "l",
        "etat",
        "de",
        "l",
        "incident",
        "inc20481234",
    ]
    assert _native.lexical_tokens("ha_getSystemLogs") == [
        "ha_getsystemlogs",
        "ha",
        "getsystemlogs",
        "get",
        "system",
        "logs",
    ]
    assert _native.lexical_tokens("服务器宕机了")[:3] == ["服", "务", "器"]
    assert _native.lexical_tokens("Tôi không đăng nhập được") == ["toi", "khong", "dang", "nhap", "duoc"]


corpora = st.integers(1, 20).flatmap(
    lambda n: st.tuples(
        st.lists(st.lists(st.sampled_from(WORDS), max_size=7).map(" ".join), min_size=n, max_size=n),
        st.lists(st.integers(0, 4), min_size=n, max_size=n),
        st.lists(st.lists(st.sampled_from(WORDS), max_size=4).map(" ".join), min_size=1, max_size=5),
    )
)


@settings(max_examples=150, deadline=None)
@given(corpora, st.sampled_from([(1.2, 0.75), (0.5, 0.0), (2.0, 1.0)]), st.booleans())
def test_scores_match_a_python_bm25(data, params, as_array):
    docs, labels, queries = data
    k1, b = params
    stop = {"the", "de"}
    ix = LexicalIndex(sorted(stop), k1, b)
    ix.add(docs, np.array(labels, np.uint32) if as_array else labels)
    assert len(ix) == len(docs)
    for q in queries:
        want = bm25(docs, stop, q, k1, b)
        np.testing.assert_allclose(ix.score_docs(q), want, rtol=1e-4, atol=1e-5)
        got = ix.score_labels(q, 6)
        assert got.dtype == np.float32 and got.shape == (6,)
        best = [max([w for w, lab in zip(want, labels) if lab == c], default=0.0) for c in range(6)]
        np.testing.assert_allclose(got, best, rtol=1e-4, atol=1e-5)
    # Leave-one-out: query i leaves document i out of its label maxima.
    ex = np.array([i % len(docs) for i in range(len(queries))], np.uint32)
    batch = ix.score_labels_batch(queries, 6, ex)
    assert batch.shape == (len(queries), 6) and batch.dtype == np.float32
    for i, q in enumerate(queries):
        want = bm25(docs, stop, q, k1, b)
        best = [
            max([w for d, (w, lab) in enumerate(zip(want, labels)) if lab == c and d != ex[i]], default=0.0)
            for c in range(6)
        ]
        np.testing.assert_allclose(batch[i], best, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(
        ix.score_labels_batch(queries, 6), np.stack([ix.score_labels(q, 6) for q in queries])
    )


def test_exclusion_stop_words_and_arguments():
    ix = LexicalIndex(["The", "État"])
    assert ix.stop_words() == ["etat", "the"]
    ix.add(["the ha_get_logs tool", "get the logs", "état INC12291856"], [1, 1, 2])
    assert np.array_equal(ix.labels(), [1, 1, 2]) and ix.labels().dtype == np.uint32
    assert not ix.score_labels("the état", 3).any()
    s = ix.score_labels("HA_get_logs", 3)
    assert s[1] > 0 and s[0] == s[2] == 0
    no = LexicalIndex.NO_DOC
    assert no == 2**32 - 1
    r = ix.score_labels_batch(["ha_get_logs", "ha_get_logs", "inc12291856"], 3, [0, no, 2])
    assert 0 < r[0, 1] < r[1, 1] and r[2, 2] == 0
    assert ix.score_labels_batch([], 3).shape == (0, 3)
    with pytest.raises(_native.InvalidArgumentError):
        ix.score_labels("x", 2)  # a document has label 2
    with pytest.raises(_native.InvalidArgumentError):
        ix.score_labels_batch(["x"], 3, [5])  # no document 5
    with pytest.raises(_native.InvalidArgumentError):
        ix.score_labels_batch(["x", "y"], 3, [0])
    with pytest.raises(_native.InvalidArgumentError):
        ix.add(["a", "b"], [0])
    with pytest.raises(_native.InvalidArgumentError):
        LexicalIndex([], -1.0)
    with pytest.raises(TypeError):
        ix.add(["a"], ["x"])
    n, terms, mem = len(ix), ix.n_terms, ix.memory_bytes
    ix.add([f"tool_{i} does thing {i}" for i in range(300)], np.full(300, 3, np.uint32))
    assert len(ix) == n + 300 and ix.n_terms > terms + 300 and ix.memory_bytes > mem
    assert (ix.k1, ix.b) == (pytest.approx(1.2), 0.75)


def test_coverage_discounts_accidental_matches_across_languages():
    from routecore.core.lexical import LexicalTable

    en = [
        "reset my password",
        "I forgot my password",
        "the vpn is down",
        "vpn keeps disconnecting",
        "order a new laptop",
    ]
    t = LexicalTable(en, [0, 0, 1, 1, 2], 3)
    assert t.index.coverage("reset my password") == pytest.approx(1.0)
    # French: one word ("vpn") matches by accident among words no exemplar holds.
    fr = "je n'arrive plus à me connecter au vpn depuis ce matin"
    assert 0 < t.index.coverage(fr) < 0.3 and t.scores(fr)[1] == pytest.approx(t.index.coverage(fr))
    assert (
        t.index.coverage("重置密码") == 0
        and not t.scores("重置密码").any()
        and t.bias("重置密码", 1.0) is None
    )
    # Leaving a document out takes its words with it (leave-one-out calibration).
    assert t.index.coverage("order laptop", [4]) == 0 and t.index.coverage("order laptop") == 1
    np.testing.assert_allclose(
        t.scores_batch(["reset my password", fr]), np.stack([t.scores("reset my password"), t.scores(fr)])
    )
    assert t.index.coverage_batch([fr, "vpn"], [[], [2, 3]]).tolist() == [
        pytest.approx(t.index.coverage(fr)),
        0.0,
    ]
    with pytest.raises(_native.InvalidArgumentError):
        t.index.coverage_batch(["a", "b"], [[]])
    # Held-out scores (one native batch): label maxima without the excluded documents, times coverage.
    queries, excluded = ["forgot password", "vpn down", "new laptop"], [[1], [2, 3, 2], []]
    got = t.held_out(queries, [np.array(e) for e in excluded])
    for q, ex, row in zip(queries, excluded, got):
        d = t.index.score_docs(q)
        d[ex] = 0
        lab = np.array([d[[i for i, o in enumerate([0, 0, 1, 1, 2]) if o == k]].max() for k in range(3)])
        want = lab / lab.max() * t.index.coverage(q, ex) if lab.max() > 0 else np.zeros(3)
        np.testing.assert_allclose(row, want, rtol=1e-5)
    with pytest.raises(_native.InvalidArgumentError):
        t.index.score_labels_covered_batch(["a"], 3, [[99]])  # no document 99


def sample() -> LexicalIndex:
    ix = LexicalIndex(["the"], 1.5, 0.5)
    ix.add(
        ["get the logs", "ha_get_logs", "INC12291856 état", "服务器宕机了", "searchFlights"], [0, 1, 2, 2, 3]
    )
    return ix


QUERIES = ["logs", "ha_get_logs please", "état de INC12291856", "服务器", "search flights", "nothing"]


def same(a: LexicalIndex, b: LexicalIndex) -> None:
    assert (len(a), a.n_terms, a.k1, a.b, a.stop_words()) == (len(b), b.n_terms, b.k1, b.b, b.stop_words())
    for q in QUERIES:
        np.testing.assert_array_equal(a.score_docs(q), b.score_docs(q))


def test_files_round_trip(tmp_path):
    ix = sample()
    same(ix, LexicalIndex.from_bytes(ix.to_bytes()))
    p = tmp_path / "lexical.rcl"
    ix.save(p)
    same(ix, LexicalIndex.load(str(p)))
    assert sorted(x.name for x in tmp_path.iterdir()) == ["lexical.rcl"]
    with pytest.raises(_native.StorageIOError):
        LexicalIndex.load(tmp_path / "missing")


def test_damaged_files_are_corrupt_index_errors(tmp_path):
    b = sample().to_bytes()
    rng = np.random.default_rng(0)
    for cut in range(len(b)):
        with pytest.raises(_native.CorruptIndexError):
            LexicalIndex.from_bytes(b[:cut])
    for pos in range(len(b)):
        t = bytearray(b)
        t[pos] ^= int(rng.integers(1, 256))
        with pytest.raises(_native.CorruptIndexError):
            LexicalIndex.from_bytes(bytes(t))
    with pytest.raises(_native.CorruptIndexError):
        LexicalIndex.from_bytes(b + b"\0")
    p = tmp_path / "x.rcl"
    p.write_bytes(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(_native.CorruptIndexError):
        LexicalIndex.load(p)


def test_sixteen_threads_share_one_index():
    ix = sample()
    ix.add(
        [f"tool {i} with words {i % 7} and logs" for i in range(2000)], np.arange(2000, dtype=np.uint32) % 4
    )
    want = [ix.score_labels(q, 4) for q in QUERIES]
    want_batch = ix.score_labels_batch(QUERIES * 20, 4)
    errors: list[BaseException] = []

    def run():
        try:
            for _ in range(30):
                for q, w in zip(QUERIES, want):
                    assert np.array_equal(ix.score_labels(q, 4), w)
                assert np.array_equal(ix.score_labels_batch(QUERIES * 20, 4), want_batch)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:1]


# The per-label bias of the routing step.


def routes(storage: str, seed: int = 0):
    rng = np.random.default_rng(seed)
    n_routes, per, d = 30, 10, 64
    C = rng.standard_normal((n_routes, d)).astype(np.float32)
    X = (np.repeat(C, per, 0) + 0.7 * rng.standard_normal((n_routes * per, d))).astype(np.float32)
    ix = _native.FlatIndex(d, storage)
    ix.add(
        np.arange(len(X), dtype=np.uint64),
        X,
        [f"r{i // per}" for i in range(len(X))],
        [f"d{i // per % 3}" for i in range(len(X))],
    )
    q = (C[4] + 0.5 * rng.standard_normal(d)).astype(np.float32)
    return ix, q


@pytest.mark.parametrize("storage", ["f32", "int8"])
def test_bias_none_is_the_plain_step_and_a_bias_moves_it(storage):
    ix, q = routes(storage)
    n = len(ix.label_names())
    args = (q, _native.StepParams(active_domains=["d1"], exact_top=3))
    plain, none = ix.score_routes(*args), ix.score_routes(*args, None)
    assert plain.dense is None and none.dense is None and plain.top_dense is None
    for k in ("raw", "bound", "adjusted", "probs", "route_domains", "top_scores", "top_ids", "top_labels"):
        assert getattr(plain, k).tobytes() == getattr(none, k).tobytes(), k
    assert plain.collision == none.collision
    zero = ix.score_routes(*args, np.zeros(n, np.float32))
    np.testing.assert_array_equal(zero.raw, plain.raw)
    np.testing.assert_array_equal(zero.dense, plain.raw)
    np.testing.assert_array_equal(zero.top_ids, plain.top_ids)
    np.testing.assert_array_equal(zero.top_dense, plain.top_scores)
    # Remove the best route, lift a weak one.
    order = np.argsort(-plain.raw, kind="stable")
    best, weak = int(order[0]), int(order[12])
    bias = np.zeros(n, np.float32)
    bias[best], bias[weak] = -np.inf, 0.6
    r = ix.score_routes(*args, bias)
    assert r.adjusted[best] == -np.inf and r.probs[best] == 0
    assert r.raw[weak] == np.float32(r.dense[weak] + np.float32(0.6))
    assert int(np.argmax(r.raw)) == weak
    labels = ix.label_names()
    assert all(int(c) != best for c in r.top_labels) and labels[int(r.top_labels[0])] == labels[weak]
    assert r.collision is None or best not in r.collision[:2]
    np.testing.assert_allclose(r.top_scores, r.top_dense + bias[r.top_labels], atol=1e-6)
    for bad in (np.zeros(n - 1, np.float32), np.full(n, np.nan, np.float32), np.full(n, -np.inf, np.float32)):
        with pytest.raises(_native.InvalidArgumentError):
            ix.score_routes(*args, bad)


def test_label_bias_is_the_scaled_label_scores():
    from routecore import RoutecoreError
    from routecore.core.lexical import stop_words

    ix = _native.LexicalIndex(list(stop_words()))
    ix.add(
        [
            "restart the nginx service",
            "show the kafka logs",
            "open an incident for the VPN",
            "kafka consumer lag",
        ],
        np.array([0, 1, 2, 1], np.uint32),
    )
    for q, w in [
        ("kafka logs please", 0.04),
        ("vpn incident", 0.1234567),
        ("nothing shared here", 0.04),
        ("restart kafka", 0.0),
    ]:
        s, cover = ix.score_labels_covered(q, 3)
        top = float(s.max())
        want = None if not w or top <= 0 else s * np.float32(w * cover / top)
        got = ix.label_bias(q, 3, w)
        assert (got is None) == (want is None) and (got is None or np.array_equal(got, want)), q
    with pytest.raises(RoutecoreError):
        ix.label_bias("kafka", 2, 0.04)  # label codes up to 2 need n_labels >= 3


def test_a_stemmed_index_matches_inflected_forms_and_keeps_its_stemmer():
    from routecore.core.lexical import DEFAULT_B, LexicalTable, stop_words
    from routecore.errors import ConfigError, InvalidArgumentError

    assert LexicalIndex().b == DEFAULT_B
    docs, names = (
        ["Search flights between two airports", "Weather forecasts for a city"],
        ["search_flights", "get_weather"],
    )
    plain = LexicalTable(docs, [0, 1], 2, names)
    stemmed = LexicalTable(docs, [0, 1], 2, names, stemmer="english", b=0.25)
    assert plain.index.stemmer == "none" and stemmed.index.stemmer == "english" and stemmed.index.b == 0.25
    assert stemmed.index.terms("Searching flight forecast") == ["search", "flight", "forecast"]
    q = "a forecast for the city"
    assert plain.scores(q)[1] < stemmed.scores(q)[1] == 1.0  # "forecast" finds "forecasts" only when stemmed
    assert LexicalIndex.from_bytes(stemmed.index.to_bytes()).stemmer == "english"
    # Stop words are counted by term: "years" and "year" count together.
    assert {"year", "years"} <= set(stop_words("english")) and "year" not in stop_words("none")
    with pytest.raises(ConfigError, match="stemmer must be one of"):
        LexicalTable(docs, [0, 1], 2, stemmer="porter")
    with pytest.raises(InvalidArgumentError, match="unknown stemmer"):
        LexicalIndex(stemmer="porter")


def test_fit_form_stems_when_the_validation_rows_need_it():
    from routecore.core.lexical import DEFAULT_B, LexicalTable, fit_form

    docs, names = ["book flights", "weather report"], ["flights", "weather"]
    queries = ["booking a flight", "the flight i booked", "flight bookings please", "booking flight now"]
    dense = np.tile(
        np.array([0.50, 0.51], np.float32), (len(queries), 1)
    )  # the dense scores prefer the wrong tool

    def table_for(stemmer: str, b: float) -> LexicalTable:
        return LexicalTable(docs, [0, 1], 2, names, stemmer=stemmer, b=b)

    stemmer, b, w, stats, tried = fit_form(table_for, queries, dense, np.zeros(len(queries), int), 0.01)
    assert (stemmer, b) == ("english", DEFAULT_B) and w > 0.01  # ties go to the first form that gains
    assert (
        tried["none/0.75"] == 0.0
        and tried["english/0.75"] == 1.0
        and stats["lexical_heldout_accuracy_fused"] == 1.0
    )
    # No form helps: the unstemmed default, weight 0.
    assert fit_form(table_for, ["rain"] * 4, dense, np.zeros(4, int), 0.01)[:3] == ("none", DEFAULT_B, 0.0)
