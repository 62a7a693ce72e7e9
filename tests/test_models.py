"""`models pull` against a hub-shaped HTTP server on 127.0.0.1 (never the internet)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import MODELS, need_shared
from fake_hub import Hub, isolate

from routecore import Encoder, models
from routecore.errors import DownloadError, ModelError


@pytest.fixture
def env(tmp_path, monkeypatch):
    isolate(tmp_path, monkeypatch)
    return tmp_path


def minilm_files() -> dict[str, bytes]:
    d = need_shared(MODELS / "all-minilm-l6-v2")
    return {"model.onnx": (d / "model-int8.onnx").read_bytes(), "model.onnx_data": b"\0" * 1000, "tokenizer.json": (d / "tokenizer.json").read_bytes()}


def pull_from(hub: Hub, name: str, monkeypatch):
    """``models.pull(name)`` against ``hub``, which is closed afterwards."""
    monkeypatch.setenv(models.HUB_ENV, hub.url)
    try:
        return models.pull(name, quiet=True)
    finally:
        hub.close()


def test_pull_bge_m3_layout_and_checksums(env, monkeypatch):
    files = minilm_files()
    path = pull_from(Hub(files, "BAAI/bge-m3", "onnx"), "bge-m3", monkeypatch)
    assert path == env / "home" / "models" / "bge-m3"
    for n, b in files.items():
        assert (path / n).read_bytes() == b
    cfg = json.loads((path / "config.json").read_text())
    assert (cfg["pooling"], cfg["dim"]) == ("cls", 1024)
    assert any(m["name"] == "bge-m3" and m["status"] == "pulled" for m in models.list_models())


def test_pulled_model_loads_by_name(env, monkeypatch):
    cfg = json.loads((MODELS / "all-minilm-l6-v2" / "config.json").read_text())
    cfg.update(onnx="model.onnx")
    cfg.pop("models")
    monkeypatch.setitem(models.REGISTRY, "tiny", models.ModelSource("me/tiny", "onnx", ("model.onnx", "tokenizer.json"), cfg))
    pull_from(Hub(minilm_files(), "me/tiny", "onnx"), "tiny", monkeypatch)
    enc = Encoder.load("tiny")
    assert enc.encode("hello").shape == (1, 384)


def test_pull_minilm_from_upstream_onnx_folder_and_root(env, monkeypatch):
    """MiniLM left the wheel; `models pull all-minilm-l6-v2` fetches the upstream
    int8 file from onnx/ and tokenizer.json from the repository root."""
    d = need_shared(MODELS / "all-minilm-l6-v2")
    files = {"onnx/model_quint8_avx2.onnx": (d / "model-int8.onnx").read_bytes(), "tokenizer.json": (d / "tokenizer.json").read_bytes(),
             "onnx/model.onnx": b"not wanted"}
    hub = Hub(files, "sentence-transformers/all-MiniLM-L6-v2", "")
    path = pull_from(hub, "all-minilm-l6-v2", monkeypatch)
    assert sorted(hub.listed) == ["", "onnx"]
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "model_quint8_avx2.onnx", "tokenizer.json"]
    enc = Encoder.load("all-minilm-l6-v2", cache_size=0)
    ref = [json.loads(line) for line in (d / "reference.jsonl").read_text().splitlines()[:5]]
    for r in ref:
        got = enc.encode(r["text"])[0]
        assert float(got @ np.asarray(r["embedding"], dtype=np.float32)) > 0.95
    assert not any(m["name"] == "all-minilm-l6-v2" and m["status"] == "bundled" for m in models.list_models())


def test_checksum_mismatch_leaves_nothing(env, monkeypatch):
    with pytest.raises(DownloadError, match="checksum"):
        pull_from(Hub(minilm_files(), "BAAI/bge-m3", "onnx", faults={"tokenizer.json": ["flip"]}), "bge-m3", monkeypatch)
    assert not (env / "home" / "models" / "bge-m3").exists()


def test_unreachable_hub_and_unknown_model(env, monkeypatch):
    monkeypatch.setenv(models.HUB_ENV, "http://127.0.0.1:9")
    with pytest.raises(DownloadError):
        models.pull("bge-m3", quiet=True, timeout=2)
    with pytest.raises(ModelError, match="unknown model"):
        models.pull("no-such-model")
    with pytest.raises(ModelError, match="models pull bge-m3"):
        models.resolve("bge-m3")
