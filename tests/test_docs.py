"""Every fenced code block of README.md and docs/*.md runs as written, from a temporary working
directory (issue 35 §6).

- ```python: each block is a script of its own, run in a fresh interpreter;
- ```yaml: a valid routecore config;
- ```bash / ```console: the block is run by bash, as written (only the two commands at the top of the
  README are not: they are what CI itself runs, see ``CI_RUNS_THESE``);
- ``` (no language): a command synopsis; every ``routecore <command>`` it names exists, and every
  ``--option`` it shows for it is in that command's ``--help``.

The blocks run in a sandbox: a fresh ``HOME`` and ``TMPDIR`` under pytest's temporary folder, the
remote endpoints pointed at a closed 127.0.0.1 port, and ``tests/docs_sandbox/sitecustomize.py``
loaded into every Python process a block starts (an audit hook that fails the process on a write
outside the sandbox or a connection to anything but loopback).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from routecore.config.specs import parse_config
from routecore.decide.policy import Policy

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)[ ]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.MULTILINE | re.DOTALL
)
KINDS = {"python", "yaml", "bash", "console", ""}
#: The README's first two blocks install the package and run the whole test suite. CI runs them on a
#: fresh machine (.ci/run): the second verbatim; the first's route command on the release wheel it
#: builds (its `pip install .` builds that wheel), checking that the query routes to INCIDENT. So this
#: test does not run them a second time.
CI_RUNS_THESE = (
    'pip install . && routecore route "le serveur de production est en panne depuis ce matin"',
    "pip install -e '.[test]' && bash scripts/test.sh",
)
SANDBOX_HOOK = Path(__file__).parent / "docs_sandbox"
TIMEOUT = 300


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks() -> list[Block]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            indent = m["indent"]
            lines = [ln[len(indent) :] if ln.startswith(indent) else ln for ln in m["body"].splitlines()]
            out.append(
                Block(page.name, text.count("\n", 0, m.start()) + 1, m["lang"], "\n".join(lines) + "\n")
            )
    return out


BLOCKS = _blocks()


def _of(*langs: str) -> list:
    chosen = [b for b in BLOCKS if b.lang in langs]
    return [pytest.param(b, id=b.id) for b in chosen]


@pytest.fixture
def sandbox(tmp_path):
    """(working directory, environment) of a docs block: nothing outside ``tmp_path`` is written."""
    home, tmp, work = tmp_path / "home", tmp_path / "tmp", tmp_path / "work"
    for d in (home, tmp, work):
        d.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ROUTECORE_HOME", "ROUTECORE_NO_CACHE", "HF_", "XDG_", "PYTHON"))
        and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    env.update(
        HOME=str(home),
        TMPDIR=str(tmp),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(SANDBOX_HOOK),
        PYTHONDONTWRITEBYTECODE="1",
        ROUTECORE_DOCS_SANDBOX=str(tmp_path),
        # nothing may be downloaded: remote endpoints are a closed loopback port, the cache offline
        ROUTECORE_HUB_ENDPOINT="http://127.0.0.1:9",
        HF_ENDPOINT="http://127.0.0.1:9",
        HF_HUB_OFFLINE="1",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    return work, env


def _run(args, work, env, timeout=TIMEOUT):
    """Run ``args`` in its own process group, then kill what it left in the background (a server
    started with ``&``); its output goes to files, which a background process may hold open."""
    out_f, err_f = work.parent / "stdout", work.parent / "stderr"
    with open(out_f, "w") as out, open(err_f, "w") as err:
        p = subprocess.Popen(args, cwd=work, env=env, stdout=out, stderr=err, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    return rc, out_f.read_text(), err_f.read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_every_block_is_of_a_kind_this_test_runs():
    assert {b.lang for b in BLOCKS} <= KINDS, [(b.id, b.lang) for b in BLOCKS if b.lang not in KINDS]
    for kind in ("python", "yaml", "bash", ""):
        assert any(b.lang == kind for b in BLOCKS), kind
    for b in BLOCKS:
        if not b.lang:  # an unlabelled block is a command synopsis
            assert any(line.startswith("routecore ") for line in b.code.splitlines()), b.id
    # the page's fences pair up: no block swallowed the prose after it
    for page in PAGES:
        assert page.read_text(encoding="utf-8").count("```") == 2 * sum(b.page == page.name for b in BLOCKS)


def test_the_sandbox_refuses_writes_outside_it_and_downloads(sandbox, tmp_path):
    work, env = sandbox
    outside = ROOT / "docs" / "written-by-a-docs-block.txt"
    code = (
        "import pathlib, urllib.request\n"
        "pathlib.Path('inside.txt').write_text('ok')\n"
        "for attempt in (lambda: pathlib.Path(%r).write_text('no'),\n"
        "                lambda: urllib.request.urlopen('https://example.org', timeout=5)):\n"
        "    try:\n"
        "        attempt()\n"
        "    except Exception:\n"
        "        pass\n" % str(outside)
    )
    rc, _, err = _run([sys.executable, "-c", code], work, env)
    assert rc == 97, err
    assert "write outside the sandbox" in err and "name lookup of 'example.org'" in err
    assert not outside.exists()
    assert (work / "inside.txt").read_text() == "ok"


@pytest.mark.parametrize("block", _of("python"))
def test_a_python_block_runs(block, sandbox):
    work, env = sandbox
    script = work.parent / "block.py"
    script.write_text(block.code, encoding="utf-8")
    rc, out, err = _run([sys.executable, str(script)], work, env)
    assert rc == 0, f"{block.id}\n{block.code}\n--- stdout\n{out}\n--- stderr\n{err}"


@pytest.mark.parametrize("block", _of("yaml"))
def test_a_yaml_config_block_parses(block):
    data = yaml.safe_load(block.code)
    routes, tools = parse_config(data, block.page)
    assert routes or tools
    Policy.from_dict(data.get("policy"), f"{block.id}: policy")


def _commands(code: str) -> list[str]:
    """The block's command lines, continuation lines joined, comments kept."""
    return [c for c in code.replace("\\\n", " ").splitlines() if c.strip() and not c.lstrip().startswith("#")]


@pytest.mark.parametrize("block", _of("bash", "console"))
def test_a_shell_block_runs(block, sandbox):
    commands = _commands(block.code)
    if set(commands) <= set(CI_RUNS_THESE):
        assert block.page == "README.md" and block.line < 20  # the top of the README, nothing else
        return
    assert not set(commands) & set(CI_RUNS_THESE), block.id
    assert any(c.startswith("routecore ") for c in commands), block.id
    work, env = sandbox
    env["PORT"] = str(_free_port())  # a block that starts a server listens on ${PORT:-...}
    script = work.parent / "block.sh"
    script.write_text("set -euo pipefail\n" + block.code, encoding="utf-8")
    rc, out, err = _run(["bash", str(script)], work, env)
    assert rc == 0, f"{block.id}\n{block.code}\n--- stdout\n{out}\n--- stderr\n{err}"
    assert out.strip(), err
    # a server answered each curl (curl prints the JSON bodies back to back), and with no error
    answers = _json_objects(out)
    assert len(answers) >= sum(c.lstrip().startswith("curl ") for c in commands), out
    assert [o for o in answers if "error" in o or o.get("action") == "error"] == []
    assert [o for o in answers if "tools" in o and not o["tools"]] == []  # a belt shown is not empty


def _json_objects(text: str) -> list:
    objects, decoder, i = [], json.JSONDecoder(), 0
    while (i := text.find("{", i)) >= 0:
        try:
            o, i = decoder.raw_decode(text, i)
            objects.append(o)
        except json.JSONDecodeError:
            i += 1
    return objects


def test_ci_runs_the_readme_top_blocks():
    readme = [b for b in BLOCKS if b.page == "README.md" and b.lang == "bash"]
    assert [_commands(b.code) for b in readme[:2]] == [[c] for c in CI_RUNS_THESE]
    assert sum(bool(set(_commands(b.code)) & set(CI_RUNS_THESE)) for b in BLOCKS) == 2


def _synopsis() -> list[tuple[str, str, list[str]]]:
    """(block id, command, options) of every ``routecore <command>`` line of the synopsis blocks."""
    out: list[tuple[str, str, list[str]]] = []
    for b in BLOCKS:
        if b.lang:
            continue
        for line in b.code.splitlines():
            shown = line.split("#", 1)[0]
            m = re.match(r"routecore\s+(\w+)", shown)
            if m:
                out.append((b.id, m[1], re.findall(r"--[\w-]+", shown)))
            elif shown.strip() and out:  # a continuation line of the command above
                out[-1][2].extend(re.findall(r"--[\w-]+", shown))
    return out


SYNOPSIS = _synopsis()


@pytest.mark.parametrize("command", sorted({c for _, c, _ in SYNOPSIS}))
def test_a_synopsis_command_exists_with_its_options(command, sandbox):
    work, env = sandbox
    rc, out, err = _run(["routecore", command, "--help"], work, env, timeout=60)
    assert rc == 0, err
    assert out.startswith(f"usage: routecore {command}")
    shown = {o for _, c, opts in SYNOPSIS if c == command for o in opts}
    assert {o for o in shown if o not in out} == set()


def test_the_synopsis_names_every_command(sandbox):
    work, env = sandbox
    rc, out, _ = _run(["routecore", "--help"], work, env, timeout=60)
    assert rc == 0
    commands = set(re.search(r"\{([\w,]+)\}", out)[1].split(","))
    assert commands <= {c for _, c, _ in SYNOPSIS}


def test_the_readme_stays_within_300_lines_and_names_every_docs_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for link in re.findall(r"\]\(([\w/.-]+\.md)\)", text):
        assert (ROOT / link).is_file(), link
    assert [p.name for p in PAGES[1:] if f"docs/{p.name}" not in text] == []


def test_benchmarks_stay_within_500_lines_with_numbered_sections_in_order():
    # Issue 35 §7: a reference, not a session log (its history is in git); sections 1, 2, 3... and their
    # subsections n.1, n.2... in order, none lettered or left unnumbered after the methodology.
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 500
    sections = re.findall(r"^## (.*)$", text, re.MULTILINE)
    assert sections[0] == "Methodology"
    numbers = [re.match(r"(\d+)\. ", s) for s in sections[1:]]
    assert all(numbers) and [int(m[1]) for m in numbers if m] == list(range(1, len(sections)))
    for n in range(1, len(sections)):
        body = re.split(r"^## ", text, flags=re.MULTILINE)[n + 1]
        subs = [int(k) for k in re.findall(rf"^### {n}\.(\d+) ", body, re.MULTILINE)]
        assert subs == list(range(1, len(subs) + 1)) and len(subs) == body.count("\n### "), (n, subs)
