"""Hybrid scoring (issue 14): the lexical (BM25) score added to the cosine of routes and
tools, its fitted weight, and what decisions and belts report of it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from routecore.config.specs import RouteSpec, ToolSpec
from routecore.core.lexical import LexicalTable, fit_weight, stop_words
from routecore.decide.policy import Policy
from routecore.routers.router import Router
from stubs import StubEncoder, manual, mix, unit

ROOT = Path(__file__).resolve().parents[2]


def _routes(**policy):
    enc = StubEncoder(
        {
            "the Kafka cluster is down": unit(0),
            "the Oracle database is down": unit(1),
            "q": mix(a0=0.70, a1=0.71),
        }
    )  # densely, ORACLE is (barely) closer
    specs = [
        RouteSpec("KAFKA", ("the Kafka cluster is down",)),
        RouteSpec("ORACLE", ("the Oracle database is down",)),
    ]
    return Router(specs, encoder=enc, policy=manual(**policy))


def test_a_name_in_the_query_decides_between_two_close_routes():
    enc_q = "kafka cluster"
    r = _routes(lexical_weight=0.05)
    r.encoder.table[enc_q] = mix(a0=0.70, a1=0.71)
    d = r.route(enc_q)
    assert d.route == "KAFKA"
    assert d.lexical_scores["KAFKA"] == pytest.approx(0.05) and d.lexical_scores["ORACLE"] == 0.0
    # In another language than the exemplars, the words they do not hold dilute the match
    # (its coverage): an accidental shared word must not move labels like a real match.
    fr = "kafka ne répond plus"
    r.encoder.table[fr] = mix(a0=0.70, a1=0.71)
    assert 0 < r.route(fr).lexical_scores["KAFKA"] < 0.05 / 2
    assert d.raw_scores["KAFKA"] == pytest.approx(0.70, abs=1e-5)  # raw scores stay the cosines
    off = _routes(lexical_weight=0.0)
    off.encoder.table[enc_q] = mix(a0=0.70, a1=0.71)
    assert off.route(enc_q).route == "ORACLE" and off.route(enc_q).lexical_scores == {}


def test_lexical_false_builds_no_lexical_table():
    r = _routes(lexical=False, lexical_weight=0.05)
    assert r.route_table.lexical is None and r.route("q").lexical_scores == {}


def test_tool_names_are_split_and_matched():
    tools = [ToolSpec("ha_get_logs", "t1"), ToolSpec("get_system_logs", "t2")]
    enc = StubEncoder({"t1": unit(0), "t2": unit(1), "show the system logs": mix(a0=0.60, a1=0.59)})
    r = Router(tools=tools, encoder=enc, policy=manual(tool_lexical_weight=0.05))
    belt = r.tools("show the system logs", top_k=1)
    assert belt.names == ["get_system_logs"]
    assert (
        belt.tools[0].lexical_score > 0
        and belt.lexical_scores["get_system_logs"] > belt.lexical_scores["ha_get_logs"]
    )
    assert belt.raw_scores["get_system_logs"] == pytest.approx(0.59, abs=1e-5)


def test_the_stop_list_is_learnt_from_the_background():
    words = set(stop_words())
    assert {"what", "the", "how"} <= words and "kafka" not in words
    t = LexicalTable(["what is kafka", "what is oracle"], [0, 1], 2)
    assert t.scores("what").tolist() == [0.0, 0.0]  # a stop word alone matches nothing
    assert t.scores("kafka").tolist() == [1.0, 0.0]


def test_fit_weight_keeps_a_weight_only_when_it_helps_held_out_rows():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 5, 400)
    dense = rng.normal(0, 0.02, (400, 5)).astype(np.float32)
    dense[np.arange(400), gold] += 0.01  # weak dense signal
    lex = np.zeros((400, 5), np.float32)
    lex[np.arange(400), gold] = rng.random(400) < 0.5  # half the rows name their label
    w, stats = fit_weight(dense, lex, gold, scale=0.01)
    assert w > 0 and stats["lexical_heldout_accuracy_fused"] > stats["lexical_heldout_accuracy_dense"] + 0.1
    noise = (rng.random((400, 5)) < 0.2).astype(np.float32)
    assert fit_weight(dense, noise, gold, scale=0.01)[0] == 0.0


def test_explicit_weights_win_and_calibrations_carry_them(tmp_path):
    base = manual()
    values = {k: getattr(base, k) for k in ("temperature", "high", "margin", "medium", "min_score")}
    r = _routes(lexical_weight=0.02)
    assert r.policy.lexical_weight == 0.02
    r.save(tmp_path / "b")
    meta = json.loads((tmp_path / "b" / "bundle.json").read_text())
    assert meta["policy"]["hybrid"]["lexical_weight"] == 0.02 and meta["policy"]["hybrid"]["lexical"] is True
    assert Router.load(tmp_path / "b", encoder=r.encoder).policy.lexical_weight == 0.02
    assert values  # the manual policy's other numbers are untouched


def test_zero_label_fits_a_weight_on_the_example_config(encoder):
    r = Router.from_config(ROOT / "examples" / "tools.yaml", encoder=encoder)
    cal = r.calibration
    assert cal is not None and cal.tool_lexical_weight >= 0
    assert Policy().lexical_weight is None  # calibrated unless set


def _load(kind):
    rows = [
        json.loads(line)
        for line in (ROOT / "tests" / "data" / "lexical_queries.jsonl").read_text().splitlines()
    ]
    return [(r["query"], r["expected"]) for r in rows if r["config"] == kind]


@pytest.mark.parametrize("kind,config", [("routes", "it_ops_routes.yaml"), ("tools", "tools.yaml")])
def test_queries_with_ids_and_names_gain_and_none_loses(encoder, kind, config):
    """tests/data/lexical_queries.jsonl: 34 French/English queries with IDs, product and tool
    names, none an exemplar. With the lexical pass, no query that dense alone got right is lost."""
    router = Router.from_config(ROOT / "examples" / config, encoder=encoder)
    w = router.policy.lexical_weight if kind == "routes" else router.policy.tool_lexical_weight

    def best(router, q):
        if kind == "routes":
            d = router.route(q)
            return max(d.adjusted_scores, key=d.adjusted_scores.get)
        return next(iter(router.tools(q, top_k=1).scores))

    rows = _load(kind)
    with_lex = [best(router, q) == e for q, e in rows]
    router.policy = router.policy.with_overrides(lexical=False)
    without = [best(router, q) == e for q, e in rows]
    assert not any(b and not a for a, b in zip(with_lex, without)), [
        q for (q, _), a, b in zip(rows, with_lex, without) if b and not a
    ]
    assert sum(with_lex) >= sum(without) and (w == 0 or sum(with_lex) > sum(without))


def test_bundles_keep_the_lexical_tables_and_check_them(tmp_path):
    r = _routes(lexical_weight=0.05)
    r.encoder.table["kafka cluster"] = mix(a0=0.70, a1=0.71)
    r.save(tmp_path / "b")
    saved = sorted(p.name.split(".")[0] for p in (tmp_path / "b").glob("*.rlx"))
    assert saved == ["lexical_routes"]  # a routes-only router: no tools table
    back = Router.load(tmp_path / "b", encoder=r.encoder)
    assert back.route("kafka cluster").route == "KAFKA"
    # A lexical file from another bundle (same generation name, other documents) is refused by its hash.
    other = _routes(lexical_weight=0.05)
    other.route_table.lexical = LexicalTable(["x", "y", "z"], [0, 1, 1], 2)
    other.save(tmp_path / "o")
    mine = next((tmp_path / "b").glob("*.rlx"))
    mine.write_bytes(next((tmp_path / "o").glob("*.rlx")).read_bytes())
    from routecore.errors import ConfigError

    with pytest.raises(ConfigError, match="does not match bundle.json"):
        Router.load(tmp_path / "b", encoder=r.encoder)
    meta = json.loads((tmp_path / "b" / "bundle.json").read_text())
    meta["files"]["lexical_routes"]["sha256"] = __import__("hashlib").sha256(mine.read_bytes()).hexdigest()
    (tmp_path / "b" / "bundle.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="not the 2 exemplars"):
        Router.load(tmp_path / "b", encoder=r.encoder)
    mine.write_bytes(mine.read_bytes()[:-7])  # truncated, hash fixed: the native checks refuse it
    meta["files"]["lexical_routes"]["sha256"] = __import__("hashlib").sha256(mine.read_bytes()).hexdigest()
    (tmp_path / "b" / "bundle.json").write_text(json.dumps(meta))
    from routecore.errors import RoutecoreError

    with pytest.raises(RoutecoreError):
        Router.load(tmp_path / "b", encoder=r.encoder)


def test_fit_scores_the_decisions_route_makes_with_the_lexical_pass():
    from routecore.evaluation.decisions import decide_vectors

    q = "kafka cluster"
    r = _routes(lexical_weight=0.05)
    r.encoder.table[q] = mix(a0=0.70, a1=0.71)
    d = r.route(q)
    assert decide_vectors(r, r.encoder.encode_with_stats([q]).embeddings, [q]) == [
        (d.action, d.route, d.tier)
    ]
    assert d.route == "KAFKA"  # dense alone would say ORACLE
