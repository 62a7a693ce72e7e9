"""`models pull` that survives bad networks and bad hubs (issue 13 §3, issue 16 §3).

The Hugging Face cache and the known models' pins are tested in test_models.py.

Every test talks to :class:`fake_hub.Hub` on 127.0.0.1 and pulls a small made-up
model: LFS weights in ``onnx/`` and a plain-git ``tokenizer.json`` at the root.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from fake_hub import Hub, isolate
from routecore.errors import DownloadError, ModelError
from routecore.hub import models

REPO = "me/tiny"
WEIGHTS = np.random.default_rng(0).bytes(300_000)
TOKENIZER = json.dumps({"model": {"vocab": {f"w{i}": i for i in range(3000)}}}).encode()
FILES = {"onnx/model.onnx": WEIGHTS, "tokenizer.json": TOKENIZER}
SOURCE = models.ModelSource(REPO, "onnx", ("model.onnx", "/tokenizer.json"), {"dim": 4})
SHA = {n: hashlib.sha256(b).hexdigest() for n, b in FILES.items()}
GOOD = {
    "model.onnx": WEIGHTS,
    "tokenizer.json": TOKENIZER,
    "config.json": json.dumps({"dim": 4}, indent=2).encode(),
}


@pytest.fixture
def hub_env(tmp_path, monkeypatch):
    return isolate(tmp_path, monkeypatch)


@pytest.fixture
def target(hub_env, monkeypatch):
    monkeypatch.setitem(models.REGISTRY, "tiny", SOURCE)
    return hub_env / "models" / "tiny"


@pytest.fixture
def serve(target, monkeypatch):
    """``serve(**kw)`` starts a Hub of FILES (``files=`` adds or replaces some) and points the pull at it."""
    hubs: list[Hub] = []

    def make(files=None, **kw) -> Hub:
        hub = Hub({**FILES, **(files or {})}, REPO, **kw)
        monkeypatch.setenv(models.HUB_ENV, hub.url)
        hubs.append(hub)
        return hub

    yield make
    for h in hubs:
        h.close()


def pull(**kw):
    kw.setdefault("quiet", True)
    return models.pull("tiny", **kw)


def content(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def leftovers(target) -> list[str]:
    """Entries next to the model other than the model and its lock file."""
    return sorted(
        p.name for p in target.parent.iterdir() if p.name not in (target.name, f".{target.name}.lock")
    )


def tamper(b: bytes) -> bytes:
    return b[:-2] + bytes([b[-2] ^ 1]) + b[-1:]


# --- 1. sizes and checksums, checked before the model becomes visible -------------


@pytest.mark.parametrize("fault", ["short", "long"])
def test_plain_file_with_wrong_length_is_refused(serve, target, fault):
    """A truncated tokenizer.json with an honest Content-Length, or a Content-Length
    that disagrees with the listing, fails at once (no retry) and installs nothing."""
    hub = serve(faults={"tokenizer.json": [fault]})
    with pytest.raises(DownloadError, match="Content-Length"):
        pull()
    assert not target.exists() and leftovers(target) == []
    assert len(hub.gets("tokenizer.json")) == 1


def test_plain_file_cut_short_is_retried_then_refused(serve, target):
    hub = serve(faults={"tokenizer.json": ["drop"] * 9})
    with pytest.raises(
        DownloadError,
        match="failed after 3 attempts: .*connection closed after %d of %d bytes"
        % (len(TOKENIZER) // 2, len(TOKENIZER)),
    ):
        pull(retries=2)
    assert len(hub.gets("tokenizer.json")) == 3
    assert not target.exists() and leftovers(target) == []


def test_plain_file_cut_short_once_is_downloaded_again(serve, target):
    hub = serve(faults={"tokenizer.json": ["drop"]})
    assert content(pull()) == GOOD
    assert [h.get("Range") for h in hub.gets("tokenizer.json")] == [None, None]


def test_plain_file_of_right_size_but_wrong_bytes_fails_its_git_blob_id(serve, target):
    serve(served={"tokenizer.json": tamper(TOKENIZER)})
    with pytest.raises(DownloadError, match="checksum mismatch .*git blob id"):
        pull()
    assert not target.exists()


def test_lfs_file_with_wrong_bytes_fails_its_sha256(serve, target):
    serve(faults={"onnx/model.onnx": ["flip"]})
    with pytest.raises(DownloadError, match="checksum mismatch .*SHA-256"):
        pull()
    assert not target.exists() and leftovers(target) == []


def test_size_only_listing_still_catches_a_short_file(serve, target):
    """A listing with sizes but no hashes: the size alone refuses a truncated file."""
    rows = [{"type": "file", "path": "tokenizer.json", "size": len(TOKENIZER)}]
    serve(listing={"": json.dumps(rows).encode()}, faults={"tokenizer.json": ["drop"] * 5})
    with pytest.raises(DownloadError, match="of %d bytes" % len(TOKENIZER)):
        pull(retries=1)


@pytest.mark.parametrize(
    "bad",
    [
        {"faults": {"tokenizer.json": ["short"]}},
        {"served": {"tokenizer.json": tamper(TOKENIZER)}},
        {"faults": {"onnx/model.onnx": ["flip"]}},
        {"faults": {"tokenizer.json": ["404"]}},
    ],
)
def test_force_keeps_the_good_model_when_the_new_download_is_bad(serve, target, bad):
    serve()
    path = pull()
    before = content(path)
    inode = path.stat().st_ino
    serve(**bad)
    with pytest.raises(DownloadError):
        pull(force=True)
    assert content(target) == before == GOOD and target.stat().st_ino == inode
    assert [m.status for m in models.list_models() if m.name == "tiny"] == ["pulled"]
    assert all(not n.endswith((".partial", ".old")) for n in leftovers(target))


def test_force_replaces_the_model_with_a_good_new_download(serve, target):
    serve()
    pull()
    new = WEIGHTS[::-1]
    serve(files={"onnx/model.onnx": new})
    assert content(pull(force=True))["model.onnx"] == new
    assert leftovers(target) == []


# --- 2. concurrent pulls: a per-model lock, unique temporary folders ---------------


def test_concurrent_pulls_wait_for_each_other_and_download_once(serve, target, capsys):
    hub = serve(faults={"onnx/model.onnx": ["slow"]}, delay=1.0)
    results, errors = [], []

    def run():
        try:
            results.append(models.pull("tiny", quiet=False))
        except Exception as e:  # noqa: BLE001 - any failure fails the test below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and results == [target, target]
    assert len(hub.gets("onnx/model.onnx")) == len(hub.gets("tokenizer.json")) == 1
    assert content(target) == GOOD and leftovers(target) == []
    assert "waiting for another pull of tiny" in capsys.readouterr().err


def test_concurrent_forced_pulls_in_two_processes(serve, target, tmp_path):
    """Two processes pulling with --force at once: both succeed, one after the other."""
    hub = serve(faults={"onnx/model.onnx": ["slow", "slow"]}, delay=1.5)
    script = textwrap.dedent(f"""
        import json
        from routecore.hub import models
        models.REGISTRY["tiny"] = models.ModelSource(
            {REPO!r}, "onnx", ("model.onnx", "/tokenizer.json"), {{"dim": 4}}
        )
        print(models.pull("tiny", force=True, quiet=True))
    """)
    env = {**os.environ, models.HUB_ENV: hub.url, models.HOME_ENV: str(target.parent.parent)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert content(target) == GOOD and leftovers(target) == []
    assert len(hub.gets("onnx/model.onnx")) == 2


def test_a_held_lock_makes_the_pull_wait(serve, target):
    serve()
    target.parent.mkdir(parents=True)
    fd = os.open(target.parent / ".tiny.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    done = threading.Event()
    t = threading.Thread(target=lambda: (pull(), done.set()))
    t.start()
    try:
        assert not done.wait(0.5) and not target.exists()
    finally:
        os.close(fd)
    t.join(30)
    assert done.is_set() and content(target) == GOOD


def test_a_failed_pull_releases_the_lock(serve, target):
    serve(faults={"tokenizer.json": ["404"]})
    with pytest.raises(DownloadError, match="HTTP 404"):
        pull()
    fd = os.open(target.parent / ".tiny.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # would raise BlockingIOError if still held
    finally:
        os.close(fd)
    assert content(pull()) == GOOD


def test_leftovers_of_a_killed_pull_are_removed_and_never_listed(serve, target):
    dead = target.parent / ".tiny.abcd1234.partial"
    dead.mkdir(parents=True)
    (dead / "config.json").write_text("{}")
    other = target.parent / ".tiny-2.abcd1234.partial"  # another model's: not ours to remove
    other.mkdir()
    assert [m.name for m in models.list_models() if m.status == "pulled"] == []
    serve()
    pull()
    assert not dead.exists() and other.exists()


# --- 3. malformed listings are typed errors -----------------------------------------

GOOD_ROW = {
    "type": "file",
    "path": "onnx/model.onnx",
    "size": len(WEIGHTS),
    "lfs": {"oid": SHA["onnx/model.onnx"], "size": len(WEIGHTS)},
}
BAD_LISTINGS = {
    "html": b"<html>rate limited</html>",
    "binary": b"\xff\xfe\x00garbage",
    "empty": b"",
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "object": json.dumps(GOOD_ROW).encode(),
    "numbers": b"[1, 2]",
    "no path": json.dumps([{"type": "file", "size": 3}]).encode(),
    "path not str": json.dumps([{**GOOD_ROW, "path": 5}]).encode(),
    "type not str": json.dumps([{**GOOD_ROW, "type": None}]).encode(),
}
for _key, _row in {
    "no size": {"size": None},
    "size str": {"size": "300000"},
    "size negative": {"size": -1},
    "size bool": {"size": True},
    "size float": {"size": 300000.0},
    "lfs str": {"lfs": "yes"},
    "lfs bad oid": {"lfs": {"oid": "z" * 64}},
    "lfs size": {"lfs": {"oid": SHA["onnx/model.onnx"], "size": 5}},
    "oid int": {"lfs": None, "oid": 5},
    "dotdot": {"path": "onnx/../../../etc/passwd"},
    "parent": {"path": "../model.onnx"},
    "absolute": {"path": "/etc/passwd"},
    "dot": {"path": "onnx/./model.onnx"},
    "double slash": {"path": "onnx//model.onnx"},
    "backslash": {"path": "onnx/..\\..\\model.onnx"},
    "nul": {"path": "onnx/model.onnx\x00"},
    "other folder": {"path": "other/model.onnx"},
    "empty path": {"path": ""},
}.items():
    BAD_LISTINGS[_key] = json.dumps([{**GOOD_ROW, **_row}]).encode()
BAD_LISTINGS["twice"] = json.dumps([GOOD_ROW, GOOD_ROW]).encode()


@pytest.mark.parametrize("case", sorted(BAD_LISTINGS))
def test_malformed_listing_is_a_download_error(serve, target, case):
    hub = serve(listing={"onnx": BAD_LISTINGS[case]})
    with pytest.raises(DownloadError, match="malformed file listing from .*/tree/main/onnx"):
        pull()
    assert not target.exists() and hub.gets("onnx/model.onnx") == []


def test_malformed_listing_in_the_cli_is_one_json_error(serve, target, capsys):
    from routecore import cli

    serve(listing={"onnx": b"not json"})
    assert cli.main(["models", "pull", "tiny", "--json"]) == 2
    err = json.loads(capsys.readouterr().out)["error"]
    assert err["type"] == "DownloadError" and "malformed file listing" in err["message"]


def test_listing_without_a_wanted_file(serve, target):
    serve(listing={"onnx": b"[]"})
    with pytest.raises(DownloadError, match=r"has no \['onnx/model.onnx'\]"):
        pull()


@pytest.mark.parametrize(
    "kw",
    [
        {"files": ("../model.onnx",)},
        {"files": ("/a/../b",)},
        {"files": ("a/x", "b/x")},
        {"files": ()},
        {"files": ("config.json",)},
        {"sha256": {"nope": "0" * 64}},
        {"sha256": {"model.onnx": "XYZ"}},
    ],
)
def test_bad_model_source_is_a_model_error(kw):
    with pytest.raises(ModelError):
        models.ModelSource(**{"repo": REPO, "subdir": "onnx", "files": ("model.onnx",), **kw})


# --- 4. pins, HF_ENDPOINT / HF_TOKEN / HF_HUB_OFFLINE, retries, resume --------------


def pin(monkeypatch, **sha256):
    monkeypatch.setitem(
        models.REGISTRY, "tiny", models.ModelSource(REPO, "onnx", SOURCE.files, {"dim": 4}, sha256=sha256)
    )


def test_pins_that_match_pass(serve, target, monkeypatch):
    pin(monkeypatch, **{"model.onnx": SHA["onnx/model.onnx"], "/tokenizer.json": SHA["tokenizer.json"]})
    serve()
    assert content(pull()) == GOOD


def test_a_listing_that_disagrees_with_a_pin_is_refused_before_downloading(serve, target, monkeypatch):
    pin(monkeypatch, **{"model.onnx": "0" * 64})
    hub = serve()
    with pytest.raises(DownloadError, match="the pin is 0000"):
        pull()
    assert hub.gets("onnx/model.onnx") == [] and not target.exists()


def test_a_pin_catches_a_file_that_the_listing_vouches_for(serve, target, monkeypatch):
    """The hub lists and serves another tokenizer.json consistently; only the pin knows."""
    pin(monkeypatch, **{"/tokenizer.json": SHA["tokenizer.json"]})
    serve(files={"tokenizer.json": tamper(TOKENIZER)})
    with pytest.raises(DownloadError, match="SHA-256 .*expected " + SHA["tokenizer.json"]):
        pull()
    assert not target.exists()


def test_hf_endpoint_is_used_and_routecore_endpoint_wins(serve, target, monkeypatch):
    hub = serve()
    monkeypatch.delenv(models.HUB_ENV)
    monkeypatch.setenv("HF_ENDPOINT", hub.url + "/")
    assert content(pull()) == GOOD
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv(models.HUB_ENV, hub.url)
    assert content(pull(force=True)) == GOOD


def test_hf_token_goes_to_the_hub_and_not_to_its_cdn(serve, target, monkeypatch):
    hub = serve(token="s3cret", cdn=True)
    with pytest.raises(DownloadError, match="HTTP 401.*HF_TOKEN"):
        pull()
    n = len(hub.requests)
    monkeypatch.setenv("HF_TOKEN", "s3cret")
    assert content(pull()) == GOOD
    cdn = [h for s, _, h in hub.requests if s == "cdn"]
    assert len(hub.gets("onnx/model.onnx", "cdn")) == 1 and all("Authorization" not in h for h in cdn)
    assert all(h.get("Authorization") == "Bearer s3cret" for s, _, h in hub.requests[n:] if s == "hub")


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_hf_hub_offline_refuses_without_touching_the_network(serve, target, monkeypatch, value):
    hub = serve()
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    with pytest.raises(DownloadError, match="HF_HUB_OFFLINE"):
        pull()
    monkeypatch.delenv("HF_HUB_OFFLINE")
    pull()
    n = len(hub.requests)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert pull() == target  # installed: no network needed
    with pytest.raises(DownloadError, match="HF_HUB_OFFLINE"):
        pull(force=True)
    assert len(hub.requests) == n and content(target) == GOOD


@pytest.mark.parametrize("faults", [["500", "500"], ["reset"], ["429"], ["slow"]])
def test_transient_failures_are_retried(serve, target, faults, capfd):
    hub = serve(faults={"onnx/model.onnx": faults, "tree:onnx": faults}, delay=1.0)
    assert content(pull(timeout=0.4, quiet=False)) == GOOD
    assert len(hub.gets("onnx/model.onnx")) == len(faults) + 1
    assert hub.listed.count("onnx") == len(faults) + 1
    if faults == ["429"]:  # the wait is the server's Retry-After: 1, for the listing and for the file
        assert len(re.findall(r"HTTP 429 from \S+; retry 1/\d+ in 1\.0 s", capfd.readouterr().err)) == 2


def test_retries_give_up_with_a_download_error(serve, target):
    hub = serve(faults={"onnx/model.onnx": ["500"] * 9})
    with pytest.raises(DownloadError, match="failed after 3 attempts: HTTP 500"):
        pull(retries=2)
    assert len(hub.gets("onnx/model.onnx")) == 3


def test_client_errors_are_not_retried(serve, target):
    hub = serve(faults={"onnx/model.onnx": ["404"] * 9})
    with pytest.raises(DownloadError, match="HTTP 404"):
        pull()
    assert len(hub.gets("onnx/model.onnx")) == 1


def test_unreachable_hub_is_retried_then_a_download_error(target, monkeypatch):
    monkeypatch.setenv(models.HUB_ENV, "http://127.0.0.1:9")
    with pytest.raises(DownloadError, match="failed after 2 attempts: cannot reach"):
        pull(retries=1, timeout=2)


def test_a_slow_but_steady_server_is_waited_for(serve, target):
    """15 pieces 0.1 s apart: each wait is well under the timeout and the rate far above a
    stall, so the download goes on for more than twice the timeout, in one request."""
    hub = serve(faults={"onnx/model.onnx": ["trickle"]}, piece=20_000, delay=0.1)
    assert content(pull(timeout=0.5)) == GOOD
    assert [h.get("Range") for h in hub.gets("onnx/model.onnx")] == [None]  # one request, never cut


def test_a_pause_longer_than_the_timeout_is_resumed(serve, target):
    hub = serve(faults={"onnx/model.onnx": ["pause"]}, delay=1.0)
    assert content(pull(timeout=0.3)) == GOOD
    assert [h.get("Range") for h in hub.gets("onnx/model.onnx")] == [None, f"bytes={len(WEIGHTS) // 2}-"]


@pytest.mark.parametrize(
    "fault, delay, why", [("trickle", 0.05, "stalled: .* bytes in .* s"), ("pause", 2.0, "timed out")]
)
def test_a_server_that_stalls_every_time_fails_in_bounded_time(serve, target, fault, delay, why):
    """20 bytes every 0.05 s never trips a 0.5 s read timeout, but is under the stall rate;
    a pause of 2 s trips the timeout. Each retry resumes where the last one stopped."""
    hub = serve(faults={"onnx/model.onnx": [fault] * 9}, piece=20, delay=delay)
    with pytest.raises(DownloadError, match=f"failed after 3 attempts: .*{why}"):
        pull(timeout=0.5, retries=2)
    ranges = [h.get("Range") for h in hub.gets("onnx/model.onnx")]
    assert len(ranges) == 3 and ranges[0] is None and all(r.startswith("bytes=") for r in ranges[1:])
    assert not target.exists()


def test_dropped_lfs_download_resumes_with_range(serve, target):
    hub = serve(faults={"onnx/model.onnx": ["drop"]})
    assert content(pull()) == GOOD
    assert [h.get("Range") for h in hub.gets("onnx/model.onnx")] == [None, f"bytes={len(WEIGHTS) // 2}-"]
    assert leftovers(target) == []


def test_resume_copes_with_a_server_that_ignores_or_refuses_range(serve, target):
    hub = serve(faults={"onnx/model.onnx": ["drop", "416", "drop", "norange"]})
    assert content(pull()) == GOOD
    half = f"bytes={len(WEIGHTS) // 2}-"
    assert [h.get("Range") for h in hub.gets("onnx/model.onnx")] == [None, half, None, half]


def plant(target, data: bytes):
    d = target.parent / ".tiny.downloads"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{SHA['onnx/model.onnx']}.incomplete").write_bytes(data)


@pytest.mark.parametrize(
    "kept, ranges",
    [
        (WEIGHTS[:1000], ["bytes=1000-"]),  # a killed pull's bytes: resumed
        (WEIGHTS, []),  # complete already: verified, not downloaded
        (WEIGHTS + b"x", [None]),  # longer than the file: dropped
        (b"\0" * 1000, ["bytes=1000-", None]),  # wrong bytes: checksum fails, downloaded again
    ],
)
def test_a_later_pull_resumes_what_an_earlier_one_left(serve, target, kept, ranges):
    plant(target, kept)
    hub = serve()
    assert content(pull()) == GOOD
    assert [h.get("Range") for h in hub.gets("onnx/model.onnx")] == ranges
    assert leftovers(target) == []


def test_progress_and_retry_notes_go_to_stderr_only_when_asked(serve, target, capfd):
    serve(faults={"onnx/model.onnx": ["500"]})
    pull()
    assert capfd.readouterr() == ("", "")
    serve(faults={"onnx/model.onnx": ["500"]})
    pull(force=True, quiet=False)
    out, err = capfd.readouterr()
    assert out == "" and "HTTP 500" in err and "retry 1/4" in err and "model.onnx" in err and "100%" in err


def test_an_unwritable_cache_is_a_download_error(serve, hub_env, target):
    serve()
    hub_env.parent.mkdir(parents=True, exist_ok=True)
    hub_env.write_text("a file where the cache folder should be")
    with pytest.raises(DownloadError, match="cannot write the model folder"):
        pull()


def test_a_link_planted_at_the_resume_file_is_not_written_through(serve, target, tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me")
    d = target.parent / f".{target.name}.downloads"
    d.mkdir(parents=True)
    (d / f"{SHA['onnx/model.onnx']}.incomplete").symlink_to(victim)
    serve()
    assert content(pull()) == GOOD
    assert victim.read_bytes() == b"keep me"
