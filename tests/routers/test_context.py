"""Context layers: one encode, several heads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routecore.errors import ConfigError, InvalidArgumentError
from routecore.examples import __file__ as examples
from routecore.routers.context import ContextRouter
from routecore.routers.context_result import Context, ContextTimings

CONTEXT = Path(examples).parent / "context.yaml"


@pytest.fixture(scope="module")
def cr(encoder):
    return ContextRouter.from_config(CONTEXT, encoder=encoder)


def test_every_layer_from_one_encode(cr, encoder):
    assert list(cr.layers) == ["intent", "urgency", "sensitivity", "domain"]
    calls = []
    real = cr.encoder.encode_with_stats
    cr.encoder = type(
        "Spy",
        (),
        {"encode_with_stats": lambda self, t: calls.append(t) or real(t), "model_id": encoder.model_id},
    )()
    try:
        ctx = cr.detect(
            "urgent: production is down, the Kafka cluster INC20481234 crashed, customers cannot pay"
        )
    finally:
        cr.encoder = encoder
    assert len(calls) == 1  # one encode for four layers
    assert ctx.label("urgency") == "high" and ctx.label("domain") == "infrastructure"
    assert {e.kind for e in ctx.entities} == {"service", "incident_id"}
    t = ctx.timings
    assert set(t.layers) == {"intent", "urgency", "sensitivity", "domain"}
    assert t.encode > 0 and t.scoring > 0 and t.total >= t.encode + t.scoring + sum(t.layers.values())
    for r in ctx.layers.values():
        assert r.decision is not None and 0.0 <= r.probability <= 1.0 and r.tier in ("high", "medium", "low")
    assert json.loads(json.dumps(ctx.to_dict()))["layers"]["urgency"]["label"] == "high"
    back = Context.from_dict(json.loads(json.dumps(ctx.to_dict())))
    assert back.timings == t
    # each layer's reason survives JSON (its decision does not)
    assert {n: r.reason for n, r in back.layers.items()} == {
        n: r.decision.reason for n, r in ctx.layers.items()
    }
    assert all(r.reason is not None and r.decision is None for r in back.layers.values())
    # the flat timings of earlier versions: a layer's time beside the stages'
    flat = {"encode": 1.0, "scoring": 2.0, "intent": 0.5, "total": 4.0}
    assert ContextTimings.from_dict(flat) == ContextTimings(1.0, 2.0, 4.0, {"intent": 0.5})
    for bad in ({"total": "soon"}, {"layers": {"intent": "x"}}, ["total"]):
        with pytest.raises(InvalidArgumentError, match="context"):
            Context.from_dict({**ctx.to_dict(), "timings": bad})
    with pytest.raises(KeyError, match="layers"):
        ctx.label("mood")
    with pytest.raises(InvalidArgumentError, match="'mood'"):  # the contract's error (UnknownLayerError)
        ctx.label("mood")


def test_one_native_call_scores_every_layer_and_decides_as_route_does(cr, encoder, monkeypatch):
    from routecore import _native
    from routecore.decide import tables

    calls = []
    real = _native.score_many
    monkeypatch.setattr(tables._native, "score_many", lambda *a: calls.append(len(a[0])) or real(*a))
    queries = [
        "urgent: production is down, the Kafka cluster INC20481234 crashed",
        "can you review my pull request when you have time",
        "write a poem about autumn",
        "my social security number is 078-05-1120, update my file",
    ]
    for query in queries:
        ctx = cr.detect(query)
        q = encoder.encode([query])[0]
        for name, router in cr.layers.items():
            d, ref = ctx.layers[name].decision, router.route(query, vector=q)
            assert (d.action, d.route, d.tier, d.alerts) == (ref.action, ref.route, ref.tier, ref.alerts)
            assert d.confidence == pytest.approx(ref.confidence, abs=1e-6)
            assert dict(d.probabilities) == pytest.approx(dict(ref.probabilities), abs=1e-6)
            assert ctx.layers[name].reason == d.reason  # a layer says why as its decision does
    assert calls == [len(cr.layers)] * len(queries)  # one call per query, every layer in it


def test_score_many_checks_its_arguments(cr, encoder):
    from routecore import _native
    from routecore.errors import DimensionMismatchError, InvalidArgumentError

    ix = [r.route_table.table.index._impl for r in cr.layers.values()]
    q = encoder.encode(["hello"])[0]
    p = _native.StepParams()
    assert _native.score_many([], q, [], []) == []
    with pytest.raises(InvalidArgumentError):
        _native.score_many(ix, q, [p], [None])
    with pytest.raises(DimensionMismatchError):
        _native.score_many(ix[:1], q[:10], [p], [None])
    other = _native.FlatIndex(8)
    with pytest.raises(DimensionMismatchError):
        _native.score_many([ix[0], other], q, [p, p], [None, None])


def test_layers_decide_what_they_should(cr):
    assert cr.detect("please translate this paragraph into Spanish").label("intent") == "transform"
    assert cr.detect("why does my build fail with a segmentation fault").label("intent") == "debug"
    assert cr.detect("give me the home address and salary of this employee").label("sensitivity") == "pii"
    assert cr.detect("j'ai été facturé deux fois ce mois-ci").label("domain") == "billing"


def test_bad_context_configs(tmp_path, encoder):
    bad = tmp_path / "c.yaml"
    bad.write_text("layers:\n  domain: {utterances: [x]}\n")
    with pytest.raises(ConfigError, match="layers.*unknown field `utterances`"):
        ContextRouter.from_config(bad, encoder=encoder)
    bad.write_text("layer: {}\n")
    with pytest.raises(ConfigError, match="unknown keys \\['layer'\\]"):
        ContextRouter.from_config(bad, encoder=encoder)
    with pytest.raises(ConfigError, match="at least one layer"):
        ContextRouter({})
    # a layer may be named as a stage of the timings: its time is kept apart from the stages'
    layer = next(iter(ContextRouter.from_config(CONTEXT, encoder=encoder).layers.values()))
    named = ContextRouter({"total": layer})
    t = named.detect("the VPN is down").timings
    assert set(t.layers) == {"total"} and t.total >= t.encode + t.layers["total"]
    only = ContextRouter.from_config(CONTEXT, encoder=encoder, defaults=False)
    assert list(only.layers) == ["domain"]


def test_tools_search_from_a_context(cr, encoder):
    from routecore import Router
    from routecore.errors import InvalidArgumentError
    from routecore.examples import LLM_TOOLS

    q = "show me the logs of the Kafka brokers since INC20481234 was opened"
    ctx = cr.detect(q)
    text = ctx.search_text()
    # intent and domain labels (when decided), the entities' values, then the task.
    assert text.endswith(f"task: {q}") and "entities: " in text
    assert "INC20481234" in text.split("task:")[0] and "Kafka" in text.split("task:")[0]
    tools = Router.from_config(LLM_TOOLS, encoder=encoder)
    spied = []
    real = tools.tool_catalog.encoder.encode_with_stats
    tools.tool_catalog.encoder = type(
        "Spy",
        (),
        {
            "encode_with_stats": lambda self, t, **kw: spied.append(t) or real(t, **kw),
            "model_id": encoder.model_id,
            "dim": encoder.dim,
        },
    )()
    try:
        belt = tools.tools(q, context=ctx)
    finally:
        tools.tool_catalog.encoder = encoder
    assert spied == [[text]] and belt.names  # the search embeds the context's text
    assert tools.tools(q, context=ctx).names == tools.tools(text).names
    with pytest.raises(InvalidArgumentError, match="not both"):
        tools.tools(q, context=ctx, vector=encoder.encode([q])[0])
    plain = cr.detect("hello there")  # nothing decided, no entity: the query as it is
    if all(r.label is None for n, r in plain.layers.items() if n in ("intent", "domain")):
        assert plain.search_text() == "hello there"


def test_default_layers_say_which_are_exhaustive(cr):
    assert cr.exhaustive == {"urgency", "sensitivity"}  # intent (default) and domain (context.yaml) are open


def test_an_exhaustive_layer_always_names_one_of_its_labels(cr):
    """Urgency and sensitivity have no "out of scope": a query the layer's decision declines
    still gets its most probable label, at that decision's tier, and says so."""
    q = "when you have a minute, could you tidy the wording of this README"
    ctx = cr.detect(q)
    layers = {
        "urgency": ["low", "medium", "high"],
        "sensitivity": ["public", "internal", "pii", "safety_critical"],
    }
    for name, labels in layers.items():
        r, d = ctx.layers[name], ctx.layers[name].decision
        assert r.label in labels and r.action == "route", (name, r)
        assert r.tier == d.tier and r.probability == pytest.approx(d.probabilities[r.label])
        if d.action == "route":
            assert r.label == d.route and r.declined is None
        else:  # declined by the decision: the best label by probability, and an alert that says so
            assert r.declined == d.action
            assert d.probabilities[r.label] == max(d.probabilities[n] for n in labels)
            alert = next(a for a in r.alerts if a.kind == "exhaustive")
            want = {"layer": name, "declined": d.action, "label": r.label, "probability": r.probability}
            assert alert.data == want
            assert d.route != r.label  # the decision itself is left as the layer's router made it
    out = json.loads(json.dumps(ctx.to_dict()))["layers"]
    assert out["urgency"]["label"] == ctx.label("urgency")
    assert out["urgency"]["declined"] == ctx.layers["urgency"].declined


def test_an_open_layer_may_still_decline(cr):
    ctx = cr.detect("what's a good pasta recipe")
    domain = ctx.layers["domain"]
    assert domain.label is None and domain.action in ("none", "clarify") and domain.declined is None
    assert domain.action == domain.decision.action and not any(a.kind == "exhaustive" for a in domain.alerts)
    assert ctx.label("urgency") is not None and ctx.label("sensitivity") is not None  # exhaustive: named


def test_open_is_set_per_layer_in_the_config(tmp_path, encoder):
    cfg = tmp_path / "c.yaml"
    text = CONTEXT.read_text(encoding="utf-8").replace("  domain:\n", "  domain:\n    open: false\n")
    cfg.write_text(text, encoding="utf-8")
    closed = ContextRouter.from_config(cfg, encoder=encoder, defaults=False)
    assert closed.exhaustive == {"domain"}
    r = closed.detect("what's a good pasta recipe").layers["domain"]
    assert r.label in ("billing", "infrastructure", "people") and r.declined in ("none", "clarify")
    cfg.write_text(
        "layers:\n  domain:\n    open: 'no'\n    routes: [{name: a, utterances: [x]}]\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="open"):
        ContextRouter.from_config(cfg, encoder=encoder, defaults=False)
    with pytest.raises(ConfigError, match="exhaustive layers \\['mood'\\] are not layers"):
        ContextRouter(closed.layers, exhaustive=["mood"])


def test_batch_and_async_take_the_query_vectors_as_detect_does(cr, encoder):
    """``detect_batch(vectors=)``, ``adetect(vector=)`` and ``adetect_batch(vectors=)``, as
    ``Router.route_batch(vectors=)`` and ``aroute(vector=)``: the encoder is not called and each
    context is the one ``detect(query, vector=)`` gives."""
    import asyncio

    from routecore.errors import DimensionMismatchError

    qs = ["urgent: production is down, the Kafka cluster crashed", "", "please review my pull request"]
    X = encoder.encode_with_stats([q or "-" for q in qs]).embeddings
    want = [cr.detect(q, vector=x) for q, x in zip(qs, X)]
    real, calls = cr.encoder.encode_with_stats, []
    cr.encoder = type(
        "Spy",
        (),
        {"encode_with_stats": lambda self, t: calls.append(t) or real(t), "model_id": encoder.model_id},
    )()
    cr.encoder.dim = encoder.dim
    try:
        got = cr.detect_batch(qs, vectors=X)
        one = asyncio.run(cr.adetect(qs[0], vector=X[0]))
        many = asyncio.run(cr.adetect_batch(qs, vectors=X))
        with pytest.raises(DimensionMismatchError):
            cr.detect_batch(qs, vectors=X[:2])
    finally:
        cr.encoder = encoder
    assert calls == []
    for ctxs in (got, many):
        assert [c.layers for c in ctxs] == [c.layers for c in want]
    assert one.layers == want[0].layers
    assert got[1].reason is not None and got[1].reason.code == "empty_query"
    assert got[0].label("urgency") == cr.detect(qs[0]).label("urgency")
