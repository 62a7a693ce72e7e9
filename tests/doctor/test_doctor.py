"""routecore doctor: injected faults are flagged, --fix writes a valid config without them,
--json is JSON, and bad input raises the CLI's RoutecoreError subclasses."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routecore import Router
from routecore.cli import main
from routecore.config.config_files import load_yaml as read_yaml
from routecore.config.specs import parse_config, read_config_file
from routecore.doctor.doctor import DoctorReport, apply_edits, diagnose, edited_text, write_config
from routecore.errors import ConfigError, DatasetError
from routecore.examples import IT_OPS_ROUTES
from routecore.routers.routing_metrics import RoutingMetrics

MOVED = "the payment service is very slow right now"  # an INCIDENT exemplar, put in RAG
DUPLICATE = "The production server is down!"  # repeats INCIDENT's "the production server is down"
GENERIC = "what is your favourite movie"  # chit-chat, put in RAG


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """The IT-ops example's routes with a moved exemplar, a near-duplicate and a generic exemplar."""
    routes = {r["name"]: list(r["utterances"]) for r in read_config_file(IT_OPS_ROUTES)["routes"]}
    routes["INCIDENT"].remove(MOVED)
    routes["RAG"] += [MOVED, GENERIC]
    routes["INCIDENT"].append(DUPLICATE)
    path = tmp_path_factory.mktemp("doctor") / "faulty.yaml"
    write_config({"routes": [{"name": n, "utterances": u} for n, u in routes.items()]}, path)
    return path


@pytest.fixture(scope="module")
def report(faulty, encoder):
    return diagnose(faulty, encoder=encoder)


def test_each_injected_fault_is_flagged(report):
    by_text = {m.exemplar.text: m for m in report.misfits}
    assert by_text[MOVED].kind == "misplaced" and by_text[MOVED].exemplar.route == "RAG"
    assert by_text[MOVED].to == "INCIDENT" and by_text[MOVED].nearest_route == "INCIDENT"
    assert by_text[MOVED].gap * report.cuts.temperature >= report.cuts.misfit_gap  # the numbers say why
    assert by_text[GENERIC].kind == "generic" and by_text[GENERIC].to is None
    assert [(d.drop.text, d.keep.text) for d in report.duplicates] == [
        (DUPLICATE, "the production server is down")
    ]
    edits = {(e.action, e.route, e.text, e.to) for e in report.edits}
    assert {
        ("move", "RAG", MOVED, "INCIDENT"),
        ("drop", "RAG", GENERIC, None),
        ("drop", "INCIDENT", DUPLICATE, None),
    } <= edits
    assert report.calibration.source == "prior" and report.cuts.temperature > 0
    assert any(MOVED in s for s in report.suggestions)


def test_fix_writes_a_config_without_the_faults(faulty, report, tmp_path):
    out = tmp_path / "fixed.yaml"
    write_config(apply_edits(read_config_file(faulty), report.edits), out)
    routes = {r.name: r.utterances for r in parse_config(read_config_file(out), str(out))[0]}
    assert MOVED in routes["INCIDENT"] and MOVED not in routes["RAG"]
    assert GENERIC not in routes["RAG"] and DUPLICATE not in routes["INCIDENT"]
    assert "the production server is down" in routes["INCIDENT"]  # the kept copy


def test_clean_example_has_no_misplaced_exemplar(it_ops_router):
    r = diagnose(it_ops_router)
    assert isinstance(r, DoctorReport) and r.routes == 3 and r.exemplars == 48
    assert not [m for m in r.misfits if m.kind == "misplaced"] and not r.duplicates
    assert not r.thin_routes


def test_edits_of_another_config_are_refused(report):
    doc = read_config_file(IT_OPS_ROUTES)  # the clean file: its RAG holds neither MOVED nor GENERIC there
    with pytest.raises(ConfigError, match="not in this config"):
        apply_edits(doc, report.edits)


def test_cli_json_is_valid_json_and_fix_reports_its_changes(faulty, tmp_path, capsys):
    out = tmp_path / "fixed.yaml"
    assert main(["doctor", str(faulty), "--json", "--fix", str(out)]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["fix"]["path"] == str(out) and d["fix"]["moves"] >= 1 and d["fix"]["drops"] >= 2
    assert {m["exemplar"]["text"] for m in d["misfits"]} >= {MOVED, GENERIC}
    parse_config(read_config_file(out), str(out))


def test_fix_keeps_the_configs_comments_and_layout(faulty, report, tmp_path, capsys):
    """--fix edits the lines of a hand-written YAML config: its comments, keys and quoting stay; what
    it reads as is what apply_edits gives."""
    routes = read_config_file(faulty)["routes"]
    lines = ["# my IT assistant", "routes:"]
    for r in routes:
        lines += [f"  - name: {r['name']}   # a route", "    utterances:"]
        lines += [f"      - {json.dumps(u)}  # said by ops" for u in r["utterances"]]
    src = tmp_path / "commented.yaml"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "fixed.yaml"
    assert main(["doctor", str(src), "--json", "--fix", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# my IT assistant\nroutes:\n") and "# a route" in text and "# said by ops" in text
    assert read_config_file(out) == apply_edits(read_config_file(src), report.edits)
    assert f"      - {json.dumps(MOVED)}\n" in text and GENERIC not in text  # moved to INCIDENT, dropped
    flow = "routes:\n" + "".join(
        f"  - {{name: {r['name']}, utterances: {json.dumps(r['utterances'])}}}\n" for r in routes
    )
    fixed = apply_edits(read_config_file(faulty), report.edits)
    assert edited_text(flow, report.edits, fixed) is None  # a flow list: written anew by write_config


def test_cli_human_output_has_examples_and_numbers(faulty, capsys):
    assert main(["doctor", str(faulty)]) == 0
    text = capsys.readouterr().out
    assert MOVED in text and "-> INCIDENT" in text and "near-duplicates: 1" in text and " T" in text


def test_data_and_log_sections(faulty, encoder, tmp_path):
    data = tmp_path / "labelled.jsonl"
    rows = [
        ("the VPN is down for everyone", "INCIDENT"),
        ("how do I rotate the Kafka credentials", "RAG"),
        ("what is the capital of France", "oos"),
    ]
    data.write_text(
        "".join(json.dumps({"text": t, "label": lab}) + "\n" for t, lab in rows), encoding="utf-8"
    )
    router = Router.from_config(faulty, encoder=encoder)
    log = tmp_path / "decisions.jsonl"
    with RoutingMetrics(log=log) as m:
        for q in ("the website is very slow", "where is the backup runbook"):
            m.feedback(m.record(router.route(q)), route="INCIDENT")
    r = diagnose(router, data, log)
    assert r.data.rows == 3 and r.data.in_scope == 2 and r.data.out_of_scope == 1
    assert {a.route for a in r.data.routes} == {"INCIDENT", "RAG"}
    assert r.log.decisions == 2 and r.log.with_feedback == 2
    assert r.log.fell_out == sum(f.fell for f in r.log.routes)
    json.dumps(r.to_dict())


@pytest.mark.parametrize(
    "content, match",
    [
        (None, "cannot read"),
        ("- just\n- a list\n", "expected a mapping"),
        ("tools:\n  - name: t\n    description: d\n", "no routes"),
    ],
)
def test_bad_input_raises_config_error(tmp_path, encoder, content, match):
    path = tmp_path / "cfg.yaml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=match):
        diagnose(path, encoder=encoder)


def test_bad_data_and_log_files(faulty, encoder, tmp_path):
    with pytest.raises(DatasetError):
        diagnose(faulty, tmp_path / "missing.jsonl", encoder=encoder)
    bad = tmp_path / "log.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        diagnose(faulty, log=bad, encoder=encoder)


def test_cli_bad_input_is_one_error_line(tmp_path, capsys):
    assert main(["doctor", str(tmp_path / "missing.yaml"), "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["type"] == "ConfigError" and "missing.yaml" in err["message"]


@settings(max_examples=60, deadline=None)
@given(
    utts=st.lists(
        st.lists(
            st.text(alphabet=[*"ab :#-é", "'", '"', "\\"], min_size=1, max_size=8).filter(str.strip),
            min_size=1,
            max_size=4,
        ),
        min_size=2,
        max_size=3,
    ),
    picks=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.booleans()), max_size=3),
)
def test_edited_text_reads_as_the_edited_document_or_gives_way(utts, picks):
    """Whatever the utterances (quotes, colons, '#'), the edited lines read as apply_edits' document, or
    edited_text declines (None) and write_config writes the document anew."""
    from routecore.doctor.doctor import Edit

    names = [f"R{i}" for i in range(len(utts))]
    lines = ["routes:  # c"]
    for n, us in zip(names, utts):
        lines += [f"  - name: {n}", "    utterances:"] + [f"      - {json.dumps(u)}  # x" for u in us]
    source = "\n".join(lines) + "\n"
    doc = {"routes": [{"name": n, "utterances": list(us)} for n, us in zip(names, utts)]}
    edits, seen = [], set()
    for r, i, move in picks:
        if r < len(utts) and i < len(utts[r]) and (r, i) not in seen:
            seen.add((r, i))
            to = names[(r + 1) % len(names)] if move else None
            edits.append(Edit("move" if move else "drop", names[r], i, utts[r][i], to, "test"))
    fixed = apply_edits(doc, edits)
    text = edited_text(source, edits, fixed)
    assert text is None or (read_yaml(text) == fixed and text.startswith("routes:  # c\n"))
