"""`models pull` of the known models, and from the Hugging Face cache, against a hub-shaped
HTTP server on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import MODELS, need_shared
from fake_hub import Hub, hf_cache, isolate
from routecore import Encoder
from routecore.errors import DownloadError, ModelError
from routecore.hub import hf_cache as hfc
from routecore.hub import models


@pytest.fixture
def env(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    return tmp_path


def minilm_files() -> dict[str, bytes]:
    d = need_shared(MODELS / "all-minilm-l6-v2")
    return {
        "model.onnx": (d / "model-int8.onnx").read_bytes(),
        "model.onnx_data": b"\0" * 1000,
        "tokenizer.json": (d / "tokenizer.json").read_bytes(),
    }


def pull_from(hub: Hub, name: str, monkeypatch):
    """``models.pull(name)`` against ``hub``, which is closed afterwards."""
    monkeypatch.setenv(models.HUB_ENV, hub.url)
    try:
        return models.pull(name, quiet=True)
    finally:
        hub.close()


def known(name: str, files: dict[str, bytes], monkeypatch, subdir=None, **kw) -> Hub:
    """A Hub of ``files`` as known model ``name`` at its pinned revision, with the model's pins
    swapped for the hashes of ``files`` (the real pins are for the real files)."""
    src = models.REGISTRY[name]
    hub = Hub(files, src.repo, src.subdir if subdir is None else subdir, revision=src.revision, **kw)
    pins = {f: hashlib.sha256(hub.files[src.repo_path(f)]).hexdigest() for f in src.files}
    monkeypatch.setitem(models.REGISTRY, name, dataclasses.replace(src, sha256=pins))
    return hub


def test_known_models_pin_a_commit_and_every_file():
    for name, src in models.REGISTRY.items():
        assert re.fullmatch(r"[0-9a-f]{40}", src.revision), name
        assert sorted(src.sha256) == sorted(src.files), name


@pytest.mark.parametrize("name", sorted(models.REGISTRY))
def test_known_pins_refuse_other_files_before_downloading(env, monkeypatch, name):
    src = models.REGISTRY[name]
    files = {src.repo_path(f): b"not the real file " + f.encode() for f in src.files}
    hub = Hub(files, src.repo, revision=src.revision, lfs=lambda path: True)
    with pytest.raises(DownloadError, match="the pin is " + src.sha256[src.files[0]]):
        pull_from(hub, name, monkeypatch)
    assert not any("/resolve/" in path for _, path, _ in hub.requests)
    assert not (env / "home" / "models" / name).exists()


def test_pull_bge_m3_layout_and_checksums(env, monkeypatch):
    files = minilm_files()
    path = pull_from(known("bge-m3", files, monkeypatch), "bge-m3", monkeypatch)
    assert path == env / "home" / "models" / "bge-m3"
    for n, b in files.items():
        assert (path / n).read_bytes() == b
    cfg = json.loads((path / "config.json").read_text())
    assert (cfg["pooling"], cfg["dim"]) == ("cls", 1024)
    assert any(m.name == "bge-m3" and m.status == "pulled" for m in models.list_models())


def test_pulled_model_loads_by_name(env, monkeypatch):
    cfg = json.loads((MODELS / "all-minilm-l6-v2" / "config.json").read_text())
    cfg.update(onnx="model.onnx")
    cfg.pop("models")
    monkeypatch.setitem(
        models.REGISTRY, "tiny", models.ModelSource("me/tiny", "onnx", ("model.onnx", "tokenizer.json"), cfg)
    )
    pull_from(Hub(minilm_files(), "me/tiny", "onnx"), "tiny", monkeypatch)
    enc = Encoder.load("tiny")
    assert enc.encode("hello").shape == (1, 384)


def test_pull_minilm_from_upstream_onnx_folder_and_root(env, monkeypatch):
    """MiniLM left the wheel; `models pull all-minilm-l6-v2` fetches the upstream
    int8 file from onnx/ and tokenizer.json from the repository root."""
    d = need_shared(MODELS / "all-minilm-l6-v2")
    files = {
        "onnx/model_quint8_avx2.onnx": (d / "model-int8.onnx").read_bytes(),
        "tokenizer.json": (d / "tokenizer.json").read_bytes(),
        "onnx/model.onnx": b"not wanted",
    }
    hub = known("all-minilm-l6-v2", files, monkeypatch, subdir="")
    path = pull_from(hub, "all-minilm-l6-v2", monkeypatch)
    assert sorted(hub.listed) == ["", "onnx"]
    assert sorted(p.name for p in path.iterdir()) == [
        "config.json",
        "model_quint8_avx2.onnx",
        "tokenizer.json",
    ]
    enc = Encoder.load("all-minilm-l6-v2", cache_size=0)
    ref = [json.loads(line) for line in (d / "reference.jsonl").read_text().splitlines()[:5]]
    for r in ref:
        got = enc.encode(r["text"])[0]
        assert float(got @ np.asarray(r["embedding"], dtype=np.float32)) > 0.95
    assert not any(m.name == "all-minilm-l6-v2" and m.status == "bundled" for m in models.list_models())


def test_checksum_mismatch_leaves_nothing(env, monkeypatch):
    with pytest.raises(DownloadError, match="checksum"):
        pull_from(
            known("bge-m3", minilm_files(), monkeypatch, faults={"onnx/tokenizer.json": ["flip"]}),
            "bge-m3",
            monkeypatch,
        )
    assert not (env / "home" / "models" / "bge-m3").exists()


def test_unreachable_hub_and_unknown_model(env, monkeypatch):
    monkeypatch.setenv(models.HUB_ENV, "http://127.0.0.1:9")
    with pytest.raises(DownloadError):
        models.pull("bge-m3", quiet=True, timeout=2)
    with pytest.raises(ModelError, match="unknown model"):
        models.pull("no-such-model")
    with pytest.raises(ModelError, match="models pull bge-m3"):
        models.resolve("bge-m3")


# --- the Hugging Face cache: read (verified), never written -------------------------

TINY = {
    "onnx/model.onnx": np.random.default_rng(1).bytes(200_000),
    "tokenizer.json": json.dumps({"vocab": list(range(500))}).encode(),
}
SHA = {p: hashlib.sha256(b).hexdigest() for p, b in TINY.items()}
COMMIT = hashlib.sha1(b"the pinned commit").hexdigest()
GOOD = {
    "model.onnx": TINY["onnx/model.onnx"],
    "tokenizer.json": TINY["tokenizer.json"],
    "config.json": b'{\n  "dim": 4\n}',
}


def tiny(monkeypatch, *, pinned: bool, revision: str = COMMIT) -> Path:
    """Registers model "tiny" (me/tiny: onnx/model.onnx in LFS, a plain-git tokenizer.json at the root)."""
    pins = {"model.onnx": SHA["onnx/model.onnx"], "/tokenizer.json": SHA["tokenizer.json"]} if pinned else {}
    src = models.ModelSource(
        "me/tiny", "onnx", ("model.onnx", "/tokenizer.json"), {"dim": 4}, revision=revision, sha256=pins
    )
    monkeypatch.setitem(models.REGISTRY, "tiny", src)
    return models.home() / "models" / "tiny"


def snapshot(folder: Path) -> dict[str, object]:
    """Every entry under ``folder``: a link's target, a file's bytes and link count."""

    def what(p: Path) -> object:
        return (
            os.readlink(p)
            if p.is_symlink()
            else (p.read_bytes(), p.stat().st_nlink)
            if p.is_file()
            else "dir"
        )

    return {str(p.relative_to(folder)): what(p) for p in sorted(folder.rglob("*"))}


def content(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.fixture
def hub(env, monkeypatch):
    """A hub serving TINY at COMMIT and (the same files) at main."""
    hubs = [Hub(TINY, "me/tiny", revision=COMMIT), Hub(TINY, "me/tiny")]
    monkeypatch.setenv(models.HUB_ENV, hubs[0].url)
    yield hubs
    for h in hubs:
        h.close()


@pytest.mark.parametrize("pinned, offline", [(True, False), (False, False), (True, True), (False, True)])
def test_a_model_in_the_hf_cache_is_verified_and_used(env, hub, monkeypatch, pinned, offline):
    """Pinned: no network at all. Not pinned: the listing's hashes, at the commit that
    refs/main names. Offline: no network either way (an unpinned file is held to its blob's name)."""
    folder = hf_cache(env / "hf", "me/tiny", TINY, COMMIT)
    before = snapshot(folder)
    target = tiny(monkeypatch, pinned=pinned, revision=COMMIT if pinned else "main")
    used = hub[0] if pinned else hub[1]
    monkeypatch.setenv(models.HUB_ENV, used.url)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert content(models.pull("tiny", quiet=True)) == GOOD
    listed = (
        [] if pinned or offline else ["/api/models/me/tiny/tree/main/onnx", "/api/models/me/tiny/tree/main"]
    )
    assert [p for _, p, _ in used.requests] == listed  # and no file downloads
    blob = folder / "blobs" / SHA["onnx/model.onnx"]
    assert (target / "model.onnx").stat().st_ino == blob.stat().st_ino  # a hard link: no second copy
    # The cache is as it was, but for a second name of each blob (in the model's folder).
    assert snapshot(folder) == {
        k: (v[0], 2) if isinstance(v, tuple) and k.startswith("blobs/") else v for k, v in before.items()
    }


@pytest.mark.parametrize("pinned", [True, False])
def test_a_corrupt_blob_in_the_hf_cache_is_downloaded_again_and_left_alone(env, hub, monkeypatch, pinned):
    folder = hf_cache(env / "hf", "me/tiny", TINY, COMMIT)
    blob = folder / "blobs" / SHA["onnx/model.onnx"]
    blob.write_bytes(TINY["onnx/model.onnx"][:-1] + b"\0")
    before = snapshot(folder)
    tiny(monkeypatch, pinned=pinned)
    assert content(models.pull("tiny", quiet=True)) == GOOD
    assert len(hub[0].gets("onnx/model.onnx")) == 1 and hub[0].gets("tokenizer.json") == []
    after = snapshot(folder)
    assert after[f"blobs/{blob.name}"] == before[f"blobs/{blob.name}"]  # untouched, not linked
    assert {k for k in after if after[k] != before[k]} == {
        k for k in after if k.startswith("blobs/") and k != f"blobs/{blob.name}"
    }


def test_offline_without_the_model_in_the_hf_cache_says_what_is_missing(env, hub, monkeypatch):
    folder = hf_cache(
        env / "hf", "me/tiny", {"onnx/model.onnx": TINY["onnx/model.onnx"]}, COMMIT
    )  # no tokenizer.json
    (folder / "blobs" / SHA["onnx/model.onnx"]).write_bytes(TINY["onnx/model.onnx"][::-1])
    before = snapshot(folder)
    target = tiny(monkeypatch, pinned=True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DownloadError) as e:
        models.pull("tiny", quiet=True)
    msg = str(e.value)
    assert msg.startswith(
        f"HF_HUB_OFFLINE is set and the Hugging Face cache {folder} lacks me/tiny at {COMMIT}: "
    )
    assert re.search(
        r"onnx/model.onnx: \S+ failed its check: SHA-256 [0-9a-f]{64}, expected " + SHA["onnx/model.onnx"],
        msg,
    )
    assert "tokenizer.json: not in the cache" in msg and msg.endswith("(unset HF_HUB_OFFLINE to download)")
    assert hub[0].requests == [] and not target.exists() and snapshot(folder) == before


def test_offline_the_hf_cache_must_hold_the_pinned_revision_and_vouch_for_its_files(env, hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    other = hashlib.sha1(b"another commit").hexdigest()
    hf_cache(env / "hf" / "a", "me/tiny", TINY, other)  # the same files, but only at another commit
    monkeypatch.setenv("HF_HUB_CACHE", str(env / "hf" / "a"))
    tiny(monkeypatch, pinned=False)
    with pytest.raises(
        DownloadError, match="onnx/model.onnx: not in the cache; tokenizer.json: not in the cache"
    ):
        models.pull("tiny", quiet=True)
    hf_cache(env / "hf" / "b", "me/tiny", TINY, COMMIT, links=False)  # copies, as on Windows: no blob names
    monkeypatch.setenv("HF_HUB_CACHE", str(env / "hf" / "b"))
    with pytest.raises(
        DownloadError, match="model.onnx: .* cannot be checked .*tokenizer.json: .* cannot be checked"
    ):
        models.pull("tiny", quiet=True)
    tiny(monkeypatch, pinned=True)  # a pin vouches for a copy
    assert content(models.pull("tiny", quiet=True)) == GOOD
    assert hub[0].requests == []


def test_a_pull_writes_nothing_into_the_hf_cache(env, hub, monkeypatch):
    tiny(monkeypatch, pinned=True)
    assert content(models.pull("tiny", quiet=True)) == GOOD
    assert not (env / "hf").exists()


def test_the_hf_cache_is_found_as_huggingface_hub_finds_it(monkeypatch, tmp_path):
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert hfc.hub_cache() == tmp_path / ".cache/huggingface/hub"
    monkeypatch.setenv("XDG_CACHE_HOME", "/x")
    assert hfc.hub_cache() == Path("/x/huggingface/hub")
    monkeypatch.setenv("HF_HOME", "/h")
    assert hfc.hub_cache() == Path("/h/hub")
    monkeypatch.setenv("HUGGINGFACE_HUB_CACHE", "/old")
    assert hfc.hub_cache() == Path("/old")
    monkeypatch.setenv("HF_HUB_CACHE", "/new")
    assert hfc.hub_cache() == Path("/new")
    assert hfc.repo_folder("BAAI/bge-m3") == Path("/new/models--BAAI--bge-m3")


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_an_onnx_file_outside_the_model_folder_is_refused(tmp_path, how):
    """Issue 36 §7: config.json may not lead the loader to an ONNX file outside the model folder."""
    bundled = models.bundled_model_dir()
    cfg = json.loads((bundled / "config.json").read_text(encoding="utf-8"))
    outside = tmp_path / "elsewhere" / "model.onnx"
    outside.parent.mkdir()
    os.symlink(bundled / cfg["models"]["int8"], outside)
    folder = tmp_path / "model"
    folder.mkdir()
    os.symlink(bundled / "tokenizer.json", folder / "tokenizer.json")
    name = {"dotdot": "../elsewhere/model.onnx", "absolute": str(outside), "symlink": "model-int8.onnx"}[how]
    if how == "symlink":
        os.symlink(outside, folder / "model-int8.onnx")
    (folder / "config.json").write_text(json.dumps({**cfg, "models": {"int8": name}}), encoding="utf-8")
    with pytest.raises(ModelError, match=r"config\.json: models\.int8 names .* outside the model folder"):
        Encoder.load(folder)
    if how == "dotdot":  # the same file inside the folder loads
        shutil.copyfile(outside, folder / "model-int8.onnx")
        (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
        assert Encoder.load(folder, cache_size=0).dim == cfg["dim"]
