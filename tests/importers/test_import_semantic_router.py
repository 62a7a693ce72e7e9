"""Import of semantic-router route configs (routecore.importers.semantic_router).

Fixtures in tests/data/semantic_router/:

- ``sr1_*``: written by semantic-router 1.1.1 itself (``make_files.py``, its
  ``router.to_json`` / ``to_yaml``); ``test_regenerated_files`` writes them again with
  the installed semantic-router and checks they convert the same.
- ``sr0_router_config.json``: hand-written in the 0.1.x layout, from
  aurelio-labs/semantic-router ``semantic_router/routers/base.py`` (``RouterConfig.to_dict``
  / ``to_file``: ``json.dump(..., indent=4)`` of ``{encoder_type, encoder_name, routes}``)
  and ``semantic_router/route.py`` (``Route.to_dict``: ``name, utterances, description,
  function_schemas, llm {module, class, model}, score_threshold, metadata``).
- ``sr0_layer_config.yaml``: hand-written in the 0.0.x layout, from
  ``semantic_router/layer.py`` (``LayerConfig.to_file``: ``yaml.safe_dump`` with sorted
  keys) and the 0.0.x ``Route`` (one ``function_schema`` as ``get_schema`` made it:
  ``name, description, signature, output``; no ``metadata``).
- ``sr0_docs_example.json``: semantic-router's own documented example (its README: the
  ``politics`` and ``chitchat`` routes, five utterances each), as 0.1.x ``to_file`` writes it
  with its default ``HuggingFaceEncoder`` (all-MiniLM-L6-v2, ``score_threshold`` 0.5 on every
  route).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import missing
from routecore import Router
from routecore.config.specs import parse_config, read_config_file
from routecore.errors import ConfigError
from routecore.importers import router_from_semantic_router
from routecore.importers.semantic_router import (
    ImportNote,
    add_import_command,
    read_semantic_router,
    write_config,
)

# Reading a file with cosine thresholds notes that they were dropped; the tests that check the
# note catch it (pytest.warns), the others need not print it.
pytestmark = pytest.mark.filterwarnings("ignore::routecore.importers.semantic_router.ImportNote")

DATA = Path(__file__).resolve().parents[1] / "data" / "semantic_router"
DOCS = DATA / "sr0_docs_example.json"
SINGLE = [
    "sr1_indexed.json",
    "sr1_indexed.yaml",
    "sr1_decision.yaml",
    "sr0_router_config.json",
    "sr0_layer_config.yaml",
]
FILES = SINGLE + ["sr1_chain.json"]
COSINE = {"sr1_indexed.json", "sr1_indexed.yaml", "sr0_router_config.json", "sr0_layer_config.yaml"}


def raw(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)


@pytest.mark.parametrize("name", SINGLE)
def test_single_router_files_keep_everything(name: str) -> None:
    src = raw(DATA / name)
    doc = read_semantic_router(DATA / name, thresholds=True)
    routes, _ = parse_config(doc, name)
    assert [r.name for r in routes] == [r["name"] for r in src["routes"]]
    layout = "1.x" if "router_type" in src else "0.x"
    key = "confidence_threshold" if layout == "1.x" else "score_threshold"
    for spec, out, r in zip(routes, doc["routes"], src["routes"]):
        assert list(spec.utterances) == (r["utterances"] or [])
        assert spec.description == (r["description"] or "")
        info = spec.metadata["semantic_router"]
        assert info["layout"] == layout
        assert {k: v for k, v in spec.metadata.items() if k != "semantic_router"} == (r.get("metadata") or {})
        assert info["router"] == {k: v for k, v in src.items() if k != "routes" and v is not None}
        assert info.get(key) == r[key]
        mapped = name in COSINE and r[key] is not None
        assert spec.thresholds.to_dict() == ({"min_score": r[key]} if mapped else {})
        if layout == "0.x":
            schemas = r.get("function_schemas") or (
                [r["function_schema"]] if r.get("function_schema") else None
            )
            assert info.get("function_schemas") == schemas
            assert info.get("llm") == r["llm"]
            assert "function_schema" not in info
        assert "thresholds" not in out or out["thresholds"] == {"min_score": r[key]}
    assert doc.get("policy") == (
        {"routes": {"min_score": src["confidence_threshold"]}} if name.startswith("sr1_indexed") else None
    )


def test_function_schemas_and_metadata() -> None:
    weather = read_semantic_router(DATA / "sr1_indexed.json")["routes"][0]
    fs = weather["metadata"]["function_schemas"][0]["function"]
    assert fs["name"] == "get_weather" and fs["parameters"]["required"] == ["city"]
    assert weather["metadata"]["owner"] == "tools-team"
    get_time = read_semantic_router(DATA / "sr0_router_config.json")["routes"][0]["metadata"]
    assert get_time["team"] == "scheduling"
    assert get_time["semantic_router"]["function_schemas"][0]["function"]["name"] == "get_time"
    assert get_time["semantic_router"]["llm"]["model"] == "gpt-4o-mini"
    old = read_semantic_router(DATA / "sr0_layer_config.yaml")["routes"][1]["metadata"]["semantic_router"]
    assert old["function_schemas"] == [raw(DATA / "sr0_layer_config.yaml")["routes"][1]["function_schema"]]


def test_json_and_yaml_of_one_router_agree() -> None:
    assert read_semantic_router(DATA / "sr1_indexed.json") == read_semantic_router(DATA / "sr1_indexed.yaml")


def test_chain_routes_are_merged_by_name() -> None:
    src = raw(DATA / "sr1_chain.json")
    doc = read_semantic_router(DATA / "sr1_chain.json")
    parse_config(doc, "chain")
    assert "policy" not in doc
    by = {r["name"]: r for r in doc["routes"]}
    assert list(by) == ["weather", "chitchat", "politics"]
    indexed = {r["name"]: r for r in src["routers"][0]["routes"]}
    for name, r in by.items():
        assert r["utterances"] == indexed[name]["utterances"]
        assert "thresholds" not in r  # a chain's confidences are not cosines
    assert by["chitchat"]["description"] == "Small talk."  # only the decision router describes it
    sources = by["weather"]["metadata"]["semantic_router"]["sources"]
    assert [(s["at"], s["confidence_threshold"]) for s in sources] == [
        ("routers[0].routes[0]", 0.42),
        ("routers[1].routes[0]", 0.7),
    ]
    assert by["weather"]["metadata"]["semantic_router"]["router"]["routers"][1]["model"]["type"] == "typesafe"


@pytest.mark.parametrize("name", SINGLE)
def test_thresholds_are_dropped_by_default_and_a_note_says_so(name: str) -> None:
    src = raw(DATA / name)
    key = "confidence_threshold" if "router_type" in src else "score_threshold"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = read_semantic_router(DATA / name)
    assert doc == read_semantic_router(DATA / name, thresholds=False)
    assert "policy" not in doc and all("thresholds" not in r for r in doc["routes"])
    for out, r in zip(doc["routes"], src["routes"]):
        assert out["metadata"]["semantic_router"].get(key) == r[key]  # kept where the user can find it
    notes = [str(w.message) for w in caught if issubclass(w.category, ImportNote)]
    if name in COSINE:  # a cosine floor was left out: one note names the file and what was dropped
        assert len(notes) == 1 and str(DATA / name) in notes[0] and "routecore calibrates its own" in notes[0]
        named = [r["name"] for r in src["routes"] if r[key] is not None]
        assert all(f"{key} " in notes[0] and n in notes[0] for n in named)
    else:  # probabilities, never mapped: nothing to say
        assert notes == []


def test_no_thresholds_keeps_them_in_metadata_only() -> None:
    dropped = r"confidence_threshold 0\.42 on weather;.*confidence_threshold 0\.3 on the router"
    with pytest.warns(ImportNote, match=dropped):
        doc = read_semantic_router(DATA / "sr1_indexed.json", thresholds=False)
    assert "policy" not in doc and all("thresholds" not in r for r in doc["routes"])
    assert doc["routes"][0]["metadata"]["semantic_router"]["confidence_threshold"] == 0.42
    assert doc["routes"][0]["metadata"]["semantic_router"]["router"]["confidence_threshold"] == 0.3


def test_docs_example_default_drops_the_cosine_floor() -> None:
    with pytest.warns(ImportNote, match=r"score_threshold 0\.5 on politics, chitchat\).*thresholds=True"):
        doc = read_semantic_router(DOCS)
    assert [r["name"] for r in doc["routes"]] == ["politics", "chitchat"]
    assert "policy" not in doc and all("thresholds" not in r for r in doc["routes"])
    assert all(r["metadata"]["semantic_router"]["score_threshold"] == 0.5 for r in doc["routes"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImportNote)  # the opt-in keeps them as they are, with nothing to note
        kept = read_semantic_router(DOCS, thresholds=True)
    assert [r["thresholds"] for r in kept["routes"]] == [{"min_score": 0.5}, {"min_score": 0.5}]


def test_docs_example_routes_in_scope_and_declines_off_topic(encoder: Any) -> None:
    """semantic-router's README example, loaded as a user would: its 0.5 floor sat far below the
    bundled encoder's cosines (about 0.8 between unrelated sentences), so it routed everything;
    routecore's own calibration routes the politics question and declines the rest."""
    with pytest.warns(ImportNote):
        router = Router.from_semantic_router(DOCS, encoder=encoder)
    assert router.spec_policy.min_score is None and not router.route_table.policy.per_route
    d = router.route("don't you love politics?")  # the README's own query
    assert (d.action, d.route) == ("route", "politics"), d
    # The second is semantic-router's README's own query that no route matches.
    for off_topic in ("what's a good pasta recipe", "I'm interested in learning about llama 2"):
        d = router.route(off_topic)
        assert d.action in ("none", "clarify"), (off_topic, d.action, d.route, d.raw_scores)


@pytest.mark.parametrize(
    "change",
    [
        {"calibrator": {"method": "platt", "params": {"a": [8.0], "b": [-4.0]}}},
        {"sparse_encoder": {"type": "bm25", "name": "bm25"}},
    ],
)
def test_calibrated_or_hybrid_thresholds_are_not_cosines(tmp_path: Path, change: dict[str, Any]) -> None:
    p = tmp_path / "r.json"
    p.write_text(json.dumps({**raw(DATA / "sr1_indexed.json"), **change}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ImportNote)  # not cosine floors: nothing dropped to note
        doc = read_semantic_router(p, thresholds=True)
    assert "policy" not in doc and all("thresholds" not in r for r in doc["routes"])
    assert doc["routes"][0]["metadata"]["semantic_router"]["router"][next(iter(change))] == next(
        iter(change.values())
    )


def test_out_of_range_threshold_is_kept_but_not_mapped(tmp_path: Path) -> None:
    src = raw(DATA / "sr0_router_config.json")
    src["routes"][0]["score_threshold"] = 1.7
    p = tmp_path / "r.json"
    p.write_text(json.dumps(src))
    with pytest.warns(UserWarning, match="get_time.*not a cosine floor"):
        doc = read_semantic_router(p, thresholds=True)
    assert "thresholds" not in doc["routes"][0]
    assert doc["routes"][0]["metadata"]["semantic_router"]["score_threshold"] == 1.7


def test_own_semantic_router_metadata_key_is_kept(tmp_path: Path) -> None:
    src = raw(DATA / "sr0_router_config.json")
    src["routes"][1]["metadata"] = {"semantic_router": "mine"}
    p = tmp_path / "r.json"
    p.write_text(json.dumps(src))
    info = read_semantic_router(p)["routes"][1]["metadata"]["semantic_router"]
    assert info["metadata"] == {"semantic_router": "mine"} and info["layout"] == "0.x"


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip_through_a_routecore_config(tmp_path: Path, name: str, suffix: str) -> None:
    doc = read_semantic_router(DATA / name)
    out = write_config(doc, tmp_path / f"routes{suffix}")
    assert read_config_file(out) == doc
    parse_config(read_config_file(out), str(out))


def test_write_refuses_to_overwrite(tmp_path: Path) -> None:
    doc = read_semantic_router(DATA / "sr0_layer_config.yaml")
    out = write_config(doc, tmp_path / "routes.yml")
    out.write_text("keep me")
    with pytest.raises(ConfigError, match="exists.*force"):
        write_config(doc, out)
    assert out.read_text() == "keep me"
    write_config(doc, out, force=True)
    assert read_config_file(out) == doc


ROUTE = {"name": "a", "utterances": ["hello there"]}
BAD = [
    ("empty.json", "", "is empty"),
    ("blank.yaml", "\n  \n", "is empty"),
    ("null.yaml", "~\n", "expected a semantic-router config"),
    ("list.json", json.dumps([ROUTE]), "expected a semantic-router config.*list"),
    ("nokeys.json", json.dumps({"encoder_type": "openai"}), "no router_type.*no routes"),
    ("broken.json", '{"routes": [', "malformed JSON"),
    ("broken.yaml", "routes: [a, b", "malformed YAML"),
    ("noroutes.json", json.dumps({"encoder_type": "openai", "routes": []}), "routes: no routes"),
    ("routesmap.json", json.dumps({"routes": {"a": ["hi"]}}), "routes: expected a list"),
    (
        "noname.json",
        json.dumps({"routes": [ROUTE, {"utterances": ["hi"]}]}),
        r"routes\[1\]: name: expected a non-empty string",
    ),
    (
        "intname.yaml",
        "routes:\n- name: 7\n  utterances: [hi]\n",
        r"routes\[0\]: name: expected a non-empty string, found int",
    ),
    ("notroute.json", json.dumps({"routes": ["a"]}), r"routes\[0\]: expected a route mapping"),
    (
        "empty_route.json",
        json.dumps({"routes": [ROUTE, {"name": "b", "utterances": [], "description": None}]}),
        r"routes\[1\] \('b'\): has neither utterances nor a description",
    ),
    (
        "empty_route1.yaml",
        "router_type: decision\nmodel: {type: gliner2}\nroutes:\n- name: c\n",
        r"routes\[0\] \('c'\): has neither",
    ),
    (
        "utt_str.json",
        json.dumps({"routes": [{"name": "a", "utterances": "hi"}]}),
        r"\('a'\): utterances: expected a list",
    ),
    (
        "utt_img.json",
        json.dumps({"routes": [{"name": "a", "utterances": ["hi", [0.1, 0.2]]}]}),
        r"\('a'\): utterances\[1\]: expected text",
    ),
    (
        "desc.json",
        json.dumps({"routes": [{"name": "a", "utterances": ["hi"], "description": 3}]}),
        "description: expected a string",
    ),
    ("meta.json", json.dumps({"routes": [{**ROUTE, "metadata": ["x"]}]}), "metadata: expected a mapping"),
    (
        "th.json",
        json.dumps({"routes": [{**ROUTE, "score_threshold": "high"}]}),
        "score_threshold: expected a number",
    ),
    (
        "th_bool.json",
        json.dumps({"routes": [{**ROUTE, "score_threshold": True}]}),
        "score_threshold: expected a number",
    ),
    (
        "fs.json",
        json.dumps({"routes": [{**ROUTE, "function_schemas": "f"}]}),
        "function_schemas: expected a list of mappings",
    ),
    ("dup.json", json.dumps({"routes": [ROUTE, ROUTE]}), r"routes\[1\]: duplicate route name 'a'"),
    (
        "kind.json",
        json.dumps({"router_type": "semantic", "routes": [ROUTE]}),
        "router_type: expected one of indexed",
    ),
    ("chain.json", json.dumps({"router_type": "chain", "routers": []}), "routers: expected a non-empty list"),
    (
        "chain2.json",
        json.dumps({"router_type": "merge", "routers": [{"router_type": "indexed"}]}),
        r"routers\[0\]\.routes: no routes in the file",
    ),
    (
        "remote.json",
        json.dumps({"router_type": "indexed", "encoder": {"type": "openai"}, "index": {"type": "pinecone"}}),
        "'pinecone' index holds them",
    ),
    (
        "floor.json",
        json.dumps({"router_type": "indexed", "confidence_threshold": "x", "routes": [ROUTE]}),
        "confidence_threshold: expected a number",
    ),
]


@pytest.mark.parametrize("fname,text,message", BAD, ids=[b[0] for b in BAD])
def test_bad_files_raise_config_error_naming_the_file(
    tmp_path: Path, fname: str, text: str, message: str
) -> None:
    p = tmp_path / fname
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as e:
        read_semantic_router(p)
    assert str(p) in str(e.value)


def test_not_utf8_and_missing_file(tmp_path: Path) -> None:
    p = tmp_path / "latin1.yaml"
    p.write_bytes("routes:\n- name: caf\xe9\n  utterances: [hi]\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8") as e:
        read_semantic_router(p)
    assert str(p) in str(e.value)
    with pytest.raises(ConfigError, match="cannot read"):
        read_semantic_router(tmp_path / "missing.json")


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="routecore")
    add_import_command(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_cli_prints_yaml_or_json(capsys: pytest.CaptureFixture[str]) -> None:
    f = str(DATA / "sr1_indexed.yaml")
    expected = read_semantic_router(f)
    assert run_cli(["import", "semantic-router", f]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out) == expected and "policy" not in expected
    assert err.startswith("note: ") and "confidence_threshold 0.3 on the router" in err
    assert "--thresholds" in err
    assert run_cli(["import", "semantic-router", f, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == expected
    assert (
        run_cli(["import", "semantic-router", f, "--json", "--no-thresholds"]) == 0
    )  # the old flag, a no-op
    assert json.loads(capsys.readouterr().out) == expected
    assert run_cli(["import", "semantic-router", f, "--json", "--thresholds"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == read_semantic_router(f, thresholds=True)
    assert json.loads(out)["policy"] == {"routes": {"min_score": 0.3}}
    assert err == ""
    with pytest.raises(SystemExit):
        run_cli(["import", "rasa", f])


def test_cli_writes_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f, out = str(DATA / "sr0_router_config.json"), tmp_path / "routes.yaml"
    assert run_cli(["import", "semantic-router", f, "-o", str(out)]) == 0
    assert "wrote 3 routes" in capsys.readouterr().out
    assert read_config_file(out) == read_semantic_router(f)
    with pytest.raises(ConfigError, match="exists"):
        run_cli(["import", "semantic-router", f, "-o", str(out)])
    assert run_cli(["import", "semantic-router", f, "-o", str(out), "--force", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == read_config_file(out)


def test_regenerated_files(tmp_path: Path) -> None:
    """The committed fixtures are what the installed semantic-router writes today."""
    if importlib.util.find_spec("semantic_router") is None:
        missing("semantic-router is not installed (pip install 'routecore[peer]')")
    # a subprocess: the generator swaps the Cohere encoder's API calls for offline vectors
    subprocess.run(
        [sys.executable, str(DATA / "make_files.py"), str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == sorted(n for n in FILES if n.startswith("sr1_"))
    for name in made:
        assert raw(tmp_path / name) == raw(DATA / name), name
        assert read_semantic_router(tmp_path / name) == read_semantic_router(DATA / name)


def test_router_routes_a_query(encoder: Any) -> None:
    kept = router_from_semantic_router(DATA / "sr1_indexed.json", encoder=encoder, thresholds=True)
    assert kept.spec_policy.min_score == 0.3
    router = router_from_semantic_router(DATA / "sr1_indexed.json", encoder=encoder)
    assert router.spec_policy.min_score is None
    for r in (kept, router):
        d = r.route("will it rain in Paris tomorrow?")
        assert d.route == "weather" and d.action != "none"
