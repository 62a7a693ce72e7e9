"""What a model file must be (:class:`Entry`, :func:`verify`) and where a user may already have it:
the Hugging Face hub cache, which `models pull` reads and never writes.

The cache is ``$HF_HUB_CACHE``, else ``$HUGGINGFACE_HUB_CACHE``, else ``$HF_HOME/hub``, else
``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub`` (as ``huggingface_hub``
resolves it). A repository lives in ``models--{org}--{name}/``: ``refs/{branch}`` holds a
commit SHA, ``snapshots/{commit}/{path}`` links to ``blobs/{etag}``, and the etag is the
file's SHA-256 (LFS) or its git blob id (plain git). Nothing found there is trusted: a
file is hard-linked (else copied) into the pull's staging folder and verified there like a
download, against the pin or the hub's listing, or, with no network, against the name of
its blob.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from routecore.hub.model_source import SHA256, safe_rel_path

HUB_CACHE_ENVS = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")
HOME_ENV = "HF_HOME"
CHUNK = 1 << 20
SHA1 = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True)
class Entry:
    """One file of a checked listing: its path from the repository root, size and hashes."""

    path: str
    size: int
    sha256: Optional[str] = None
    git_sha1: Optional[str] = None


def verify(path: Path, entry: Entry, sha256: Optional[str]) -> Optional[str]:
    """What is wrong with the content of ``path``, or None."""
    h = hashlib.sha256()
    git = hashlib.sha1(b"blob %d\0" % entry.size, usedforsecurity=False) if entry.git_sha1 else None
    size = 0
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            size += len(block)
            h.update(block)
            if git:
                git.update(block)
    if size != entry.size:
        return f"{size} bytes, the listing gives {entry.size}"
    if sha256 and h.hexdigest() != sha256:
        return f"SHA-256 {h.hexdigest()}, expected {sha256}"
    if git and git.hexdigest() != entry.git_sha1:
        return f"git blob id {git.hexdigest()}, the listing gives {entry.git_sha1}"
    return None


def hub_cache() -> Path:
    """The Hugging Face hub cache folder (which may not exist)."""
    for var in HUB_CACHE_ENVS:
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def repo_folder(repo: str) -> Path:
    return hub_cache() / ("models--" + repo.replace("/", "--"))


def commit(folder: Path, revision: str) -> Optional[str]:
    """The commit SHA of ``revision``: itself if it is one, else what ``refs/{revision}`` says."""
    if SHA1.fullmatch(revision):
        return revision
    ref = folder / "refs" / revision
    if not safe_rel_path(revision) or ref.is_symlink() or not ref.is_file():
        return None
    try:
        with open(ref, "rb") as f:
            text = f.read(100).decode("ascii", "replace").strip()
    except OSError:
        return None
    return text if SHA1.fullmatch(text) else None


def claims(blob: Path) -> tuple[Optional[str], Optional[str]]:
    """The ``(sha256, git blob id)`` that a blob's name stands for (None where it names neither)."""
    name = blob.name
    return (name if SHA256.fullmatch(name) else None), (name if SHA1.fullmatch(name) else None)


def candidates(
    repo: str, revision: str, repo_path: str, hashes: tuple[Optional[str], ...] = ()
) -> list[Path]:
    """Regular files inside the cache's folder for ``repo`` that may hold ``repo_path`` at ``revision``:
    the snapshot's entry, then the blobs named by ``hashes``. Paths are resolved; links that
    lead out of the repository's folder are ignored."""
    folder = repo_folder(repo)
    sha = commit(folder, revision)
    wanted = ([folder / "snapshots" / sha / repo_path] if sha else []) + [
        folder / "blobs" / h for h in hashes if h
    ]
    try:
        home = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return []
    out: list[Path] = []
    for p in wanted:
        try:
            real = p.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if real not in out and home in real.parents and real.is_file():
            out.append(real)
    return out


def place(src: Path, dest: Path, entry: Entry, sha256: Optional[str]) -> Optional[str]:
    """Hard-link (else copy) ``src`` to ``dest`` and verify what landed there.

    Returns what is wrong with it (``dest`` is then removed again), or None. The cache's
    file is only read: a hard link shares its bytes and adds a name outside the cache.
    """
    try:
        os.link(src, dest)
    except OSError:  # another filesystem, or not the user's file (fs.protected_hardlinks)
        try:
            shutil.copyfile(src, dest)
        except OSError as e:
            dest.unlink(missing_ok=True)
            return f"cannot be copied ({e})"
    problem = verify(dest, entry, sha256)
    if problem:
        dest.unlink()
    return problem
