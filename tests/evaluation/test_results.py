"""routecore.evaluation.results: the typed results keep the JSON form `routecore eval --json` printed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from routecore.evaluation import metrics as M
from routecore.evaluation.results import Latency, ToolEval

TOOLS = ("a", "b", "c", "d", "e", "f")
KS = (1, 3, 5)


@st.composite
def _rows(draw: st.DrawFn) -> tuple[list, list, list, list, list]:
    n = draw(st.integers(1, 12))
    gold = [draw(st.lists(st.sampled_from(TOOLS), max_size=3, unique=True)) for _ in range(n)]
    ranked = [draw(st.permutations(TOOLS)) for _ in range(n)]
    selected = [r[: draw(st.integers(0, 3))] for r in ranked]
    no_tool = [draw(st.booleans()) for _ in range(n)]
    top = [draw(st.floats(-1, 1)) for _ in range(n)]
    return gold, ranked, selected, no_tool, top


@given(_rows())
def test_a_tool_eval_prints_the_figures_the_metrics_give(rows):
    gold, ranked, selected, no_tool, top = rows
    figures = M.tool_shape_metrics(gold, ranked, selected, no_tool, top, KS)
    lat = Latency.of(M.latency([1.0, 2.0, 3.0]))
    res = ToolEval.of(len(gold), figures, KS, lat)
    assert res.to_dict() == {"n": len(gold), **figures, "latency_ms": M.latency([1.0, 2.0, 3.0])}
    if any(gold):
        assert res.recall[5] == figures["recall@5"] and res.mrr == figures["mrr"]
    else:
        assert res.recall == {} and res.mrr is None
