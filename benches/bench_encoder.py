"""Encoder latency: routecore (Rust: tokenizers + ort) vs onnxruntime-python +
tokenizers-python on the same ONNX file, in one run. Single query at 8/16/32
tokens and a batch of 32, with 1 and 2 intra-op threads; plus cache hits.

The bge-m3-shaped model has random weights: its figures are timing only. It is
built on first use into .benchmarks/bge-m3-shaped/ by ../shared's make_model.py
(needs `pip install onnx`, ~50 s, ~6 GB RAM)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED
from routecore import Encoder

ROOT = Path(__file__).resolve().parents[1]
WORDS = (
    "the production server returns errors after the last deployment please check the logs and restart it"
).split()


def bge_m3_shaped() -> Path | None:
    d = ROOT / ".benchmarks" / "bge-m3-shaped"
    onnx = d / "bge-m3-shaped-int8.onnx"
    if not onnx.is_file():
        d.mkdir(parents=True, exist_ok=True)
        src = SHARED / "models" / "bge-m3-shaped"
        r = subprocess.run(
            [sys.executable, str(src / "make_model.py"), str(onnx)], capture_output=True, text=True
        )
        if r.returncode != 0:
            return None
        shutil.copy(src / "config.json", d / "config.json")
        shutil.copy(SHARED / "models" / "multilingual-e5-small" / "tokenizer.json", d / "tokenizer.json")
    return d


MODELS = {
    "minilm-int8": lambda: SHARED / "models" / "all-minilm-l6-v2",
    "e5-small-int8": lambda: SHARED / "models" / "multilingual-e5-small",
    "bge-m3-shaped-int8 (random weights)": bge_m3_shaped,
}


def text_with_tokens(enc: Encoder, n: int) -> str:
    words: list[str] = []
    i = 0
    while len(enc.tokenize(" ".join(words))[0]) < n:
        words.append(WORDS[i % len(WORDS)])
        i += 1
    return " ".join(words)


class PyStack:
    """onnxruntime-python + tokenizers-python + numpy pooling (the baseline)."""

    def __init__(self, folder: Path, onnx: Path, threads: int):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.cfg = json.loads((folder / "config.json").read_text())
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.enable_truncation(self.cfg.get("max_length", 512))
        self.tok.enable_padding(pad_id=self.cfg.get("pad_token_id", 0))
        o = ort.SessionOptions()
        o.intra_op_num_threads = threads
        o.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(str(onnx), o, providers=["CPUExecutionProvider"])
        self.out = self.cfg.get("output") or self.sess.get_outputs()[0].name

    def encode(self, texts):
        encs = self.tok.encode_batch([self.cfg.get("query_prefix", "") + t for t in texts])
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        h = self.sess.run([self.out], {"input_ids": ids, "attention_mask": mask})[0]
        if h.ndim == 3:
            v = (h * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        else:
            v = h
        return v / np.linalg.norm(v, axis=1, keepdims=True)


_loaded: dict = {}


def load(model: str, threads: int):
    key = (model, threads)
    if key not in _loaded:
        _loaded.clear()
        folder = MODELS[model]()
        if folder is None or not folder.exists():
            pytest.skip(f"{model} not available")
        enc = Encoder.load(folder, threads=threads, cache_size=0)
        _loaded[key] = (enc, PyStack(folder, enc.onnx_path, threads))
    return _loaded[key]


CASES = [(m, t, c) for m in MODELS for t in (1, 2) for c in ("8", "16", "32", "batch32")]


@pytest.mark.parametrize("impl", ["routecore", "onnxruntime-python"])
@pytest.mark.parametrize("model,threads,case", CASES, ids=[f"{m.split()[0]}-t{t}-{c}" for m, t, c in CASES])
def test_encode(benchmark, model, threads, case, impl):
    enc, py = load(model, threads)
    n = 16 if case == "batch32" else int(case)
    text = text_with_tokens(enc, n)
    texts = [f"{text} {i}" for i in range(32)] if case == "batch32" else [text]
    fn = (lambda: enc.encode(texts)) if impl == "routecore" else (lambda: py.encode(texts))
    a, b = enc.encode(texts), py.encode(texts)
    benchmark.extra_info.update(
        {
            "model": model,
            "threads": threads,
            "case": case,
            "impl": impl,
            "tokens": len(enc.tokenize(text)[0]),
            "min_cosine_vs_python": float(np.min(np.sum(a * b, axis=1))),
        }
    )
    benchmark.group = f"encode {model} threads={threads} {case}"
    heavy = "bge" in model
    benchmark.pedantic(
        fn,
        rounds=(6 if case == "batch32" else 25) if heavy else (30 if case == "batch32" else 150),
        warmup_rounds=2,
    )


def test_cache_hit(benchmark):
    enc = Encoder.load(cache_size=64)
    enc.encode("is the VPN down again")
    benchmark.group = "encode cache hit"
    benchmark.extra_info.update({"impl": "routecore", "case": "cache-hit"})
    benchmark.pedantic(lambda: enc.encode("is the VPN down again"), rounds=2000, warmup_rounds=10)
