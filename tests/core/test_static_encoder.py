"""Static tables (issue 38): distillation, the native static encoder against a numpy reference of the
same table, batch invariance, ``Encoder.load`` and ``models list``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MODELS, need_shared
from routecore import Encoder
from routecore.cli import main as cli_main
from routecore.core.static_encoder import StaticEncoder
from routecore.errors import InvalidArgumentError, ModelError
from routecore.hub import models
from routecore.hub.distill import EMBEDDINGS, TOKEN_IDS, distill, read_corpus

TEXTS = [
    "reset my password",
    "the VPN is down again since this morning",
    "le serveur de production est en panne",
    "Ünïcödé àccents and EMOJI 🚀🚀",
    "数据库连接失败",
    "",
    "   ",
    "word " * 400,
]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = need_shared(MODELS / "all-minilm-l6-v2")
    dest = tmp_path_factory.mktemp("static") / "minilm-static"
    r = distill(src, dims=32, vocab=3000, dest=dest)
    assert (r.rows, r.dims, r.vocab_size) == (2995, 32, 30522)  # 5 special tokens are not rows
    assert r.pruning.startswith("the first 3000 ids") and 0 < r.explained_variance < 1
    return dest


def reference(folder: Path, texts: list[str]) -> np.ndarray:
    """The table's embeddings by numpy: mean of the pieces' rows, L2-normalised."""
    from tokenizers import Tokenizer

    cfg = json.loads((folder / "config.json").read_text())
    rows = np.fromfile(folder / EMBEDDINGS, dtype="<f2").astype(np.float32).reshape(cfg["rows"], cfg["dim"])
    ids = np.fromfile(folder / TOKEN_IDS, dtype="<u4")
    row_of = {int(t): i for i, t in enumerate(ids)}
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(cfg["max_length"])
    out = np.zeros((len(texts), cfg["dim"]), dtype=np.float32)
    for i, t in enumerate(texts):
        kept = [row_of[p] for p in tok.encode(t, add_special_tokens=False).ids if p in row_of]
        if kept:
            v = rows[kept].mean(axis=0)
            out[i] = v / np.linalg.norm(v)
    return out


def test_folder_config_and_files(table: Path) -> None:
    cfg = json.loads((table / "config.json").read_text())
    assert cfg["kind"] == "static" and cfg["dim"] == 32 and cfg["dtype"] == "float16"
    assert cfg["source_model"].startswith("all-minilm-l6-v2:")
    assert (table / EMBEDDINGS).stat().st_size == cfg["rows"] * 32 * 2
    assert sorted(p.name for p in table.iterdir()) == ["config.json", EMBEDDINGS, TOKEN_IDS, "tokenizer.json"]
    assert not list(table.parent.glob(".*")), "no temporary folder left"


def test_a_fresh_process_that_imports_only_the_encoder_opens_a_table(table: Path) -> None:
    # routecore.core.encoder imports no subclass (no import circle): the static kind is registered by
    # routecore.core, which Python imports before any of its modules.
    code = (
        "import sys; from routecore.core.encoder import Encoder; "
        "e = Encoder.load(sys.argv[1]); print(type(e).__name__, e.dim)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(table)], capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["StaticEncoder", "32"]


def test_native_matches_numpy_reference(table: Path) -> None:
    enc = Encoder.load(table)
    assert isinstance(enc, StaticEncoder) and enc.dim == 32 and enc.threads == 1
    got = enc.encode(TEXTS)
    want = reference(table, TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 32)
    np.testing.assert_allclose(got, want, atol=2e-6)
    norms = np.linalg.norm(got, axis=1)
    assert np.allclose(norms[[0, 1, 2, 3, 7]], 1.0, atol=1e-5)
    assert norms[5] == norms[6] == 0.0, "no piece: a zero vector"
    assert enc.encode_with_stats(TEXTS).truncated == (7,) and enc.truncations >= 1


def test_tokenize_has_no_special_tokens(table: Path) -> None:
    enc = Encoder.load(table)
    assert enc.tokenize("hello world") == [[7592, 2088]]


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(max_size=40), min_size=1, max_size=12)
    # from 64 texts the core splits a batch across threads (PARALLEL_TEXTS)
    | st.lists(st.text(max_size=40), min_size=64, max_size=140)
)
def test_batch_invariant(table: Path, texts: list[str]) -> None:
    enc = _load(table)
    together = enc.encode(texts)
    alone = np.concatenate([enc.encode([t]) for t in texts])
    assert np.array_equal(together, alone)  # bit for bit
    assert np.array_equal(enc.encode(texts[::-1]), together[::-1])


_LOADED: dict[Path, Encoder] = {}


def _load(folder: Path) -> Encoder:
    if folder not in _LOADED:
        _LOADED[folder] = Encoder.load(folder)
    return _LOADED[folder]


def test_model_id_and_files_id(table: Path) -> None:
    enc = Encoder.load(table)
    assert enc.model_id.startswith("minilm-static:") and len(enc.files_id) == 16
    assert enc.onnx_path == table / EMBEDDINGS
    assert enc.cache_stats().capacity == 0


def test_load_by_name_and_models_list(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROUTECORE_HOME", str(tmp_path))
    src = need_shared(MODELS / "all-minilm-l6-v2")
    assert cli_main(["models", "distill", str(src), "--dims", "8", "--vocab", "500", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["path"] == str(tmp_path / "models" / "all-minilm-l6-v2-static") and report["rows"] == 495
    assert isinstance(Encoder.load("all-minilm-l6-v2-static"), StaticEncoder)
    rows = {r.name: r.status for r in models.list_models()}
    assert rows["all-minilm-l6-v2-static"] == "distilled"


def test_unigram_pruning_keeps_corpus_pieces(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        '{"text": "quelle est la météo à Lyon"}\n{"text": "数据库连接失败"}\n', encoding="utf-8"
    )
    texts = read_corpus([corpus])
    r = distill(None, dims=8, vocab=40, corpus=texts, dest=tmp_path / "e5s")
    tok = Tokenizer.from_file(str(models.bundled_model_dir() / "tokenizer.json"))
    ids = set(np.fromfile(tmp_path / "e5s" / TOKEN_IDS, dtype="<u4").tolist())
    pieces = {p for t in texts for p in tok.encode(t, add_special_tokens=False).ids}
    assert pieces <= ids and len(ids) == r.rows <= 40 + len(pieces)
    assert "unigram" in r.pruning
    enc = Encoder.load(tmp_path / "e5s")
    np.testing.assert_allclose(enc.encode(texts), reference(tmp_path / "e5s", texts), atol=2e-6)


def test_bad_arguments(table: Path) -> None:
    src = need_shared(MODELS / "all-minilm-l6-v2")
    with pytest.raises(InvalidArgumentError):
        distill(src, dims=1000)
    with pytest.raises(InvalidArgumentError):
        distill(src, dims=32, vocab=10)
    with pytest.raises(ModelError, match="already a static table"):
        distill(table)


def test_corrupt_table_is_refused(table: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(table, bad)
    (bad / EMBEDDINGS).write_bytes(b"\0" * 10)
    with pytest.raises(ModelError, match="bytes, config.json says"):
        Encoder.load(bad)


def test_distill_again_replaces_the_table(tmp_path: Path) -> None:
    src = need_shared(MODELS / "all-minilm-l6-v2")
    distill(src, dims=8, vocab=300, dest=tmp_path / "t")
    distill(src, dims=12, vocab=300, dest=tmp_path / "t")
    assert json.loads((tmp_path / "t" / "config.json").read_text())["dim"] == 12
    assert Encoder.load(tmp_path / "t").dim == 12
    assert [p.name for p in tmp_path.iterdir()] == ["t"], "no temporary or old folder left"
