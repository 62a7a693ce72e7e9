"""Tool-selection evaluation on benchmark shapes (issue 14): per-row candidates (with
names shared across rows), rows where no tool fits, rows that need several tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from routecore.config.specs import RouteSpec, ToolSpec
from routecore.errors import DatasetError
from routecore.evaluation import datasets as D
from routecore.evaluation import metrics as M
from routecore.evaluation.tool_eval import evaluate_tools, rows_catalog
from routecore.routers.router import Router
from stubs import StubEncoder, manual, mix, unit

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "tests" / "data" / "tool_shapes.jsonl"
CATALOG = [
    {"name": "get_weather", "description": "Weather forecast for a city"},
    {"name": "search_flights", "description": "Search flights between two airports"},
    {"name": "book_hotel", "description": "Book a hotel room"},
]


def test_rows_define_their_own_tools_and_names_may_repeat_with_other_descriptions():
    data = D.load_tool_queries(SHAPES)
    catalog, rows = rows_catalog(data, CATALOG)
    names = [t["name"] for t in catalog]
    assert names == ["get_weather", "search_flights", "book_hotel", "search", "lookup", "search#2", "weather"]
    assert rows.candidates[:3] == [None, None, None]
    assert rows.candidates[3] == ["get_weather", "search_flights"]
    assert rows.candidates[4] == ["search", "lookup"] and rows.candidates[5] == ["search#2", "weather"]
    assert rows.candidates[6] == ["search"]  # same name and description as row 5's: one entry, embedded once
    assert rows.gold == [
        ["get_weather"],
        ["search_flights", "book_hotel"],
        [],
        ["get_weather"],
        ["search"],
        ["search#2"],
        [],
    ]


@pytest.mark.parametrize(
    "line,match",
    [
        (
            '{"query": "q", "tools": ["a"], "candidates": ["b"]}',
            r"gold tools \['a'\] are not among the row's candidates",
        ),
        ('{"query": "q", "tools": [], "candidates": [{"description": "no name"}]}', "a candidate must be"),
        ('{"query": "q", "tools": [], "candidates": "a"}', "must be a list"),
        ('{"query": "q", "tools": [""]}', "a list of tool names"),
        ('{"query": "q", "tools": [], "candidates": ["a", "a"]}', "duplicate candidate"),
    ],
)
def test_bad_rows_name_their_line(tmp_path, line, match):
    p = tmp_path / "q.jsonl"
    p.write_text('{"query": "ok", "tools": []}\n' + line + "\n")
    with pytest.raises(DatasetError, match=rf"q.jsonl:2: .*{match}"):
        D.load_tool_queries(p)


def test_a_candidate_missing_from_the_tools_file_is_a_dataset_error(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_text('{"query": "q", "tools": ["nope"], "candidates": ["nope"]}\n')
    with pytest.raises(DatasetError, match="candidate 'nope' is not in the tools file"):
        rows_catalog(D.load_tool_queries(p), CATALOG)


def test_metrics_of_each_shape_on_crafted_vectors():
    enc = StubEncoder(
        {
            "w": unit(0),
            "f": unit(1),
            "h": unit(2),
            "weather?": mix(a0=0.9),
            "trip?": mix(a1=0.7, a2=0.65),
            "joke?": mix(a3=0.9),
            "rain?": mix(a0=0.8, a1=0.1),
        }
    )
    r = Router(
        tools=[ToolSpec("get_weather", "w"), ToolSpec("search_flights", "f"), ToolSpec("book_hotel", "h")],
        encoder=enc,
        policy=manual(tool_threshold=0.5),
    )
    rows = [
        D.ToolSample("weather?", ("get_weather",)),
        D.ToolSample("trip?", ("search_flights", "book_hotel")),
        D.ToolSample("joke?", ()),
        D.ToolSample("rain?", ("search_flights",), candidates=("search_flights", "book_hotel")),
    ]
    data = D.Dataset("crafted", rows)
    res = evaluate_tools(
        r, data, rows=rows_catalog(data, [{"name": n, "description": ""} for n in r.tool_catalog.by_name])[1]
    )
    assert (res.n_relevant, res.n_no_tool, res.n_multi) == (3, 1, 1)
    assert res.recall[1] == pytest.approx((1 + 0.5 + 1) / 3)  # rain? may only pick among its candidates
    assert res.all_gold[1] == 0.0 and res.all_gold[3] == 1.0 and res.all_gold_in_belt == 1.0
    assert res.no_tool_recall == 1.0  # joke? scores under the floor everywhere
    assert res.no_tool_precision == 0.5  # rain? (0.1 to search_flights) is also under it
    assert res.no_tool_on_relevant == pytest.approx(1 / 3)
    assert res.auroc_top_score == 1.0  # rain?'s best candidate (0.1) still beats joke?'s best tool (0.0)


def test_auroc():
    assert M.auroc([3, 4], [1, 2]) == 1.0 and M.auroc([1], [2]) == 0.0
    assert M.auroc([1, 2], [1, 2]) == 0.5 and M.auroc([], [1]) is None
    rng = np.random.default_rng(0)
    pos, neg = rng.normal(1, 1, 300), rng.normal(0, 1, 200)
    brute = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
    assert M.auroc(pos, neg) == pytest.approx(brute)


def _eval(tmp_path, *args):
    env = {**os.environ, "ROUTECORE_HOME": str(tmp_path / "home")}
    p = subprocess.run(
        [sys.executable, "-m", "routecore", "eval", *map(str, args), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_cli_evaluates_every_shape_with_the_real_encoder(tmp_path):
    rows_only = tmp_path / "rows.jsonl"
    rows_only.write_text(
        "\n".join(line for line in SHAPES.read_text().splitlines() if '"candidates": [{' in line) + "\n"
    )
    res = _eval(tmp_path, "--tools-in-rows", "--data", rows_only)
    assert res["n"] == 3 and res["n_no_tool"] == 1 and res["recall@1"] == 1.0
    assert set(res) >= {"no_tool_precision", "no_tool_recall", "auroc_top_score", "latency_ms"}
    cat = tmp_path / "cat.jsonl"
    cat.write_text("\n".join(map(json.dumps, CATALOG)))
    res = _eval(tmp_path, "--tools", cat, "--data", SHAPES)
    assert (res["n"], res["n_relevant"], res["n_no_tool"], res["n_multi"]) == (7, 5, 2, 1)
    assert res["recall@5"] == 1.0 and 0 <= res["auroc_top_score"] <= 1


def test_fit_tools_writes_a_fitted_bundle(tmp_path):
    cat = tmp_path / "cat.jsonl"
    cat.write_text("\n".join(map(json.dumps, CATALOG)))
    env = {**os.environ, "ROUTECORE_HOME": str(tmp_path / "home")}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "routecore",
            "fit",
            "--tools",
            str(cat),
            "--val",
            str(SHAPES),
            "--out",
            str(tmp_path / "b"),
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert (
        out["val_rows"] == 2 and out["tool_lexical_weight"] >= 0
    )  # the rows with gold tools from the whole catalog
    from routecore import Encoder

    r = Router.load(tmp_path / "b", encoder=Encoder.load())
    assert r.calibrated == "fitted" and r.policy.tool_lexical_weight == out["tool_lexical_weight"]
    # `eval --bundle` on tool rows evaluates the fitted bundle's own catalog.
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"query": "will it rain in Lyon tomorrow", "tools": ["get_weather"]}\n'
        '{"query": "a room for two nights in Rome", "tools": ["book_hotel"]}\n'
    )
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "routecore",
            "eval",
            "--bundle",
            str(tmp_path / "b"),
            "--data",
            str(rows),
            "--json",
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["n"] == 2 and res["recall@5"] == 1.0
    # The stemmer and BM25 b chosen with the weight are the saved index's and the calibration's.
    assert out["tool_lexical_stemmer"] in ("none", "english", "french") and set(out["forms_val_top1"]) >= {
        "none/0.75",
        "english/0",
    }
    index = r.tool_catalog.lexical.index
    assert (index.stemmer, index.b) == (out["tool_lexical_stemmer"], out["tool_lexical_b"])
    assert (r.calibration.tool_lexical_stemmer, r.calibration.tool_lexical_b) == (index.stemmer, index.b)


def test_a_calibration_with_a_stemmer_rebuilds_the_tools_lexical_table_and_bundles_keep_it(
    tmp_path, tools_router
):
    from dataclasses import replace

    from routecore import Encoder
    from routecore.calibrate.calibration import Calibration
    from routecore.errors import ConfigError
    from routecore.examples import TOOLS

    r = Router.from_config(TOOLS, encoder=tools_router.encoder)
    assert r.tool_catalog.lexical.index.stemmer == "none"
    r.calibrate(replace(r.calibration, source="fitted", tool_lexical_stemmer="english", tool_lexical_b=0.25))
    index = r.tool_catalog.lexical.index
    assert (index.stemmer, index.b) == ("english", 0.25)
    r.save(tmp_path / "b")
    back = Router.load(tmp_path / "b", encoder=Encoder.load())
    assert (back.tool_catalog.lexical.index.stemmer, back.tool_catalog.lexical.index.b) == ("english", 0.25)
    q = "show me the journald entries of the api unit"
    assert dict(back.tools(q).scores) == pytest.approx(dict(r.tools(q).scores), abs=1e-5)
    # A live update keeps the fitted calibration, so the new table is stemmed alike.
    r.add_tools([ToolSpec(name="restart_unit", description="Restart a systemd unit")])
    assert (r.tool_catalog.lexical.index.stemmer, r.tool_catalog.lexical.index.b) == ("english", 0.25)
    with pytest.raises(ConfigError, match="tool_lexical_stemmer must be one of"):
        Calibration.from_dict({**r.calibration.to_dict(), "tool_lexical_stemmer": "porter"})
    with pytest.raises(ConfigError, match="tool_lexical_b must be"):
        Calibration.from_dict({**r.calibration.to_dict(), "tool_lexical_b": 2})


def test_stemmers_set_in_the_policy_win_over_the_fit(tmp_path, encoder):
    from routecore.decide.policy import Policy
    from routecore.errors import ConfigError
    from routecore.evaluation.tool_eval import fit_tools

    tools = [ToolSpec(t["name"], t["description"]) for t in CATALOG]
    routes = [
        RouteSpec("weather", ("what is the forecast", "will it rain")),
        RouteSpec("travel", ("book flights", "find hotels")),
    ]
    r = Router(
        routes,
        tools,
        encoder=encoder,
        policy=Policy(head="off", lexical_stemmer="english", tool_lexical_stemmer="french"),
    )
    assert (
        r.route_table.lexical.index.stemmer == "english" and r.tool_catalog.lexical.index.stemmer == "french"
    )
    val = tmp_path / "val.jsonl"
    val.write_text(
        "".join(
            json.dumps({"query": q, "tools": [t]}) + "\n"
            for q, t in [
                ("forecasts for Paris", "get_weather"),
                ("searching flights to Oslo", "search_flights"),
                ("booking hotels", "book_hotel"),
            ]
        )
    )
    fitted = fit_tools(r, D.load_tool_queries(val))
    # Only the policy's stemmer was tried, and the calibration does not override it.
    assert fitted.stemmer == "french" and all(k.startswith("french/") for k in fitted.forms_val_top1)
    assert r.tool_catalog.lexical.index.stemmer == "french"
    with pytest.raises(ConfigError, match="lexical_stemmer"):
        Policy(lexical_stemmer="porter")  # type: ignore[arg-type]
