"""End-to-end `Router.route()` and `Router.tools()` with real encoders, split
into encode time and everything else (native scoring + Python policy)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from bench_encoder import bge_m3_shaped
from conftest import SHARED
from routecore import Encoder, Policy, Router, TableVectors
from routecore.config.specs import RouteSpec, ToolSpec
from routecore.evaluation import datasets as D
from routecore.evaluation import runner as R

QUERIES = [
    "the production server is down",
    "comment configurer le VPN",
    "how do I rotate the database password",
    "my card payment was declined",
    "set an alarm for 7 am",
    "what is the weather tomorrow",
    "query logs",
    "restart nginx",
]
BGE = "bge-m3-shaped-int8 (random weights)"
# e5 is the bundled default (None); MiniLM is read from ../shared.
ENCODERS = {
    "minilm-int8": lambda: SHARED / "models" / "all-minilm-l6-v2",
    "e5-small-int8": lambda: None,
    BGE: bge_m3_shaped,
}
_cache: dict = {}


def encoder(name):
    if name not in _cache:
        path = ENCODERS[name]()
        if name == BGE and path is None:
            pytest.skip("cannot build the bge-m3-shaped model (pip install onnx)")
        _cache[name] = Encoder.load(path, cache_size=0)
    return _cache[name]


def synthetic_routes(enc, n_routes=150, per=100):
    """150 x 100 exemplar vectors around route centres (for the random-weight
    bge-m3-shaped model, whose embeddings carry no meaning; timing only)."""
    rng = np.random.default_rng(1)
    centres = rng.standard_normal((n_routes, enc.dim)).astype(np.float32)
    v = (np.repeat(centres, per, axis=0) + 1.2 * rng.standard_normal((n_routes * per, enc.dim))).astype(
        np.float32
    )
    routes = [
        RouteSpec(f"route_{r}", tuple(f"r{r} e{j}" for j in range(per - 1)), f"route {r}")
        for r in range(n_routes)
    ]
    return Router(routes, encoder=enc, policy=Policy(low_action="none"), vectors=TableVectors(routes=v))


def router_for(name, setup):
    key = (name, setup)
    if key in _cache:
        return _cache[key]
    enc = encoder(name)
    if setup == "it-ops (3 routes)":
        r = Router.from_config(ROOT / "examples" / "it_ops_routes.yaml", encoder=enc)
    elif setup == "clinc150 (150 routes x 100)":
        if name == BGE:
            r = synthetic_routes(enc)
        else:
            r = R.build_router(D.clinc150("train"), enc, shots=100)
    elif setup == "tools.yaml (10 tools)":
        r = Router.from_config(ROOT / "examples" / "tools.yaml", encoder=enc)
    else:  # 10 000-tool catalog, 100 plugins; description vectors synthetic, queries real
        n = 10_000
        rng = np.random.default_rng(0)
        v = rng.standard_normal((n, enc.dim)).astype(np.float32)
        tools = [ToolSpec(f"tool_{i}", f"tool {i}", domain=f"plugin_{i % 100}") for i in range(n)]
        r = Router(tools=tools, encoder=enc, vectors=TableVectors(tools=v))
    _cache[key] = r
    return r


from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SMALL = ("minilm-int8", "e5-small-int8")
CASES = [(e, s) for e in SMALL for s in ("it-ops (3 routes)", "clinc150 (150 routes x 100)")] + [
    (BGE, "clinc150 (150 routes x 100)")
]
TCASES = [(e, s) for e in SMALL for s in ("tools.yaml (10 tools)", "10k tools")] + [(BGE, "10k tools")]


def record(benchmark, calls, encoder_name, setup, kind):
    """``calls``: (decision timings, wall time of the call in ms). "total" is the
    wall time, so "other" also counts building the decision object."""
    total = np.array([wall for _, wall in calls])
    enc = np.array([t.tokenize + t.encode for t, _ in calls])
    other = total - enc
    pct = lambda a, q: float(np.percentile(a, q))  # noqa: E731
    benchmark.extra_info.update(
        {
            "encoder": encoder_name,
            "setup": setup,
            "kind": kind,
            "total_p50_ms": pct(total, 50),
            "total_p95_ms": pct(total, 95),
            "encode_p50_ms": pct(enc, 50),
            "encode_p95_ms": pct(enc, 95),
            "other_p50_ms": pct(other, 50),
            "other_p95_ms": pct(other, 95),
        }
    )


ALL = [("route", e, s) for e, s in CASES] + [("tools", e, s) for e, s in TCASES]


@pytest.mark.parametrize("kind,enc_name,setup", ALL, ids=[f"{k}-{e}-{s.split()[0]}" for k, e, s in ALL])
def test_router_call(benchmark, kind, enc_name, setup):
    r = router_for(enc_name, setup)
    call = r.route if kind == "route" else r.tools
    calls = []
    it = iter(range(10**9))

    def once():
        t0 = time.perf_counter()
        d = call(QUERIES[next(it) % len(QUERIES)])
        calls.append((d.timings, (time.perf_counter() - t0) * 1e3))

    benchmark.group = f"{kind} {setup}"
    benchmark.pedantic(once, rounds=200, warmup_rounds=5)
    record(benchmark, calls[5:], enc_name, setup, kind)
