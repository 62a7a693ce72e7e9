"""A cascade's tool belts (issue 38 §3): the static table's router shortlists the tools, the
transformer's router picks the belt among them, and the belt says which tier gave the candidates."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from conftest import MODELS, need_shared
from routecore import Encoder, Router
from routecore.config.specs import ToolSpec
from routecore.decision import ToolBelt
from routecore.errors import ConfigError, InvalidArgumentError
from routecore.examples import TOOLS
from routecore.hub.distill import distill
from routecore.routers.cascade import Cascade
from routecore.tools.shortlist import best_tools

QUERIES = [
    "device logs",
    "turn on the kitchen light",
    "restart nginx on web-1",
    "is the disk full on db-2",
    "what's the weather in Paris",
    "qwzx plorf",
]
BLANK = ["", "   ", "\n\t"]


@pytest.fixture(scope="module")
def static_router(tmp_path_factory: pytest.TempPathFactory) -> Router:
    """The example catalog's router on a small MiniLM table (its first 8,000 pieces, 64 dims)."""
    dest = tmp_path_factory.mktemp("static") / "minilm-static"
    distill(need_shared(MODELS / "all-minilm-l6-v2"), dims=64, vocab=8000, dest=dest)
    return Router.from_config(TOOLS, encoder=Encoder.load(str(dest)))


@pytest.fixture(scope="module")
def cascade(static_router: Router, tools_router: Router) -> Cascade:
    return Cascade(static_router, tools_router, shortlist=2)


def alert(belt: ToolBelt) -> dict[str, Any]:
    (a,) = [a for a in belt.alerts if a.kind == "cascade"]
    return dict(a.data)


def without_cascade(belt: ToolBelt) -> tuple[Any, ...]:
    alerts = tuple(a for a in belt.alerts if a.kind != "cascade")
    return belt.names, dict(belt.scores), dict(belt.raw_scores), belt.no_tool, belt.reason, alerts


def test_a_shortlist_of_every_tool_gives_the_transformers_belt(cascade: Cascade) -> None:
    every = Cascade(cascade.fast, cascade.strong, shortlist=len(cascade.strong.tool_catalog.specs))
    for q in QUERIES:
        b = every.tools(q)
        assert without_cascade(b) == without_cascade(cascade.strong.tools(q)), q
        assert alert(b)["candidate_tier"] == "static"
    for top_k in (1, 3):
        b, s = every.tools("device logs", top_k=top_k), cascade.strong.tools("device logs", top_k=top_k)
        assert without_cascade(b) == without_cascade(s)


def test_the_candidates_come_from_the_static_tier(cascade: Cascade) -> None:
    specs = cascade.strong.tool_catalog.specs
    core = {t.name for t in specs if t.core}
    for q in QUERIES:
        b, data = cascade.tools(q), alert(cascade.tools(q))
        assert data["candidate_tier"] == "static" and data["encoder_tier"] == "transformer"
        assert data["served_by"] == "strong" and data["shortlist_size"] == 2
        # the static router's own ranking: its best two tools that are not core tools
        ranked = [t for t in cascade.fast.tools(q, top_k=len(specs)).scores if t not in core]
        assert data["shortlist"] == ranked[:2] == list(best_tools(cascade.fast.tool_catalog, q, 2).names)
        # passed on: the shortlist, the core tools and the discovery tools of the shortlist's plugins
        plugins = {t.domain for t in specs if t.name in data["shortlist"]}
        prefixes = cascade.strong.policy.discovery_prefixes
        discovery = {t.name for t in specs if t.domain in plugins and t.name.startswith(prefixes)}
        passed = set(data["shortlist"]) | core | discovery
        assert set(best_tools(cascade.fast.tool_catalog, q, 2).candidates) == passed
        # the belt holds only those, scored by the transformer
        assert set(b.names) <= passed and set(b.scores) <= passed, (q, b.names)
        own = cascade.strong.tools(q).scores
        assert all(np.isclose(v, own[t]) for t, v in b.scores.items()), q
        assert core <= set(b.names)  # core tools are always passed on
        t = b.timings  # both routers' time, added part by part (no comparison with another call's clock)
        assert t.total >= t.tokenize + t.encode and t.total >= t.score + t.policy and t.encode > 0


def test_no_tool_fits_as_for_the_transformer(cascade: Cascade) -> None:
    for q in QUERIES:
        if cascade.strong.tools(q).no_tool:  # the floor is read on the best candidate: a subset's is lower
            b = cascade.tools(q)
            assert b.no_tool and b.reason is not None and b.reason.code == "no_tool"
    assert cascade.tools("what's the weather in Paris").no_tool


def test_blank_queries_get_the_transformers_empty_belt(cascade: Cascade) -> None:
    for q in BLANK:
        b = cascade.tools(q)
        assert without_cascade(b) == without_cascade(cascade.strong.tools(q))
        assert b.no_tool and b.reason is not None and b.reason.code == "empty_query"
        assert alert(b)["candidate_tier"] is None and alert(b)["shortlist"] == []


#: Typos each router's speller reads by its own tokenizer's words (MiniLM's table, e5): they may differ.
TYPOS = ["is the dik ful on db-2", "restrat nginx on web-1", "shwo me the devcie logs"]


def test_batch_and_async_match_single_calls(cascade: Cascade) -> None:
    queries = QUERIES + BLANK + TYPOS
    one = [cascade.tools(q) for q in queries]
    many = cascade.tools_batch(queries)
    assert [without_cascade(b) for b in many] == [without_cascade(b) for b in one]
    assert [alert(b) for b in many] == [alert(b) for b in one]
    assert alert(asyncio.run(cascade.atools("device logs"))) == alert(one[0])
    assert [b.names for b in asyncio.run(cascade.atools_batch(queries[:2]))] == [b.names for b in one[:2]]
    assert cascade.tools_batch([]) == []


def test_candidates_restrict_the_shortlist(cascade: Cascade) -> None:
    only = ["search_docs", "get_system_logs", "restart_service", "ha_turn_on"]
    b = cascade.tools("device logs", candidates=only, shortlist=5)
    assert set(b.names) <= set(only) and set(alert(b)["shortlist"]) <= set(only) - {"search_docs"}


def test_a_failed_static_encoder_leaves_the_transformer_every_tool(
    cascade: Cascade, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Broken:
        dim = cascade.fast.encoder.dim

        def encode_with_stats(self, texts: Any) -> Any:
            raise RuntimeError("broken table")

    monkeypatch.setattr(cascade.fast.tool_catalog, "encoder", Broken())
    monkeypatch.setattr(cascade.fast, "encoder", Broken())
    for b in (cascade.tools("device logs"), cascade.tools_batch(["device logs"])[0]):
        assert alert(b)["candidate_tier"] == "transformer" and alert(b)["shortlist"] == []
        assert without_cascade(b) == without_cascade(cascade.strong.tools("device logs"))


def test_bad_arguments(cascade: Cascade, static_router: Router) -> None:
    with pytest.raises(InvalidArgumentError, match="vector"):
        cascade.tools("x", vector=[0.0] * 384)
    with pytest.raises(InvalidArgumentError, match="vector"):
        cascade.tools_batch(["x"], vectors=[[0.0] * 384])
    for n in (0, -1, 1.5, True):
        with pytest.raises(InvalidArgumentError, match="shortlist"):
            cascade.tools("x", shortlist=n)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        cascade.tools(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        cascade.tools_batch("device logs")
    other = Router(tools=[ToolSpec("only_tool", "a tool")], encoder=static_router.encoder)
    with pytest.raises(ConfigError, match="same tools"):
        Cascade(static_router, other)


def test_no_shortlist_is_the_default(static_router: Router, tools_router: Router) -> None:
    """Measured to lose recall on MetaTool, a shortlist is asked for, not given: by default the belt is
    the transformer's over every tool, with the cascade's alert saying so (one call and a batch)."""
    c = Cascade(static_router, tools_router)
    assert c.shortlist is None
    for b, s in [(c.tools(q), tools_router.tools(q)) for q in QUERIES] + list(
        zip(c.tools_batch(QUERIES), tools_router.tools_batch(QUERIES))
    ):
        assert without_cascade(b) == without_cascade(s)
        data = alert(b)
        assert data["candidate_tier"] == "transformer" and data["shortlist"] == []
        assert (
            data["shortlist_size"] is None
            and "no shortlist asked" in [a.message for a in b.alerts if a.kind == "cascade"][0]
        )
    assert alert(c.tools("device logs", shortlist=2))["shortlist_size"] == 2  # asked for: drawn


def test_a_cascade_speaks_as_a_router_for_sessions_lessons_and_learning(
    static_router: Router, tools_router: Router
) -> None:
    """What a Router has beyond its calls, a cascade has too: the strong router's LLM, lesson store and
    request_more_tools session (whose belts it offers); learn() is refused with a ConfigError."""
    c = Cascade(static_router, tools_router)
    assert c.llm is tools_router.llm and c.memory is tools_router.memory
    session = c.tool_session("device logs")
    assert session.belt.names == tools_router.tool_session("device logs").belt.names
    with pytest.raises(ConfigError, match="a cascade does not learn"):
        c.learn("the disk is full", "INCIDENT")
    with pytest.raises(ConfigError, match="no experience memory"):  # as the strong router answers
        c.record_lesson("device logs", "get_system_logs", use=True)
