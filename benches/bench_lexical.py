"""The lexical (BM25) pass of issue 14, per query, next to what it is added to.

- ``LexicalIndex.score_labels`` at 150 routes x 100 exemplars (CLINC150 train
  utterances without ``oos``; CLINC150 test queries) and at 10,000 tools (the 199
  MetaTool tools, name + description, replicated with ``_v{k}`` name suffixes;
  MetaTool queries). Stop words are learnt as the issue-14 prototype learns them:
  tokens in >= 2 % of the bundled background queries (43 words in en/fr/zh).
  Without ``../shared/datasets``, synthetic Zipf utterances stand in.
- ``memory_bytes()`` and the build time at 100,000 tools (in ``extra_info``, and printed).
- The native routing step at 150 x 100 (d 384, the int8 storage routers use at this
  size, and f32) with and without a per-route bias, so that the bias's cost shows.

    pytest benches/bench_lexical.py --benchmark-only
"""

from __future__ import annotations

import collections
import itertools
import time

import numpy as np
import pytest

from conftest import clustered
from routecore import _native
from routecore._native import LexicalIndex
from routecore.calibrate.calibration import background_texts
from routecore.errors import DatasetError


def stop_words() -> list[str]:
    bg = background_texts()[0]
    df = collections.Counter(w for t in bg for w in set(_native.lexical_tokens(t)))
    return sorted(w for w, c in df.items() if c >= 0.02 * len(bg))


def zipf_texts(n: int, seed: int, words: tuple[int, int] = (4, 12)) -> list[str]:
    """Short utterances over a 5,000-word vocabulary with Zipf-distributed word ranks."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        ranks = np.minimum(rng.zipf(1.2, int(rng.integers(*words))), 5000)
        out.append(" ".join(f"w{r}" for r in ranks))
    return out


def route_data() -> tuple[list[str], np.ndarray, list[str], str]:
    """(exemplar texts, route codes, queries, source): 150 routes x 100 exemplars."""
    try:
        from routecore.evaluation import datasets as D

        train = [s for s in D.clinc150("train").samples if s.label != "oos"]
        names = sorted({s.label for s in train})
        code = {n: i for i, n in enumerate(names)}
        queries = [s.text for s in D.clinc150("test").samples if s.label != "oos"]
        return (
            [s.text for s in train],
            np.array([code[s.label] for s in train], np.uint32),
            queries,
            "clinc150",
        )
    except DatasetError:
        return zipf_texts(15_000, 1), np.arange(15_000, dtype=np.uint32) // 100, zipf_texts(3_000, 2), "zipf"


def tool_data(n: int) -> tuple[list[str], list[str], str]:
    """(n tool documents, queries, source)."""
    try:
        from routecore.evaluation import datasets as D

        qs, cat = D.metatool("single_tool")
        docs = []
        for i in range(n):
            t, k = cat[i % len(cat)], i // len(cat)
            docs.append(f"{t['name'] if k == 0 else t['name'] + f'_v{k}'} {t['description']}")
        return docs, [s.query for s in qs.samples[:5000]], "metatool x suffixes"
    except DatasetError:
        return zipf_texts(n, 3, (10, 30)), zipf_texts(3_000, 4, (6, 16)), "zipf"


def cycle(queries: list[str]):
    it = itertools.cycle(queries)
    return lambda: next(it)


def test_lexical_routes(benchmark):
    texts, codes, queries, src = route_data()
    ix = LexicalIndex(stop_words())
    ix.add(texts, codes)
    n = int(codes.max()) + 1
    nxt = cycle(queries)
    benchmark.group = "lexical pass: score_labels per query"
    benchmark.extra_info.update(
        {
            "shape": "150 routes x 100",
            "source": src,
            "docs": len(ix),
            "terms": ix.n_terms,
            "memory_bytes": ix.memory_bytes,
        }
    )
    benchmark.pedantic(lambda: ix.score_labels(nxt(), n), rounds=3000, warmup_rounds=100)


@pytest.mark.parametrize("n", [10_000, 100_000])
def test_lexical_tools(benchmark, n):
    docs, queries, src = tool_data(n)
    ix = LexicalIndex(stop_words())
    t0 = time.perf_counter()
    ix.add(docs, np.arange(n, dtype=np.uint32))
    build_s = time.perf_counter() - t0
    nxt = cycle(queries)
    benchmark.group = "lexical pass: score_labels per query"
    benchmark.extra_info.update(
        {
            "shape": f"{n} tools",
            "source": src,
            "docs": len(ix),
            "terms": ix.n_terms,
            "memory_bytes": ix.memory_bytes,
            "build_s": build_s,
            "file_bytes": len(ix.to_bytes()),
        }
    )
    print(
        f"\n{n} tools ({src}): {ix.memory_bytes / 1e6:.1f} MB in memory, {ix.n_terms} terms, "
        f"built in {build_s:.2f} s, "
        f"file {len(ix.to_bytes()) / 1e6:.1f} MB"
    )
    benchmark.pedantic(
        lambda: ix.score_labels(nxt(), n), rounds=2000 if n <= 10_000 else 300, warmup_rounds=20
    )


def route_bias(kind: str, n: int) -> np.ndarray | None:
    """None; zeros (the mechanism alone); sparse: 10 routes lifted by up to 0.1, as a
    query's tokens lift the few routes that share them; dense: every route moved by
    up to 0.1 (a worst case that reorders the close routes of this synthetic table)."""
    rng = np.random.default_rng(0)
    if kind == "none":
        return None
    b = np.zeros(n, np.float32)
    if kind == "sparse":
        b[rng.choice(n, 10, replace=False)] = 0.1 * rng.random(10)
    elif kind == "dense":
        b[:] = 0.1 * rng.random(n)
    return b


@pytest.mark.parametrize("storage", ["int8", "f32"])
@pytest.mark.parametrize("bias_kind", ["none", "zeros", "sparse", "dense"])
def test_step_with_bias(benchmark, storage, bias_kind):
    routes, per, d = 150, 100, 384
    n = routes * per
    db = clustered(n, d, seed=d, centers=routes)
    ix = _native.FlatIndex(d, storage)
    ix.add(
        np.arange(n, dtype=np.uint64),
        db,
        [f"route{i // per}" for i in range(n)],
        [f"dom{i // per % 7}" for i in range(n)],
    )
    q = clustered(1, d, seed=9, centers=routes)[0]
    bias = route_bias(bias_kind, len(ix.label_names()))
    cutoff = _native.route_parallel_cutoff()
    _native.set_route_parallel_cutoff(1 << 62)  # one thread, as routers run it
    benchmark.group = f"routing step 150x100 d=384 {storage}: bias"
    benchmark.extra_info.update({"storage": storage, "bias": bias_kind})
    params = _native.StepParams(active_domains=["dom1"])
    fn = lambda: ix.score_routes(q, params, bias)  # noqa: E731
    try:
        benchmark.pedantic(fn, rounds=400, warmup_rounds=10)
    finally:
        _native.set_route_parallel_cutoff(cutoff)
