"""Encoder: parity with the original models and the Python stack, batching,
cache, threads and bad input. Uses the real models in ../shared/models."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from conftest import MODELS, need_shared
from routecore import Encoder
from routecore.errors import InvalidArgumentError, ModelError

MINILM = MODELS / "all-minilm-l6-v2"
E5 = MODELS / "multilingual-e5-small"


def refs(folder: Path) -> list[dict]:
    need_shared(folder)
    return [json.loads(line) for line in (folder / "reference.jsonl").read_text().splitlines()]


def cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def minilm_fp32():
    need_shared(MINILM)
    return Encoder.load(MINILM, variant="fp32", cache_size=0)


@pytest.fixture(scope="module")
def minilm_int8():
    need_shared(MINILM)
    return Encoder.load(MINILM, variant="int8", cache_size=0)


@pytest.fixture(scope="module")
def e5_int8():
    need_shared(E5)
    return Encoder.load(E5, cache_size=0)


def test_fp32_matches_original_model(minilm_fp32):
    for r in refs(MINILM):
        got = minilm_fp32.encode(r["text"])[0]
        assert cos(got, r["embedding"]) >= 0.9999, r["text"]


@pytest.mark.parametrize("which", ["minilm", "e5"])
def test_int8_matches_original_model(which, minilm_int8, e5_int8):
    enc, folder = (minilm_int8, MINILM) if which == "minilm" else (e5_int8, E5)
    cs = [cos(enc.encode(r["text"])[0], r["embedding"]) for r in refs(folder)]
    assert min(cs) >= 0.96 and np.mean(cs) >= 0.99, (min(cs), np.mean(cs))


@pytest.mark.parametrize("which", ["minilm", "e5"])
def test_token_ids_match_python_tokenizers(which, minilm_int8, e5_int8):
    from tokenizers import Tokenizer

    enc, folder = (minilm_int8, MINILM) if which == "minilm" else (e5_int8, E5)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(enc.max_length)
    for r in refs(folder):
        text = r.get("input", r["text"])
        expected = tok.encode(text).ids
        assert enc.tokenize(r["text"])[0] == expected == r["input_ids"], r["text"]


def python_stack(
    folder: Path, onnx_file: str, texts: list[str], prefix: str, max_length: int, pad_id: int
) -> np.ndarray:
    """onnxruntime-python + tokenizers-python + numpy mean pooling, one text at a time."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(max_length)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(folder / onnx_file), opts, providers=["CPUExecutionProvider"])
    out = []
    for t in texts:
        ids = np.array([tok.encode(prefix + t).ids], dtype=np.int64)
        mask = np.ones_like(ids)
        h = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]
        v = h[0].mean(axis=0)
        out.append(v / np.linalg.norm(v))
    return np.stack(out)


@pytest.mark.parametrize("which", ["minilm-fp32", "minilm-int8", "e5-int8"])
def test_matches_python_stack_on_same_file(which):
    folder = MINILM if which.startswith("minilm") else E5
    texts = [r["text"] for r in refs(folder)]
    cfg = json.loads((folder / "config.json").read_text())
    variant = which.split("-")[1]
    onnx_file = cfg["models"][variant]
    enc = Encoder.load(folder, variant=variant, threads=1, cache_size=0)
    ours = np.stack([enc.encode(t)[0] for t in texts])
    theirs = python_stack(
        folder, onnx_file, texts, cfg["query_prefix"], cfg["max_length"], cfg["pad_token_id"]
    )
    cs = np.sum(ours * theirs, axis=1)
    assert cs.min() >= 0.9999, (texts[int(cs.argmin())], cs.min())


def test_batched_equals_one_by_one(minilm_fp32):
    texts = [r["text"] for r in refs(MINILM)][:24]
    batched = minilm_fp32.encode(texts)
    single = np.stack([minilm_fp32.encode(t)[0] for t in texts])
    assert np.sum(batched * single, axis=1).min() >= 0.9999


BATCH_INVARIANT_COS = 0.9995


def batch_cosines(encode, texts: list[str], single: np.ndarray) -> np.ndarray:
    """Cosine of each text's single-run embedding with its embedding in every batch
    tried: all texts in one call, then shuffled batches of 8 and 32 (worst kept)."""
    worst = np.sum(encode(texts) * single, axis=1)
    rng = np.random.default_rng(12)
    for size in (8, 32):
        order = rng.permutation(len(texts))
        for start in range(0, len(order), size):
            idx = order[start : start + size]
            got = encode([texts[i] for i in idx])
            worst[idx] = np.minimum(worst[idx], np.sum(got * single[idx], axis=1))
    return worst


@pytest.mark.parametrize("which", ["minilm", "e5"])
def test_int8_embedding_does_not_depend_on_batch(which, minilm_int8, e5_int8):
    """Issue 12 §5: dynamic int8 scales activations per input tensor, so a padded
    batch changed each text's embedding (min cosine 0.976 MiniLM, 0.993 e5)."""
    enc, folder = (minilm_int8, MINILM) if which == "minilm" else (e5_int8, E5)
    texts = [r["text"] for r in refs(folder)]
    for kind in ("query", "passage"):
        single = np.stack([enc.encode(t, kind=kind)[0] for t in texts])
        cs = batch_cosines(lambda batch: enc.encode(batch, kind=kind), texts, single)
        assert cs.min() >= BATCH_INVARIANT_COS, (
            kind,
            texts[int(cs.argmin())],
            float(cs.min()),
            float(cs.mean()),
        )


def test_cached_embedding_equals_a_fresh_one():
    """The query cache keeps whichever run came first: a batched exemplar must
    serve the same vector as a fresh single-text encode."""
    texts = [r["text"] for r in refs(MINILM)]
    cached = Encoder.load(MINILM, variant="int8", cache_size=256)
    cached.encode(texts)  # fills the cache from one batch
    fresh = Encoder.load(MINILM, variant="int8", cache_size=0)
    for t in texts:
        out = cached.encode_with_stats(t)
        assert out.cache_hits == 1
        assert cos(out.embeddings[0], fresh.encode(t)[0]) >= BATCH_INVARIANT_COS, t


def test_cache_hits_are_identical_and_counted():
    need_shared(MINILM)
    enc = Encoder.load(cache_size=4)
    a = enc.encode_with_stats(["reset my password"])
    b = enc.encode_with_stats(["reset my password"])
    assert a.cache_hits == 0 and b.cache_hits == 1
    np.testing.assert_array_equal(a.embeddings, b.embeddings)
    # query and passage kinds are cached apart
    enc.encode("reset my password", kind="passage")
    s = enc.cache_stats()
    assert (s.hits, s.misses, s.size, s.capacity) == (1, 2, 2, 4)
    enc.clear_cache()
    assert enc.cache_stats().size == 0


def test_odd_texts_get_embeddings(encoder):
    texts = [
        "",
        "   ",
        "\x00\x07\t\n",
        "🚀🔥 emoji",
        "mixed 中文 русский عربي",
        "x" * 100_000,
        "word " * 20_000,
    ]
    out = encoder.encode_with_stats(texts)
    assert out.embeddings.shape == (len(texts), encoder.dim)
    assert np.isfinite(out.embeddings).all()
    assert np.allclose(np.linalg.norm(out.embeddings, axis=1), 1, atol=1e-5)
    # The bundled e5 (XLM-R unigram) cuts both long texts at 512 tokens.
    assert set(out.truncated) == {5, 6}
    assert encoder.truncations >= 1


def test_empty_batch(encoder):
    assert encoder.encode([]).shape == (0, encoder.dim)


def test_bad_arguments(encoder):
    with pytest.raises(InvalidArgumentError):
        encoder.encode(["a", 3])  # type: ignore[list-item]
    with pytest.raises(Exception, match="query"):
        encoder.encode("a", kind="document")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        Encoder.load(threads=0)
    for huge in (30_000, 10**6):  # ONNX Runtime hung / crashed on these
        with pytest.raises(InvalidArgumentError, match="at most 1024|between 1 and 1024"):
            Encoder.load(threads=huge)


def test_threads_are_capped_at_what_the_cpus_can_run():
    """Issue 36 §8: threads=1024 under an address-space limit hung; more threads than
    THREADS_PER_CPU per usable CPU are now refused before any is started."""
    from routecore.core.encoder import THREADS_PER_CPU, max_threads

    cpus = len(os.sched_getaffinity(0))
    assert max_threads() == min(1024, THREADS_PER_CPU * cpus)
    most = max_threads()
    with pytest.raises(InvalidArgumentError, match=f"threads={most + 1} is more than {most}"):
        Encoder.load(threads=max_threads() + 1)


def test_threads_share_one_encoder(encoder):
    texts = [f"ticket number {i} is about the printer" for i in range(40)]
    expected = [encoder.encode(t)[0] for t in texts]  # one by one: int8 activations scale per batch
    encoder.clear_cache()
    results: dict[int, np.ndarray] = {}

    def work(i):
        results[i] = encoder.encode(texts[i])[0]

    ts = [threading.Thread(target=work, args=(i,)) for i in range(40)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    for i in range(40):
        assert cos(results[i], expected[i]) > 0.9999


def model_copy(
    tmp_path: Path, src: Path = MINILM, tokenizer_of: Path | None = None, **config_changes
) -> Path:
    """A folder of ``src``'s int8 graph and config (with ``config_changes``) and the tokenizer of
    ``tokenizer_of`` (default: ``src``'s)."""
    need_shared(src)
    need_shared(tokenizer_of or src)
    d = tmp_path / "m"
    d.mkdir()
    shutil.copy(src / "model-int8.onnx", d / "model.onnx")
    shutil.copy((tokenizer_of or src) / "tokenizer.json", d / "tokenizer.json")
    cfg = json.loads((src / "config.json").read_text())
    cfg.pop("models")
    cfg["onnx"] = "model.onnx"
    cfg.update(config_changes)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_missing_and_corrupt_onnx(tmp_path):
    d = model_copy(tmp_path)
    (d / "model.onnx").write_bytes(b"not a protobuf" * 10)
    with pytest.raises(ModelError, match="cannot load ONNX"):
        Encoder.load(d)
    (d / "model.onnx").unlink()
    with pytest.raises(ModelError, match="not found"):
        Encoder.load(d)
    with pytest.raises(ModelError):
        Encoder.load(tmp_path / "does-not-exist")


def test_tokenizer_that_does_not_fit_the_model(tmp_path):
    """Refused at load (issue 36 §1), not on the first query that holds a large id."""
    d = model_copy(tmp_path, tokenizer_of=E5)  # 250k ids vs a 30k vocabulary
    with pytest.raises(ModelError, match="250002 ids but .* cannot embed id 250001"):
        Encoder.load(d)


def test_tokenizer_whose_padding_is_not_the_models(tmp_path):
    """A BERT tokenizer in front of an XLM-R model: every id embeds, but config.json's pad id 1 is
    BERT's ``[unused0]``, not a special token."""
    d = model_copy(tmp_path, E5, tokenizer_of=MINILM)
    with pytest.raises(ModelError, match=r"pad_token_id 1 is not a special token .*\[unused0\]"):
        Encoder.load(d)


@pytest.mark.parametrize(
    "change,match",
    [
        ({"output": "sentence_embedding"}, "not a graph output"),
        ({"pooling": "none"}, "rank"),
        ({"dim": 768}, "dim"),
    ],
)
def test_config_that_does_not_match_the_graph(tmp_path, change, match):
    with pytest.raises(ModelError, match=match):
        Encoder.load(model_copy(tmp_path, **change))


def test_missing_runtime_library_is_a_typed_error(tmp_path):
    code = (
        "import routecore\n"
        "try:\n"
        "    routecore.Encoder.load(runtime_path='/nonexistent/libonnxruntime.so.1')\n"
        "except routecore.RuntimeUnavailableError as e:\n"
        "    print('typed:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "typed:" in out.stdout, out.stderr
    bad = tmp_path / "libonnxruntime.so.1"
    bad.write_bytes(b"\x7fELF garbage")
    code2 = code.replace("/nonexistent/libonnxruntime.so.1", str(bad))
    out = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True, timeout=120)
    assert "typed:" in out.stdout, out.stderr


def test_a_huge_query_is_cut_before_tokenizing(encoder):
    """A 10 MB query used to take seconds of tokenizing for 512 tokens the model keeps."""
    from routecore.core.encoder import CHARS_PER_TOKEN

    head = "the printer on floor three is jammed again " * 40
    out = encoder.encode_with_stats(head + "x" * 10_000_000)
    assert out.truncated == (0,)
    cut = encoder.max_length * CHARS_PER_TOKEN
    assert float(out.embeddings[0] @ encoder.encode(head + "x" * (cut - len(head)))[0]) > 0.9999


@pytest.mark.parametrize("swap", ["tokenizer", "pooling"])
def test_a_folder_whose_model_does_not_reproduce_its_shipped_embeddings_is_refused(tmp_path, swap):
    """Another model's (structurally valid) tokenizer, or another pooling, in the bundled model's
    folder: it ships its sets' embeddings, and the model as loaded must reproduce them (issue 36 §1)."""
    import routecore

    src = Path(routecore.__file__).parent / "models" / "multilingual-e5-small"
    d = tmp_path / "renamed-e5"  # the check reads the ONNX file's hash, not the folder's name
    shutil.copytree(src, d)
    if swap == "tokenizer":  # same size and special tokens, every other piece under another id
        tok = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))
        vocab = tok["model"]["vocab"]
        vocab[10:-10] = vocab[10:-10][::-1]
        (d / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    else:
        cfg = json.loads((d / "config.json").read_text())
        (d / "config.json").write_text(json.dumps({**cfg, "pooling": "cls"}))
    with pytest.raises(ModelError, match="does not reproduce the reference embeddings"):
        Encoder.load(d)
    shutil.copytree(src, tmp_path / "intact")
    assert Encoder.load(tmp_path / "intact").dim == 384  # an intact copy loads
