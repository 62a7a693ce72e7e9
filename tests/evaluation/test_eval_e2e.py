"""End-to-end `routecore eval` / `fit` on a 10-label slice of CLINC150 with the
bundled model, plus the dataset bad-input cases."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import DATASETS, ROOT, need_shared
from routecore import Encoder, Router
from routecore.errors import DatasetError
from routecore.evaluation import datasets as D


@pytest.fixture(scope="module")
def clinc_slice(tmp_path_factory):
    src = need_shared(DATASETS / "clinc150")
    d = tmp_path_factory.mktemp("clinc10")
    labels = None
    for split, per in (("train", 30), ("val", 8), ("test", 12)):
        rows = [json.loads(l) for l in (src / f"{split}.jsonl").read_text().splitlines()]
        if labels is None:
            labels = sorted({r["label"] for r in rows if r["label"] != "oos"})[:10]
        keep, count = [], {}
        for r in rows:
            lab = r["label"]
            if (lab in labels or lab == "oos") and count.get(lab, 0) < per:
                keep.append(r)
                count[lab] = count.get(lab, 0) + 1
        (d / f"{split}.jsonl").write_text("\n".join(json.dumps(r) for r in keep) + "\n")
    return d


def run(*args):
    p = subprocess.run(
        [sys.executable, "-m", "routecore", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    return p


def test_fit_then_eval_writes_consistent_report(tmp_path, clinc_slice):
    bundle = tmp_path / "bundle"
    fitted = json.loads(
        run(
            "fit",
            "--train",
            clinc_slice / "train.jsonl",
            "--val",
            clinc_slice / "val.jsonl",
            "--objective",
            "macro_f1",
            "--out",
            bundle,
            "--json",
        ).stdout
    )
    assert 0 < fitted["min_score"] < 1 and (bundle / "bundle.json").is_file()
    out = tmp_path / "report"
    res = json.loads(
        run("eval", "--bundle", bundle, "--data", clinc_slice / "test.jsonl", "--out", out, "--json").stdout
    )
    for f in (
        "results.json",
        "report.md",
        "predictions.jsonl",
        "confusion.png",
        "reliability.png",
        "coverage.png",
    ):
        assert (out / f).is_file(), f
    n = res["n"]
    assert n == 10 * 12 + 12
    assert sum(sum(r) for r in res["confusion"]) == n
    assert 0.5 < res["in_scope_accuracy"] <= 1 and 0 <= res["oos"]["f1"] <= 1
    assert res["latency_ms"]["p50"] <= res["latency_ms"]["p95"] <= res["latency_ms"]["p99"]
    preds = [json.loads(l) for l in (out / "predictions.jsonl").read_text().splitlines()]
    acc = sum((p["pred"] or "oos") == p["label"] for p in preds) / n
    assert acc == pytest.approx(res["accuracy"])
    assert res["fit"]["objective"] == "macro_f1"
    # fit reports the decisions the router makes on validation, at its routed-precision target.
    v = fitted["decisions"]
    assert v["target_precision"] == 0.9 and 0 < v["routed_share"] <= 1 and 0 <= v["medium"] <= 1
    # Every eval shows the cost of the decision layer beside the raw top-1 accuracy.
    d = res["decisions"]
    assert set(d) == {
        "routed_share",
        "routed_accuracy",
        "confident_wrong_rate",
        "clarify_rate",
        "none_rate",
        "raw_top1_accuracy",
        "dense_top1_accuracy",
    }
    assert d["routed_share"] + d["clarify_rate"] + d["none_rate"] == pytest.approx(1.0)
    assert d["none_rate"] == pytest.approx(sum(p["action"] == "none" for p in preds) / n)
    routed = [p for p in preds if p["action"] == "route"]
    assert d["routed_share"] == pytest.approx(len(routed) / n)
    assert d["routed_accuracy"] == pytest.approx(sum(p["pred"] == p["label"] for p in routed) / len(routed))
    assert d["clarify_rate"] == pytest.approx(sum(p["action"] == "clarify" for p in preds) / n)
    assert 0.5 < d["raw_top1_accuracy"] <= 1 and res["calibrated"] == "fitted"


def test_eval_builds_the_router_a_config_gets(tmp_path, clinc_slice):
    """No fit: the calibration a config gets (the model's decision prior), and low tier -> clarify
    (no LLM), as Router.from_config."""
    res = json.loads(
        run(
            "eval", "--train", clinc_slice / "train.jsonl", "--data", clinc_slice / "test.jsonl", "--json"
        ).stdout
    )
    assert res["calibrated"] == "prior"  # the bundled model's decision prior (routecore.calibrate.prior)
    assert res["decisions"]["routed_accuracy"] > 0.8


def test_eval_from_train_takes_the_exemplar_head_unless_told(tmp_path, clinc_slice):
    args = ("eval", "--train", clinc_slice / "train.jsonl", "--data", clinc_slice / "test.jsonl", "--json")
    head, cosine = (json.loads(run(*args, *extra).stdout) for extra in ((), ("--no-head",)))
    assert head["in_scope_accuracy"] > 0.5 and cosine["in_scope_accuracy"] > 0.5
    assert head["decisions"] != cosine["decisions"]


def test_fit_cuts_the_default_exemplar_head_unless_told(tmp_path, clinc_slice):
    """fit calibrates the router a config gets (the exemplar head): its out-of-scope cut and its
    tiers on the head's own probabilities; --no-head calibrates the cosine softmax."""
    args = ("fit", "--train", clinc_slice / "train.jsonl", "--val", clinc_slice / "val.jsonl", "--json")
    head = json.loads(run(*args, "--out", tmp_path / "h").stdout)
    cosine = json.loads(run(*args, "--no-head", "--out", tmp_path / "c").stdout)
    assert (
        head["head_threshold"] is not None
        and cosine["head_threshold"] is None
        and cosine["head_tiers"] is None
    )
    back = Router.load(tmp_path / "h", encoder=Encoder.load())
    assert back.head is not None and back.calibrated == "fitted"
    if head["head_tiers"]:
        assert back.policy.high == pytest.approx(head["head_tiers"]["high"])


def test_fit_with_head_reports_the_heads_decisions(tmp_path, clinc_slice):
    out = json.loads(
        run(
            "fit",
            "--train",
            clinc_slice / "train.jsonl",
            "--val",
            clinc_slice / "val.jsonl",
            "--head",
            "--out",
            tmp_path / "b",
            "--json",
        ).stdout
    )
    assert out["head_threshold"] is not None and out["decisions"]["routed_share"] > 0


def test_tool_selection_eval(tmp_path):
    root = need_shared(DATASETS / "metatool")
    cat = [json.loads(l) for l in (root / "tools.jsonl").read_text().splitlines()][:20]
    names = {c["name"] for c in cat}
    qs = [json.loads(l) for l in (root / "single_tool.jsonl").read_text().splitlines()]
    qs = [q for q in qs if q["tools"][0] in names][:40]
    (tmp_path / "tools.jsonl").write_text("\n".join(json.dumps(c) for c in cat))
    (tmp_path / "q.jsonl").write_text("\n".join(json.dumps(q) for q in qs))
    res = json.loads(
        run("eval", "--tools", tmp_path / "tools.jsonl", "--data", tmp_path / "q.jsonl", "--json").stdout
    )
    assert res["n"] == 40 and res["recall@1"] <= res["recall@3"] <= res["recall@5"] and 0 < res["mrr"] <= 1


def test_dataset_bad_input_names_the_line(tmp_path, clinc_slice):
    with pytest.raises(DatasetError, match="not found"):
        D.load_routes(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a", "label": "x"}\n{oops\n')
    with pytest.raises(DatasetError, match=r"bad.jsonl:2: malformed"):
        D.load_routes(bad)
    bad.write_text('{"text": "a"}\n')
    with pytest.raises(DatasetError, match=r":1: needs"):
        D.load_routes(bad)
    bad.write_text('{"text": "a", "label": 3}\n')
    with pytest.raises(DatasetError, match=r":1: needs a string 'text' and a 'label'"):
        D.load_routes(bad)
    oos = tmp_path / "oos.jsonl"
    oos.write_text('{"text": "a", "label": null}\n{"text": "b", "label": "x"}\n')  # null: out of scope
    assert [s.label for s in D.load_routes(oos).samples] == ["oos", "x"]
    assert [s.label for s in D.load_routes(oos, oos_label="none").samples] == ["none", "x"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DatasetError, match="empty"):
        D.load_routes(empty)
    dup = tmp_path / "tools.jsonl"
    dup.write_text('{"name": "a"}\n{"name": "b"}\n{"name": "a"}\n')
    with pytest.raises(DatasetError, match=r":3: duplicate tool name 'a' \(first on line 1\)"):
        D.load_tool_catalog(dup)
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"text": "hello", "label": "no_such_route"}\n')
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "routecore",
            "eval",
            "--train",
            str(clinc_slice / "train.jsonl"),
            "--data",
            str(unknown),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    # Under --json the error is a JSON object on stdout.
    err = json.loads(p.stdout)["error"]
    assert (
        p.returncode == 2
        and err["type"] == "DatasetError"
        and "unknown.jsonl:1: label 'no_such_route'" in err["message"]
    )


def test_shared_loaders():
    need_shared(DATASETS)
    assert len(D.clinc150("val")) == 3100
    assert len(D.banking77("test")) == 3080
    assert D.massive("fr-FR", "dev").samples[0].language == "fr-FR"
    q, tools = D.metatool()
    assert len(tools) == 199 and len(q) == 20614


def test_fit_without_oos_rows_keeps_the_zero_label_cut(tmp_path, clinc_slice):
    """A validation split with no out-of-scope rows cannot place min_score (it would sit at
    its lowest in-scope score): the zero-label cut, fitted against the background, stays."""
    from routecore.evaluation import runner as R

    val = tmp_path / "val.jsonl"
    val.write_text(
        "".join(l + "\n" for l in (clinc_slice / "val.jsonl").read_text().splitlines() if '"oos"' not in l)
    )
    router = R.build_router(D.load_routes(clinc_slice / "train.jsonl"), Encoder.load())
    zero = router.calibration.min_score
    R.fit_router(router, D.load_routes(val))
    assert router.calibrated == "fitted" and router.policy.min_score == zero and not router.policy.per_route
