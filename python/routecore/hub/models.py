"""Model folders: the bundled default, the local cache and `models pull`.

``pull`` downloads a model named in :data:`REGISTRY` from a Hugging Face-compatible
hub (or takes it from the Hugging Face cache) into ``$ROUTECORE_HOME/models/NAME``;
:mod:`routecore.hub.models_pull` does that part (listing checks, size and checksum
verification, retries, resume, the per-model lock and the atomic install).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routecore.errors import ModelError
from routecore.hub.model_source import HUB_ENV as HUB_ENV
from routecore.hub.model_source import ModelSource as ModelSource

DEFAULT_MODEL = "multilingual-e5-small"
HOME_ENV = "ROUTECORE_HOME"


#: Models that `routecore models pull NAME` knows, each pinned to a commit and every file
#: to its SHA-256. bge-m3: the official ONNX export (dense output = CLS of
#: last_hidden_state, 1024 dims, XLM-R tokenizer). The hubs cannot be reached from where
#: these pins were written, and shared/models holds re-exports, not these files: the
#: commits and hashes are the ones that several independent public projects pin for the
#: same files at the same commits (bge-m3 onnx/model.onnx 724,923 bytes, model.onnx_data
#: 2,266,820,608, onnx/tokenizer.json 17,082,821; MiniLM model_quint8_avx2.onnx 23,046,789,
#: tokenizer.json 466,247). A wrong pin refuses the pull, naming both hashes.
REGISTRY: dict[str, ModelSource] = {
    "bge-m3": ModelSource(
        repo="BAAI/bge-m3",
        subdir="onnx",
        files=("model.onnx", "model.onnx_data", "tokenizer.json"),
        revision="5617a9f61b028005a4858fdac845db406aefb181",
        sha256={
            "model.onnx": "f84251230831afb359ab26d9fd37d5936d4d9bb5d1d5410e66442f630f24435b",
            "model.onnx_data": "1eebfb28493f67bba03ce0ef64bfdc7fc5a3bd9d7493f818bb1d78cd798416b4",
            "tokenizer.json": "6710678b12670bc442b99edc952c4d996ae309a7020c1fa0096dd245c2faf790",
        },
        config={
            "pooling": "cls",
            "normalize": True,
            "dim": 1024,
            "max_length": 8192,
            "model_type": "xlm-roberta",
            "max_position_embeddings": 8194,
            "query_prefix": "",
            "passage_prefix": "",
            "onnx": "model.onnx",
            "output": "last_hidden_state",
            "pad_token_id": 1,
            "padding_side": "right",
            "source": "BAAI/bge-m3 ONNX export (MIT)",
        },
    ),
    # The English model that was bundled before multilingual-e5-small: the upstream
    # repository's own dynamic-int8 ONNX file (uint8 activations, runs on any x86-64).
    "all-minilm-l6-v2": ModelSource(
        repo="sentence-transformers/all-MiniLM-L6-v2",
        subdir="onnx",
        files=("model_quint8_avx2.onnx", "/tokenizer.json"),
        revision="c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
        sha256={
            "model_quint8_avx2.onnx": "b941bf19f1f1283680f449fa6a7336bb5600bdcd5f84d10ddc5cd72218a0fd21",
            "/tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        },
        config={
            "pooling": "mean",
            "normalize": True,
            "dim": 384,
            "max_length": 256,
            "model_type": "bert",
            "max_position_embeddings": 512,
            "query_prefix": "",
            "passage_prefix": "",
            "onnx": "model_quint8_avx2.onnx",
            "output": "last_hidden_state",
            "pad_token_id": 0,
            "padding_side": "right",
            "source": "sentence-transformers/all-MiniLM-L6-v2, onnx/model_quint8_avx2.onnx (Apache-2.0)",
            "license": "Apache-2.0",
        },
    ),
}


def bundled_model_dir() -> Path:
    """Folder of the model shipped inside the package."""
    return Path(__file__).resolve().parents[1] / "models" / DEFAULT_MODEL


def home() -> Path:
    """Cache root: ``$ROUTECORE_HOME`` or ``~/.cache/routecore``."""
    return Path(os.environ.get(HOME_ENV) or Path.home() / ".cache" / "routecore")


def resolve(name_or_path: str | os.PathLike[str] | None) -> Path:
    """A model folder from ``None``/a bundled name, a pulled name, or a path."""
    if name_or_path is None or str(name_or_path) in (DEFAULT_MODEL, "default"):
        return bundled_model_dir()
    p = Path(name_or_path).expanduser()
    if p.is_dir():
        return p
    cached = home() / "models" / str(name_or_path)
    if cached.is_dir():
        return cached
    hint = f"; run `routecore models pull {name_or_path}`" if str(name_or_path) in REGISTRY else ""
    raise ModelError(f"model {str(name_or_path)!r} is neither a folder nor a pulled model{hint}")


def check_model_files(folder: Path) -> None:
    """A :class:`ModelError` when ``config.json`` names an ONNX file (``onnx``, ``models``) outside the
    model folder: an absolute path, a ``..`` step, or a symbolic link that leads out of it. What else is
    wrong with the file is for the loader to say."""
    cfg = folder / "config.json"
    try:
        data = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(data, dict):
        return
    named = [("onnx", data.get("onnx"))]
    if isinstance(data.get("models"), dict):
        named += [(f"models.{k}", v) for k, v in data["models"].items()]
    root = folder.resolve()
    for key, rel in named:
        if not isinstance(rel, str):
            continue
        p = Path(rel)
        target = (folder / p).resolve()
        if p.is_absolute() or ".." in p.parts or root not in target.parents:
            raise ModelError(
                f"{cfg}: {key} names {rel!r}, which is outside the model folder {folder} "
                f"(it leads to {target}); the model's files must be inside its folder"
            )


@dataclass(frozen=True)
class ModelInfo:
    """A model :func:`list_models` knows: its ``name``, its folder (``path``; None until pulled) and
    its ``status``: ``bundled``, ``pulled``, ``distilled`` (a static table) or ``available``."""

    name: str
    path: str | None
    status: str

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``routecore models list --json``)."""
        return {"name": self.name, "path": self.path, "status": self.status}


def list_models() -> list[ModelInfo]:
    """Bundled, pulled (or distilled: static tables) and pullable models (a pull's or a distillation's
    hidden temporary folders are not models)."""
    out = [ModelInfo(DEFAULT_MODEL, str(bundled_model_dir()), "bundled")]
    root = home() / "models"
    pulled = (
        sorted(p.name for p in root.iterdir() if not p.name.startswith(".") and (p / "config.json").is_file())
        if root.is_dir()
        else []
    )
    out += [ModelInfo(n, str(root / n), _status(root / n)) for n in pulled]
    out += [ModelInfo(n, None, "available") for n in REGISTRY if n not in pulled]
    return out


def _status(folder: Path) -> str:
    """``distilled`` for a static table (``routecore models distill``), else ``pulled``."""
    try:
        kind = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        kind = None
    return "distilled" if kind == "static" else "pulled"


def pull(
    name: str,
    *,
    dest: Path | None = None,
    force: bool = False,
    timeout: float = 60.0,
    quiet: bool = False,
    retries: int = 4,
) -> Path:
    """Download model ``name`` from the registry into the cache; returns its folder.

    The model becomes visible only once every file matched its pin and the hub's
    listing (size, LFS SHA-256, git blob id) and the ``Content-Length``; a failed
    pull leaves the folder as it was, also with ``force``. Files already in the
    Hugging Face cache at the pinned revision are verified and used instead of
    downloaded (the cache is only read). Concurrent pulls of one model wait for each
    other. ``timeout`` bounds each wait for the server, and a transfer slower than
    1 KiB/s over ``timeout`` seconds is a stall; transient failures are retried
    ``retries`` times with backoff. The endpoint is ``$ROUTECORE_HUB_ENDPOINT``,
    else ``$HF_ENDPOINT``, else the Hugging Face hub; ``$HF_TOKEN`` is sent as a
    bearer token; with ``$HF_HUB_OFFLINE=1`` only the Hugging Face cache is used.
    Progress goes to stderr unless ``quiet``. Errors are
    :class:`~routecore.errors.ModelError` (unknown name) or
    :class:`~routecore.errors.DownloadError`.
    """
    if name not in REGISTRY:
        raise ModelError(f"unknown model {name!r}; known: {sorted(REGISTRY)}")
    from routecore.hub import models_pull  # network modules load only when a model is pulled

    target = Path(dest) if dest is not None else home() / "models" / name
    return models_pull.pull_source(
        REGISTRY[name], target, force=force, timeout=timeout, quiet=quiet, retries=retries
    )
