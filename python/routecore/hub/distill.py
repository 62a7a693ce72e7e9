"""Static embedding tables distilled from a transformer encoder (issue 38; model2vec's recipe,
Tulkens & van Dongen, 2024).

Each kept vocabulary piece is run through the model's own ONNX graph alone, between the
tokenizer's special tokens (``[CLS] piece [SEP]``, ``<s> piece </s>``), and pooled as the model
pools (the mean over the three positions). The table is centred and reduced by PCA to ``dims``,
each row is scaled by its SIF weight ``a / (a + p)`` (``a`` = :data:`SIF_COEFFICIENT`, ``p`` the
piece's probability: ``exp(score)`` of a unigram vocabulary, else Zipf's law over the token ids
taken as frequency ranks), and stored as float16. A text's embedding is then the mean of its
pieces' rows (no special tokens), L2-normalised (:class:`routecore.core.static_encoder.StaticEncoder`).

Pruning (a 250k-piece unigram vocabulary costs 20+ minutes on 2 cores): the pieces with the
``vocab`` highest unigram scores, plus every piece that tokenizing ``corpus`` produces; a
WordPiece/BPE vocabulary is kept whole unless ``vocab`` is given (the first ``vocab`` ids).
Pieces that are not kept add nothing to a text's embedding.

Nothing is downloaded: the folder written is ``$ROUTECORE_HOME/models/<model>-static`` (or
``dest``): ``config.json`` (``kind: static``), ``tokenizer.json`` (the source's),
``embeddings.f16`` (rows × dims, little-endian) and ``token_ids.u32`` (each row's piece id).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from routecore.errors import InvalidArgumentError, ModelError
from routecore.hub import models

#: model2vec's default SIF coefficient.
SIF_COEFFICIENT = 1e-4
#: Pieces kept by score in a unigram vocabulary when ``vocab`` is not given.
DEFAULT_UNIGRAM_VOCAB = 30_000
#: Pieces run through the model per ONNX call.
BATCH = 1024
EMBEDDINGS = "embeddings.f16"
TOKEN_IDS = "token_ids.u32"


@dataclass(frozen=True)
class DistillReport:
    """What :func:`distill` built and what it cost."""

    path: str
    source: str
    rows: int
    vocab_size: int
    dims: int
    pruning: str
    explained_variance: float
    build_seconds: float
    encode_seconds: float
    threads: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_corpus(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Texts of ``paths``: each line's ``text`` in a ``.jsonl`` file, else each line."""
    out: list[str] = []
    for p in paths:
        for line in Path(p).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            if str(p).endswith(".jsonl"):
                text = json.loads(line).get("text")
                if isinstance(text, str):
                    out.append(text)
            else:
                out.append(line)
    return out


def static_name(source: Path) -> str:
    """The cache name of ``source``'s table: ``<folder name>-static``."""
    return f"{source.name}-static"


def distill(
    model: str | os.PathLike[str] | None = None,
    *,
    dims: int = 256,
    vocab: int | None = None,
    corpus: Iterable[str] = (),
    dest: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    variant: str | None = None,
) -> DistillReport:
    """Build ``model``'s static table (see the module docs); returns what was built.

    Raises:
        InvalidArgumentError: ``dims`` or ``vocab`` out of range.
        ModelError: the model folder cannot be read.
    """
    import onnxruntime as ort  # type: ignore[import-untyped]
    from tokenizers import Tokenizer

    t0 = time.perf_counter()
    src = models.resolve(model)
    cfg = json.loads((src / "config.json").read_text(encoding="utf-8"))
    if cfg.get("kind") == "static":
        raise ModelError(f"{src} is already a static table")
    if cfg.get("pooling") not in ("mean", "cls"):
        raise ModelError(f"{src}: pooling {cfg.get('pooling')!r}: distillation needs mean or cls")
    hidden = int(cfg["dim"])
    if isinstance(dims, bool) or not isinstance(dims, int) or not 2 <= dims <= hidden:
        raise InvalidArgumentError(f"dims must be a whole number between 2 and {hidden}, got {dims!r}")
    if vocab is not None and (isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < dims):
        raise InvalidArgumentError(f"vocab must be a whole number of at least dims ({dims}), got {vocab!r}")
    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    spec = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))["model"]
    ids, proba, rule = _kept(tok, spec, vocab, corpus)
    specials = tok.encode("", add_special_tokens=True).ids
    if len(specials) != 2:
        raise ModelError(f"{src}: expected one start and one end special token, got {specials}")
    onnx = _onnx_file(src, cfg, variant)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads or len(os.sched_getaffinity(0))
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(onnx), opts, providers=["CPUExecutionProvider"])
    out_name = cfg.get("output") or sess.get_outputs()[0].name
    t1 = time.perf_counter()
    pooled = _encode_pieces(sess, out_name, ids, specials, cfg["pooling"], hidden)
    encode_s = time.perf_counter() - t1
    table, explained = _pca(pooled, dims)
    table *= (SIF_COEFFICIENT / (SIF_COEFFICIENT + proba))[:, None].astype(np.float32)
    folder = Path(dest) if dest is not None else models.home() / "models" / static_name(src)
    report = DistillReport(
        path=str(folder),
        source=src.name,
        rows=len(ids),
        vocab_size=tok.get_vocab_size(),
        dims=dims,
        pruning=rule,
        explained_variance=round(explained, 4),
        build_seconds=0.0,
        encode_seconds=round(encode_s, 1),
        threads=opts.intra_op_num_threads,
    )
    report = _write(folder, src, cfg, onnx, ids, table, report, time.perf_counter() - t0)
    return report


def _onnx_file(src: Path, cfg: dict[str, Any], variant: str | None) -> Path:
    named: dict[str, str] = cfg.get("models") or {}
    if variant is not None:
        if variant not in named:
            raise ModelError(f"{src}: no variant {variant!r} (variants: {sorted(named)})")
        return src / named[variant]
    if cfg.get("onnx"):
        return src / str(cfg["onnx"])
    for pick in ("fp32", "int8"):  # the most exact graph the folder has
        if pick in named:
            return src / named[pick]
    if named:
        return src / next(iter(named.values()))
    raise ModelError(f"{src}: config.json names no ONNX file")


def _kept(
    tok: Any, spec: dict[str, Any], vocab: int | None, corpus: Iterable[str]
) -> tuple[np.ndarray, np.ndarray, str]:
    """Piece ids to keep (sorted), each one's probability, and the rule in words."""
    size = tok.get_vocab_size()
    special = {int(t["id"]) for t in json.loads(tok.to_str())["added_tokens"] if t.get("special")}
    if spec.get("type") == "Unigram":
        scores = np.array([float(s) for _, s in spec["vocab"]], dtype=np.float64)
        n = DEFAULT_UNIGRAM_VOCAB if vocab is None else vocab
        top = set(np.argsort(-scores, kind="stable")[:n].tolist())
        seen: set[int] = set()
        texts = list(corpus)
        for i in range(0, len(texts), 4096):
            for e in tok.encode_batch(texts[i : i + 4096], add_special_tokens=False):
                seen.update(e.ids)
        keep = sorted((top | seen) - special)
        p = np.exp(scores[keep])
        rule = (
            f"unigram: the {n} highest-scored pieces plus the {len(seen)} pieces of {len(texts)} corpus texts"
        )
        return np.array(keep, dtype=np.int64), p / np.exp(scores).sum(), rule
    n = size if vocab is None else min(vocab, size)
    keep = [i for i in range(n) if i not in special]
    rank = np.arange(len(keep), dtype=np.float64) + 2.0  # Zipf over the ids as ranks (model2vec)
    rule = "whole vocabulary" if n == size else f"the first {n} ids"
    return np.array(keep, dtype=np.int64), (1 / rank) / (1 / rank).sum(), f"{rule}, Zipf weights by id"


def _encode_pieces(
    sess: Any, out_name: str, ids: np.ndarray, specials: Sequence[int], pooling: str, hidden: int
) -> np.ndarray:
    out = np.empty((len(ids), hidden), dtype=np.float32)
    mask = np.ones((BATCH, 3), dtype=np.int64)
    for i in range(0, len(ids), BATCH):
        chunk = ids[i : i + BATCH]
        x = np.stack(
            [np.full(len(chunk), specials[0]), chunk, np.full(len(chunk), specials[1])], axis=1
        ).astype(np.int64)
        feeds = {"input_ids": x, "attention_mask": mask[: len(chunk)]}
        names = {n.name for n in sess.get_inputs()}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(x)
        h = sess.run([out_name], feeds)[0]
        out[i : i + len(chunk)] = h.mean(axis=1) if pooling == "mean" else h[:, 0]
    return out


def _pca(x: np.ndarray, dims: int) -> tuple[np.ndarray, float]:
    """``x`` centred and projected on its first ``dims`` principal axes; the variance kept."""
    centred = (x - x.mean(axis=0)).astype(np.float64)
    cov = centred.T @ centred
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1][:dims]
    explained = float(vals[order].sum() / vals.sum())
    return (centred @ vecs[:, order]).astype(np.float32), explained


def _write(
    folder: Path,
    src: Path,
    cfg: dict[str, Any],
    onnx: Path,
    ids: np.ndarray,
    table: np.ndarray,
    report: DistillReport,
    seconds: float,
) -> DistillReport:
    """The model folder, written under a temporary name and renamed into place."""
    digest = hashlib.sha256()
    with open(onnx, "rb") as f:
        while chunk := f.read(1 << 22):
            digest.update(chunk)
    source_id = f"{src.name}:{digest.hexdigest()[:16]}"  # as Encoder.model_id of that graph
    report = DistillReport(**{**report.to_dict(), "build_seconds": round(seconds, 1)})
    config = {
        "kind": "static",
        "dim": table.shape[1],
        "rows": table.shape[0],
        "dtype": "float16",
        "normalize": True,
        "max_length": int(cfg.get("max_length", 512)),
        "source_model": source_id,
        "source_onnx": onnx.name,
        "pooling": "mean",
        "sif_coefficient": SIF_COEFFICIENT,
        "distill": report.to_dict() | {"path": None},
        "license": cfg.get("license"),
    }
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
    old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        shutil.copyfile(src / "tokenizer.json", tmp / "tokenizer.json")
        table.astype("<f2").tofile(tmp / EMBEDDINGS)
        ids.astype("<u4").tofile(tmp / TOKEN_IDS)
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        if folder.exists():  # the old table moves aside, the new one in, then the old one goes
            folder.rename(old)
        tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not folder.exists():
            old.rename(folder)  # the old table stays
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)
    return report
