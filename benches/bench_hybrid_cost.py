"""What the lexical pass adds to the router's non-encoder time (issue 14 budget: <= 10 %).

`Router.route()` at 150 routes x 100 exemplars (CLINC150 train utterances, up to 100 per
label) and `Router.tools()` at 10,000 tools (MetaTool's 199 descriptions, replicated with
numbered names), with an encoder that returns precomputed e5 vectors instantly: the time
measured is everything but the encoder. Same router, lexical weight 0 (pass off) vs the
weight it would use; queries cycle over 64 real test queries. "tools 10k stemmed" is the
same catalog with the terms `fit --tools` picks on MetaTool (English stems, BM25 b = 0).

    pytest benches/bench_hybrid_cost.py --benchmark-only
    python benches/bench_hybrid_cost.py     # block-interleaved and per-call paired shares
    python benches/bench_hybrid_cost.py --real "tools 10k"   # queries through the real e5 encoder

``--real``: the same router, but each query is encoded by the bundled e5 model as in
use (ONNX Runtime between two calls evicts the caches the scoring step reads); the
time measured is the call's own non-encoder time, ``total - tokenize - encode`` of
its :class:`~routecore.decision.Timings`.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from conftest import SHARED  # noqa: F401 - puts tests/ on the path
from routecore import Encoder
from routecore.config.specs import RouteSpec, ToolSpec
from routecore.core.encoder import EncodeOutput
from routecore.evaluation import datasets as D
from routecore.evaluation.runner import embed
from routecore.routers.router import Router
from stubs import manual

_E5: list = []


def e5() -> Encoder:
    if not _E5:
        _E5.append(Encoder.load(cache_size=0))
    return _E5[0]


class Instant:
    """Precomputed vectors for known texts (the encoder's cost left out)."""

    def __init__(self, enc: Encoder, texts: list[str]):
        self.dim, self.model_id, self.path = enc.dim, enc.model_id, None
        self.table = dict(zip(texts, embed(enc, texts)))

    def encode_with_stats(self, texts, kind="query"):
        return EncodeOutput(np.stack([self.table[t] for t in texts]), (), 0.0, 0.0, 0)


def routes_case():
    train, test = D.clinc150("train"), D.clinc150("test")
    by: dict[str, list[str]] = {}
    for s in train.samples:
        if s.label != "oos":
            by.setdefault(s.label, []).append(s.text)
    specs = [RouteSpec(n, tuple(t[:100])) for n, t in sorted(by.items())]
    queries = [s.text for s in test.samples[:64]]
    enc = Instant(e5(), [t for r in specs for t in r.utterances] + queries)
    return specs, [], queries, enc


def tools_case():
    q, cat = D.metatool("single_tool")
    specs = [ToolSpec(f"{t['name']}_{k}", t["description"]) for k in range(51) for t in cat][:10_000]
    queries = [s.query for s in q.samples[:64]]
    enc = Instant(e5(), list({t.description for t in specs}) + queries)
    return [], specs, queries, enc


def case_router(case: str, lexical: bool = True, w: float = 0.04) -> tuple[Router, list[str]]:
    """The router of ``case`` and its queries."""
    routes, tools, queries, enc = (routes_case if case.startswith("route") else tools_case)()
    r = Router(
        routes, tools, encoder=enc, policy=manual(lexical=lexical, lexical_weight=w, tool_lexical_weight=w)
    )
    if case.endswith("stemmed"):
        r.tool_catalog.lexical = r.tool_catalog.lexical_table("english", 0.0)
    return r, queries


@pytest.mark.parametrize("case", ["route 150x100", "tools 10k", "tools 10k stemmed"])
@pytest.mark.parametrize("lexical", [False, True])
def test_non_encoder_time(benchmark, case, lexical):
    r, queries = case_router(case, lexical, 0.04 if lexical else 0.0)
    it = itertools.cycle(queries)
    fn = (lambda: r.route(next(it))) if case.startswith("route") else (lambda: r.tools(next(it)))
    benchmark.group = f"non-encoder {case}"
    benchmark.extra_info["lexical_memory_bytes"] = (
        (r.route_table.lexical or r.tool_catalog.lexical).index.memory_bytes if lexical else 0
    )
    benchmark.pedantic(fn, rounds=400, warmup_rounds=20)


def _blocks(r: Router, queries: list[str], case: str, blocks: int, per_block: int, timed) -> dict[str, float]:
    """The lexical pass toggled between alternating blocks of calls: the median over
    blocks of each block's median ``timed(call, query)`` (ms), off and on."""
    on, off = r.policy, r.policy.with_overrides(lexical=False)
    call = r.route if case.startswith("route") else r.tools
    it = itertools.cycle(queries)
    res: dict[str, list[float]] = {"off": [], "on": []}
    for b in range(2 * blocks):
        key = "on" if b % 2 else "off"
        r.policy = on if key == "on" else off
        res[key].append(float(np.median([timed(call, next(it)) for _ in range(per_block)])))
    off_ms, on_ms = float(np.median(res["off"])), float(np.median(res["on"]))
    return {"off_ms": round(off_ms, 4), "on_ms": round(on_ms, 4), "ratio": round(on_ms / off_ms, 3)}


def interleaved(case: str, blocks: int = 15, per_block: int = 200) -> dict:
    """One router, the lexical pass toggled between alternating blocks of calls: the
    median over blocks of each block's median call time (ms), off and on."""
    import time

    def wall(call, q):
        t0 = time.perf_counter()
        call(q)
        return (time.perf_counter() - t0) * 1e3

    r, queries = case_router(case)
    return {"case": case, **_blocks(r, queries, case, blocks, per_block, wall)}


def paired(case: str, rounds: int = 6) -> dict:
    """Each query with the lexical pass off and on back to back, in both orders (the second
    call of a pair finds warmer caches): median paired difference (µs) and its share of the
    median call with the pass on."""
    import time

    r, queries = case_router(case)
    on, off = r.policy, r.policy.with_overrides(lexical=False)
    call = r.route if case.startswith("route") else r.tools
    out: dict = {"case": case}
    for order in (("off", "on"), ("on", "off")):
        diff, t_on = [], []
        for _ in range(rounds):
            for q in queries:
                ts = {}
                for key in order:
                    r.policy = on if key == "on" else off
                    t0 = time.perf_counter()
                    call(q)
                    ts[key] = time.perf_counter() - t0
                diff.append(ts["on"] - ts["off"])
                t_on.append(ts["on"])
        d, c = float(np.median(diff)), float(np.median(t_on))
        out["-".join(order)] = {"diff_us": round(d * 1e6, 1), "share": round(d / c, 3)}
    return out


def real_encoder(case: str, blocks: int = 10, per_block: int = 64) -> dict:
    """:func:`interleaved` with every query encoded by the real e5 model (no cache): the
    median over blocks of each block's median non-encoder time (ms), off and on."""

    def non_encoder(call, q):
        t = call(q).timings
        return t.total - t.tokenize - t.encode

    r, queries = case_router(case)
    r.encoder = e5()  # the route table's and the tool catalog's
    return {"case": case, "encoder": "e5", **_blocks(r, queries, case, blocks, per_block, non_encoder)}


if __name__ == "__main__":
    import json
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "tests"))
    args = sys.argv[1:]
    real = "--real" in args
    for case in [a for a in args if a != "--real"] or ("route 150x100", "tools 10k", "tools 10k stemmed"):
        if real:
            print(json.dumps(real_encoder(case)), flush=True)
            continue
        print(json.dumps(interleaved(case)), flush=True)
        print(json.dumps(paired(case)), flush=True)
