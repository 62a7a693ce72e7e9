"""The command line: every command, --json and --help."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT


def run(*args, check=True, env=None):
    p = subprocess.run(
        [sys.executable, "-m", "routecore", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=None if env is None else {**os.environ, **env},
    )
    if check:
        assert p.returncode == 0, p.stderr
    return p


def test_route_json_default_config():
    out = json.loads(run("route", "--json", "le serveur est en panne").stdout)
    assert out["route"] == "INCIDENT" and out["tier"] == "high" and "timings" in out


def test_route_with_previous_and_text_output():
    p = run(
        "route", "--config", "examples/it_ops_routes.yaml", "--previous", "RAG", "how do I configure the VPN"
    )
    assert "route: RAG" in p.stdout


def test_route_reads_a_follow_up_after_the_previous_turn(tmp_path):
    cfg = tmp_path / "assistant.yaml"
    cfg.write_text(
        "routes:\n"
        "  - name: weather\n    utterances: [what's the weather today, will it rain tomorrow,"
        " how hot is it outside, weather forecast for the weekend, is it going to snow in Berlin]\n"
        "  - name: music\n    utterances: [play some jazz, put on my workout playlist, skip this song,"
        " turn the music up, play the latest Taylor Swift album]\n"
    )
    args = ("route", "--config", str(cfg), "--json")
    assert json.loads(run(*args, "and tomorrow?").stdout)["action"] == "none"
    out = json.loads(
        run(*args, "--previous-query", "what's the weather like in Lyon", "and tomorrow?").stdout
    )
    assert (out["route"], out["reason"]["code"], out["tier"]) == ("weather", "follow_up", "medium")


SUPPORT = """routes:
  - name: CARD_LOST
    label: a lost or stolen card
    utterances: [I lost my card, my credit card was stolen, please block my card,
                 I can't find my debit card anywhere, someone took my wallet with my card in it,
                 freeze my card right now]
  - name: BILLING
    label: a billing question
    utterances: [why was my card charged twice, my invoice is wrong, update my payment method,
                 there is a charge I don't recognize, how much is my monthly subscription,
                 change the card used for billing]
  - name: REFUND
    label: a refund
    utterances: [I want my money back, how do I get a refund, refund this item please,
                 I'd like to return my order, when will I receive my refund,
                 "the product arrived broken, I want a refund"]
"""


def test_route_reads_the_answer_to_a_clarification(tmp_path):
    cfg = tmp_path / "support.yaml"
    cfg.write_text(SUPPORT)
    asked = "I was charged 49.99 but I cancelled"
    first = json.loads(run("route", "--config", str(cfg), "--json", asked).stdout)
    assert first["action"] == "clarify" and "BILLING" in first["candidates"]
    text = run("route", "--config", str(cfg), "--json", "--clarified", asked, "a refund").stdout
    out = json.loads(text, parse_constant=_no_constant)  # strict JSON: the routes not offered score null
    assert (out["route"], out["tier"]) == ("REFUND", "medium") and "the answer names REFUND" in out["reason"][
        "message"
    ]
    offered = set(first["candidates"])
    assert all((v is None) == (k not in offered) for k, v in out["adjusted_scores"].items()) and offered != {
        *out["adjusted_scores"]
    }
    p = run("route", "--config", str(cfg), "--clarified", "I lost my card", "the first one", check=False)
    assert p.returncode == 2 and "was not clarified (route)" in p.stderr
    p = run("route", "--config", str(cfg), "--json", "--clarified", "I lost my card", "x", check=False)
    err = json.loads(p.stdout)["error"]
    assert p.returncode == 2 and err["type"] == "InvalidArgumentError" and "not clarified" in err["message"]


def _no_constant(name: str) -> None:
    raise AssertionError(f"not JSON: {name}")


def test_tools_json_shows_collision():
    out = json.loads(run("tools", "--config", "examples/tools.yaml", "--json", "device logs").stdout)
    assert out["collision"] and "ha_get_logs" in out["system_prompt_alert"]
    # --context-domain is repeatable, as for route: the active domains' tools get the affinity boost
    args = ("tools", "--config", "examples/tools.yaml", "--json", "device logs")
    both = json.loads(run(*args, "--context-domain", "system", "--context-domain", "home_automation").stdout)
    assert both["tools"] and both["tools"] != out["tools"]
    # the call's candidates and floor, as Router.tools takes them
    only = json.loads(run(*args, "--candidate", "get_system_logs", "--candidate", "list_services").stdout)
    assert (
        set(only["names"]) <= {"search_docs", "get_system_logs", "list_services"}
        and "get_system_logs" in only["names"]
    )
    high = json.loads(run(*args, "--threshold", "0.99").stdout)
    assert high["no_tool"] and "0.990" in high["reason"]["message"]


def test_models_list_json():
    rows = json.loads(run("models", "list", "--json").stdout)
    assert rows[0]["status"] == "bundled"


@pytest.mark.parametrize("cmd", [[], ["route"], ["tools"], ["models"], ["eval"], ["fit"]])
def test_help(cmd):
    assert "usage" in run(*cmd, "--help").stdout


def test_errors_are_reported_not_raised(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("routes: [\n")
    p = run("route", "--config", str(bad), "x", check=False)
    assert p.returncode == 2 and "malformed YAML" in p.stderr
    p = run("route", "--previous", "NOPE", "x", check=False)
    assert p.returncode == 2 and "unknown previous route" in p.stderr


def test_errors_are_one_line_or_a_json_object(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("routes: [\n")
    p = run("route", "--config", str(bad), "--json", "x", check=False)
    err = json.loads(p.stdout)["error"]
    assert p.returncode == 2 and err["type"] == "ConfigError" and "malformed YAML" in err["message"]
    p = run("route", "--config", str(bad), "x", check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    blocker = (
        tmp_path / "a-file"
    )  # an output folder that cannot be made (read-only paths alike; tests run as root)
    blocker.write_text("")
    data = ROOT / "tests" / "data" / "it_ops_heldout.jsonl"
    p = run(
        "eval",
        "--config",
        "examples/it_ops_routes.yaml",
        "--data",
        str(data),
        "--out",
        str(blocker / "report"),
        "--no-progress",
        check=False,
    )
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.startswith("routecore: error:")


def test_version():
    from routecore import __version__

    assert run("--version").stdout.strip() == f"routecore {__version__}"


def test_usage_errors_under_json_are_json_on_stdout():
    p = run("route", "--json", check=False)
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["type"] == "UsageError"
    p = run("route", check=False)
    assert p.returncode == 2 and "usage:" in p.stderr and p.stdout == ""


def test_route_prints_the_best_five_unless_all(tmp_path):
    cfg = tmp_path / "many.yaml"
    cfg.write_text(
        "routes:\n"
        + "".join(f"  - name: R{i}\n    utterances: [topic number {i} question]\n" for i in range(8)),
        encoding="utf-8",
    )
    short = run("route", "--config", str(cfg), "topic number 3 question").stdout

    def routes(out: str) -> int:  # route lines (the "none of these" line is the head's out-of-scope share)
        return sum(" p=" in line and "none of these" not in line for line in out.splitlines())

    assert routes(short) == 5 and "3 more routes (--all shows them)" in short
    assert routes(run("route", "--config", str(cfg), "--all", "topic number 3 question").stdout) == 8


def test_a_second_call_reuses_the_embedded_config(tmp_path):
    import os

    env_home = tmp_path / "home"
    cfg = tmp_path / "routes.yaml"
    cfg.write_text(
        "routes:\n  - name: A\n    utterances: [reset my password]\n"
        "  - name: B\n    utterances: [the VPN is down]\n",
        encoding="utf-8",
    )

    def call(*extra):
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "routecore",
                "route",
                "--json",
                "--config",
                str(cfg),
                *extra,
                # Near B's exemplar: "my vpn is broken" is a coin toss for a head trained on one exemplar a
                # route (B on ONNX Runtime 1.31, a clarification on 1.19, whose embeddings differ by 0.002).
                "the VPN is down again",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "ROUTECORE_HOME": str(env_home)},
        )
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    first = call("--no-cache")
    assert not (env_home / "configs").exists()  # --no-cache writes nothing
    second, third = call(), call()
    (bundle,) = (env_home / "configs").iterdir()
    assert (bundle / "bundle.json").is_file()
    assert first["route"] == second["route"] == third["route"] == "B" and first[
        "confidence"
    ] == pytest.approx(third["confidence"], abs=1e-6)
    cfg.write_text(cfg.read_text() + "  - name: C\n    utterances: [printer jam]\n", encoding="utf-8")
    assert (
        "C" in call()["probabilities"] and len(list((env_home / "configs").iterdir())) == 2
    )  # a changed config is a new entry


def test_a_non_utf8_argument_is_routed_with_an_alert_not_a_traceback():
    """Issue 36 §2: Python hands undecodable argument bytes over as lone surrogates; the router
    removes them."""
    p = subprocess.run(
        [sys.executable, "-m", "routecore", "route", "--json", b"le serveur est en panne \xff\xfe"],
        capture_output=True,
        timeout=300,
        cwd=ROOT,
    )
    assert p.returncode == 0 and b"Traceback" not in p.stderr, p.stderr
    d = json.loads(p.stdout)
    assert d["action"] == "route" and any(a["kind"] == "invalid_text" for a in d["alerts"])


@pytest.mark.parametrize("flag", ["--data", "--log"])
def test_eval_names_the_line_of_a_file_that_is_not_utf8(tmp_path, flag):
    """Issue 36 §8: eval --data / --log printed a UnicodeDecodeError traceback."""
    f = tmp_path / "rows.jsonl"
    f.write_bytes(b'{"text": "hello", "label": "GENERAL"}\n' if flag == "--data" else b"")
    with f.open("ab") as out:
        out.write(b'{"text": "caf\xe9", "label": "GENERAL"}\n')  # Latin-1, not UTF-8
    line = 2 if flag == "--data" else 1
    p = run("eval", "--config", "examples/it_ops_routes.yaml", flag, str(f), check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert f"rows.jsonl:{line}: not UTF-8 text" in p.stderr


def test_a_reader_that_leaves_ends_the_call_quietly():
    """``routecore route ... | head -1``: the pipe closes before the output is written; the call ends
    with 141 (128 + SIGPIPE), as cat does, and prints neither an error nor a traceback."""
    p = subprocess.Popen(
        [sys.executable, "-m", "routecore", "route", "--all", "le serveur est en panne"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=300) == 141 and err == b"", err


def test_route_with_a_fast_model_in_front(tmp_path):
    """``--fast-model``: the config's router on MiniLM in front of e5's, as ``serve --fast-model``; the
    decision's cascade alert says which decided, the text output prints it; bad flags are typed errors."""
    from conftest import MODELS, need_shared

    minilm = str(need_shared(MODELS / "all-minilm-l6-v2"))
    home = {"ROUTECORE_HOME": str(tmp_path)}
    args = ("route", "--config", "examples/it_ops_routes.yaml", "--fast-model", minilm)
    out = json.loads(run(*args, "--json", "the production server is down", env=home).stdout)
    (alert,) = [a for a in out["alerts"] if a["kind"] == "cascade"]
    assert out["route"] == "INCIDENT" and alert["data"]["served_by"] in ("fast", "strong")
    assert "alert [cascade]" in run(*args, "le serveur est en panne", env=home).stdout
    for flags, words in (
        (("--static", "--fast-model", minilm), "give one"),
        (("--fast-model", minilm, "--bundle", str(tmp_path)), "--fast-model needs --config"),
        (("--static",), "routecore models distill"),
    ):
        p = run("route", *flags, "--json", "hello", check=False, env=home)
        assert p.returncode == 2 and words in json.loads(p.stdout)["error"]["message"], p.stdout
