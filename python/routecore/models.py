"""Model folders: the bundled default, the local cache and `models pull`.

``pull`` downloads from a Hugging Face-compatible hub: it lists the files of a
repository (``/api/models/{repo}/tree/{revision}/{subdir}``), whose LFS entries carry
a SHA-256, downloads each file (``/{repo}/resolve/{revision}/{path}``) with a
progress bar, verifies the checksum and writes ``config.json``. The endpoint is
``$ROUTECORE_HUB_ENDPOINT`` (default ``https://huggingface.co``), so tests point it at
a server on 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from routecore.errors import DownloadError, ModelError

DEFAULT_MODEL = "multilingual-e5-small"
HUB_ENV = "ROUTECORE_HUB_ENDPOINT"
HOME_ENV = "ROUTECORE_HOME"


@dataclass(frozen=True)
class ModelSource:
    """Where a named model comes from and the config written next to it.

    ``files`` are paths inside ``subdir`` of the repository, or from the
    repository's root when they start with ``/``; each lands in the model
    folder under its base name.
    """

    repo: str
    subdir: str
    files: tuple[str, ...]
    config: dict[str, Any] = field(default_factory=dict)
    revision: str = "main"

    def repo_path(self, file: str) -> str:
        """``file``'s path from the repository root."""
        return file[1:] if file.startswith("/") else f"{self.subdir}/{file}".lstrip("/")


#: Models that `routecore models pull NAME` knows. bge-m3: the official ONNX export
#: (dense output = CLS of last_hidden_state, 1024 dims, XLM-R tokenizer).
REGISTRY: dict[str, ModelSource] = {
    "bge-m3": ModelSource(
        repo="BAAI/bge-m3",
        subdir="onnx",
        files=("model.onnx", "model.onnx_data", "tokenizer.json"),
        config={
            "pooling": "cls",
            "normalize": True,
            "dim": 1024,
            "max_length": 8192,
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
        config={
            "pooling": "mean",
            "normalize": True,
            "dim": 384,
            "max_length": 256,
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
    return Path(__file__).resolve().parent / "models" / DEFAULT_MODEL


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


def list_models() -> list[dict[str, Any]]:
    """Bundled, pulled and pullable models."""
    out = [{"name": DEFAULT_MODEL, "path": str(bundled_model_dir()), "status": "bundled"}]
    root = home() / "models"
    pulled = sorted(p.name for p in root.iterdir() if (p / "config.json").is_file()) if root.is_dir() else []
    out += [{"name": n, "path": str(root / n), "status": "pulled"} for n in pulled]
    out += [{"name": n, "path": None, "status": "available"} for n in REGISTRY if n not in pulled]
    return out


def _endpoint() -> str:
    return os.environ.get(HUB_ENV, "https://huggingface.co").rstrip("/")


def _get_json(url: str, timeout: float) -> Any:
    import urllib.error  # network modules load only when a model is pulled
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return json.load(r)
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise DownloadError(f"cannot list files at {url}: {e}") from None


def _progress(name: str, total: int | None) -> Callable[[int], None]:
    tty = sys.stderr.isatty()
    last = [-1]

    def show(done: int) -> None:
        pct = int(done * 100 / total) if total else -1
        if pct == last[0] and done != total:
            return
        last[0] = pct
        size = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if total else f"{done / 1e6:.1f} MB"
        bar = "#" * (pct // 4) if pct >= 0 else ""
        line = f"{name:<24} [{bar:<25}] {max(pct, 0):3d}% {size}"
        if tty:
            sys.stderr.write("\r" + line + ("\n" if done == total else ""))
        elif pct % 25 == 0 or done == total:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    return show


def _download(url: str, dest: Path, sha256: str | None, size: int | None, timeout: float, quiet: bool) -> None:
    import urllib.error
    import urllib.request

    tmp = dest.with_name(dest.name + ".part")
    h = hashlib.sha256()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r, open(tmp, "wb") as f:
            total = size or int(r.headers.get("Content-Length") or 0) or None
            show = (lambda _: None) if quiet else _progress(dest.name, total)
            done = 0
            while chunk := r.read(1 << 20):
                f.write(chunk)
                h.update(chunk)
                done += len(chunk)
                show(done)
    except (urllib.error.URLError, OSError) as e:
        tmp.unlink(missing_ok=True)
        raise DownloadError(f"download of {url} failed: {e}") from None
    if sha256 and h.hexdigest() != sha256:
        tmp.unlink(missing_ok=True)
        raise DownloadError(f"checksum mismatch for {dest.name}: expected {sha256}, got {h.hexdigest()}")
    os.replace(tmp, dest)


def pull(name: str, *, dest: Path | None = None, force: bool = False, timeout: float = 60.0, quiet: bool = False) -> Path:
    """Download model ``name`` from the registry into the cache; returns its folder.

    Files are written under a temporary folder and moved into place only after
    every checksum matched, so an interrupted pull leaves no half model behind.
    """
    from urllib.parse import quote
    if name not in REGISTRY:
        raise ModelError(f"unknown model {name!r}; known: {sorted(REGISTRY)}")
    src = REGISTRY[name]
    target = dest or home() / "models" / name
    if (target / "config.json").is_file() and not force:
        return target
    base = _endpoint()
    entries: dict[str, dict[str, Any]] = {}
    for folder in dict.fromkeys(src.repo_path(f).rpartition("/")[0] for f in src.files):
        listing = _get_json(f"{base}/api/models/{src.repo}/tree/{src.revision}/{folder}".rstrip("/"), timeout)
        entries.update({e["path"]: e for e in listing if e.get("type", "file") == "file"})
    missing = [src.repo_path(f) for f in src.files if src.repo_path(f) not in entries]
    if missing:
        raise DownloadError(f"{src.repo} has no {missing} (found {sorted(entries)})")
    staging = target.with_name(target.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for fname in src.files:
        e = entries[src.repo_path(fname)]
        lfs = e.get("lfs") or {}
        sha = lfs.get("oid") or lfs.get("sha256") or e.get("sha256")
        path = quote(e["path"])
        _download(f"{base}/{src.repo}/resolve/{src.revision}/{path}", staging / Path(fname).name, sha, lfs.get("size") or e.get("size"), timeout, quiet)
    (staging / "config.json").write_text(json.dumps(src.config, indent=2))
    if target.exists():
        shutil.rmtree(target)
    os.replace(staging, target)
    return target
