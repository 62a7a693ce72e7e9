"""Routers over int8 tables (``storage="auto"`` for large route sets and
catalogs) decide exactly as over f32 tables."""

from __future__ import annotations

import numpy as np
import pytest

from routecore.config.specs import RouteSpec, ToolSpec
from routecore.memory.memory import ExperienceMemory
from routecore.routers.router import AUTO_INT8_ELEMENTS, Router
from stubs import DIM, StubEncoder, manual

N_ROUTES, PER = 60, 12


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((N_ROUTES, DIM)).astype(np.float32)
    table, routes = {}, []
    for r in range(N_ROUTES):
        texts = [f"route{r}-ex{j}" for j in range(PER)]
        for t in texts:
            table[t] = centres[r] + 1.1 * rng.standard_normal(DIM).astype(np.float32)
        routes.append(RouteSpec(f"R{r}", tuple(texts), domain=f"d{r % 4}"))
    queries = []
    for i in range(40):
        q = f"query{i}"
        # Some queries sit between two routes, some near one, some nowhere.
        a, b = rng.integers(0, N_ROUTES, 2)
        w = rng.uniform(0, 1)
        table[q] = (
            w * centres[a] + (1 - w) * centres[b] + rng.uniform(0.5, 3) * rng.standard_normal(DIM)
        ).astype(np.float32)
        queries.append(q)
    enc = StubEncoder(table)
    policy = manual(low_action="clarify", min_score=0.1)
    return routes, enc, policy, queries


def test_auto_storage_picks_int8_for_large_tables(setup):
    routes, enc, policy, _ = setup
    assert N_ROUTES * PER * DIM >= AUTO_INT8_ELEMENTS
    assert Router(routes, encoder=enc, policy=policy).route_table.table.storage == "int8"
    assert Router(routes[:3], encoder=enc, policy=policy).route_table.table.storage == "f32"


def test_int8_router_decides_like_f32(setup):
    routes, enc, policy, queries = setup
    exact = Router(routes, encoder=enc, policy=policy, storage="f32")
    compact = Router(routes, encoder=enc, policy=policy, storage="int8")
    approximated = 0
    for q in queries:
        a, b = exact.route(q), compact.route(q)
        assert (a.action, a.route, a.tier, a.candidates, a.bias_rule) == (
            b.action,
            b.route,
            b.tier,
            b.candidates,
            b.bias_rule,
        )
        assert [e.text for e in a.top_exemplars] == [e.text for e in b.top_exemplars]
        for name, bound in b.score_bounds.items():
            assert abs(a.raw_scores[name] - b.raw_scores[name]) <= bound + 1e-6
        best = max(a.adjusted_scores, key=a.adjusted_scores.get)
        assert b.score_bounds[best] == 0
        assert b.probabilities == pytest.approx(a.probabilities, abs=2e-3)
        approximated += sum(1 for v in b.score_bounds.values() if v > 0)
        assert not any(a.score_bounds.values())
    assert approximated > 0  # the int8 path really estimated some routes


def _same_belt(a, b, exact_top):
    """Same tools with the same exact scores; reported scores equal for the best
    ``exact_top``, the rest within their int8 bounds (``a`` reports every tool)."""
    assert a.names == b.names
    assert (a.collision, a.system_prompt_alert) == (b.collision, b.system_prompt_alert)
    assert [t.score for t in b.tools] == pytest.approx([t.score for t in a.tools], abs=1e-5)
    assert [t.raw_score for t in b.tools] == pytest.approx([t.raw_score for t in a.tools], abs=1e-5)
    assert not any(b.score_bounds.get(t.name, 0) for t in b.tools)
    assert list(a.scores)[:exact_top] == list(b.scores)[:exact_top]
    assert not a.score_bounds
    for name, raw in b.raw_scores.items():
        assert abs(raw - a.raw_scores[name]) <= b.score_bounds.get(name, 0) + 1e-5
    return sum(1 for v in b.score_bounds.values() if v > 0)


def test_int8_tool_belt_matches_f32(tmp_path):
    rng = np.random.default_rng(9)
    n = 400
    table = {f"tool {i}": rng.standard_normal(DIM).astype(np.float32) for i in range(n)}
    # Tools 0-39 refuse queries that look like their own description: an
    # anti-pattern demotes the best tools, so lower-ranked ones enter the belt.
    anti = {i: (f"not tool {i}",) for i in range(0, 40)}
    for i in anti:
        table[f"not tool {i}"] = table[f"tool {i}"]
    tools = [
        ToolSpec(f"t{i}", f"tool {i}", domain=f"p{i % 20}", anti_patterns=anti.get(i, ())) for i in range(n)
    ]
    queries = [f"tool {i}" for i in range(0, n, 37)]
    for q in list(queries):
        table[q + " please"] = table[q] + 0.8 * rng.standard_normal(DIM).astype(np.float32)
        queries.append(q + " please")
    enc = StubEncoder(table)
    policy = manual(report_scores=30)
    # The f32 router reports every tool: the reference for the int8 estimates.
    exact = Router(tools=tools, encoder=enc, storage="f32", policy=manual(report_scores=n))
    compact = Router(tools=tools, encoder=enc, storage="int8", policy=policy)
    estimated = 0
    for q in queries:
        for kw in ({}, {"context_domains": ["p3"]}, {"threshold": 0.2}, {"top_k": 12}):
            estimated += _same_belt(exact.tools(q, **kw), compact.tools(q, **kw), policy.exact_top)
    assert estimated > 0  # the reported tail really held int8 estimates
    # Lessons lift or ban tools: the lifted one is scored exactly.
    for r in (exact, compact):
        r.memory = ExperienceMemory(tmp_path / f"{r.tool_catalog.tools.storage}.sqlite")
        r.record_lesson("tool 74 please", "t300", use=True)
        r.record_lesson("tool 74 please", "t74", use=False)
    a, b = exact.tools("tool 74 please"), compact.tools("tool 74 please")
    assert "t300" in b.names and "t74" not in b.names
    _same_belt(a, b, policy.exact_top)


def test_previous_route_and_clarify_candidates_are_exact(setup):
    routes, enc, policy, queries = setup
    boost = manual(low_action="clarify", min_score=0.1, previous_strategy="boost", previous_boost=0.3)
    exact = Router(routes, encoder=enc, policy=boost, storage="f32")
    compact = Router(routes, encoder=enc, policy=boost, storage="int8")
    for q in queries[:15]:
        first = compact.route(q)
        worst = min(first.raw_scores, key=first.raw_scores.get)
        a, b = exact.route(q, previous=worst), compact.route(q, previous=worst)
        assert b.score_bounds[worst] == 0
        assert abs(a.raw_scores[worst] - b.raw_scores[worst]) <= 1e-5
        assert (a.action, a.route, a.tier) == (b.action, b.route, b.tier)
        if b.action == "clarify":
            c = compact.route("the second one", clarify=b)
            assert all(c.score_bounds[n] == 0 for n in b.candidates)
