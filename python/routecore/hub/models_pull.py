"""`routecore models pull`: checked, retried, resumable, locked and atomic.

A pull of a :class:`~routecore.hub.model_source.ModelSource` into the folder ``T``
(``$ROUTECORE_HOME/models/NAME``):

1. holds ``.T.lock`` next to ``T`` (``fcntl.flock``, released even if the process
   dies), so a second pull of the same model waits, then finds it installed; it
   also removes the temporary folders that a killed pull left;
2. takes each file that the Hugging Face cache already holds, verified
   (:mod:`routecore.hub.hf_cache`): a pinned file before any network access, any other
   once the listing gives its hashes;
3. lists each folder of the repository that the other files are in
   (``/api/models/{repo}/tree/{revision}/{folder}``) and checks the listing: a JSON
   list of objects, each a direct child of that folder with a plain relative
   ``path``, an integer ``size`` and, for LFS files, an ``lfs.oid`` SHA-256 whose
   ``lfs.size`` agrees. Anything else, including a path with ``..`` or an absolute
   one, is a :class:`~routecore.errors.DownloadError`;
4. downloads each remaining file (``/{repo}/resolve/{revision}/{path}``) into a fresh
   ``tempfile.mkdtemp`` folder next to ``T``, checks ``Content-Length`` and the byte
   count against the listed size, then the SHA-256 (the model's pin, else the LFS
   listing) or, for a non-LFS file, the git blob id that the listing gives as ``oid``;
5. writes ``config.json`` and renames the folder to ``T``. An installed ``T`` is set
   aside only then, and deleted once the new folder is in place, so a bad download
   never touches it.

HTTP 5xx, 408 and 429, refused or dropped connections, timeouts and short bodies are
retried with exponential backoff (a numeric ``Retry-After`` is honoured up to a
minute). ``timeout`` bounds each wait for the server; a server that keeps sending
but below ``STALL_BYTES_PER_S`` over a ``timeout``-long stretch is a stall, retried
the same way, so a trickle cannot hold a pull forever. A file whose SHA-256 is known
downloads into ``.T.downloads/`` and resumes there with a ``Range`` request, within
a pull and across pulls; if a resumed file fails its checksum, it is downloaded
again from the start.

The endpoint is ``$ROUTECORE_HUB_ENDPOINT``, else ``$HF_ENDPOINT``, else
``https://huggingface.co``. ``$HF_TOKEN`` goes as ``Authorization: Bearer`` to that
endpoint's origin only, never to a host that it redirects to (a CDN). With
``$HF_HUB_OFFLINE=1`` nothing touches the network: a model that the Hugging Face
cache holds complete at the pinned revision installs from it, anything else is a
DownloadError naming each missing or failing file.

The Hugging Face cache is read, never written: a pull writes only under
``$ROUTECORE_HOME`` (the project's rule: no surprise files), and filling another
tool's cache would be one. Files taken from it are hard links where possible, so
they cost no second copy of the bytes.

``huggingface_hub`` is not a dependency, not even an optional one: the 2.4.0 wheel is
0.86 MB, and with the 13 packages it needs that routecore does not (``hf-xet`` alone
a 4.3 MB wheel, 11.4 MB installed) it downloads 6.4 MB and installs 29.8 MB, against
30 KB of stdlib-only source here (this module, :mod:`routecore.hub.hub_http`,
:mod:`routecore.hub.hf_cache`). It writes into its own cache by default, and what it adds
(Xet chunked transfers, parallel files) does not pay for that on three-file models.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from contextlib import contextmanager
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator, Optional
from urllib.parse import quote

from routecore.errors import DownloadError
from routecore.hub import hf_cache
from routecore.hub.hf_cache import Entry
from routecore.hub.hub_http import TOKEN_ENV, Client, Note, parse_listing  # noqa: F401 - TOKEN_ENV: one place for the HF_* names
from routecore.hub.model_source import HUB_ENV, ModelSource

try:
    import fcntl
except ImportError:  # not POSIX: no lock; temporary names still never collide
    fcntl = None  # type: ignore[assignment]

DEFAULT_ENDPOINT = "https://huggingface.co"
ENDPOINT_ENV = "HF_ENDPOINT"
OFFLINE_ENV = "HF_HUB_OFFLINE"
LISTING_MAX_BYTES = 32 << 20


def offline() -> bool:
    """``$HF_HUB_OFFLINE`` is set to a true value (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(OFFLINE_ENV, "").strip().upper() in ("1", "ON", "YES", "TRUE")


def endpoint() -> str:
    """The hub's base URL: ``$ROUTECORE_HUB_ENDPOINT``, ``$HF_ENDPOINT`` or the Hugging Face hub."""
    return (os.environ.get(HUB_ENV) or os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT).rstrip("/")


def _progress(name: str, total: Optional[int]) -> Callable[[int], None]:
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


def _say(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _silent(_: Any) -> None:
    pass


@contextmanager
def _locked(target: Path, note: Note) -> Iterator[None]:
    """Hold the per-model lock ``.NAME.lock`` next to ``target``, waiting for it if needed."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    fd = os.open(
        target.parent / f".{target.name}.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644
    )
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            note(f"waiting for another pull of {target.name}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock; the file stays (deleting it would race)


def _temp_dir(target: Path, kind: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=f".{kind}", dir=target.parent))


def _remove_leftovers(target: Path) -> None:
    """Delete the temporary folders of pulls of ``target`` that died (call under the lock)."""
    mine = re.compile(re.escape(f".{target.name}.") + r"[a-z0-9_]{8}\.(partial|old)")
    for p in target.parent.iterdir():
        if mine.fullmatch(p.name) and p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)


def _install(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``; an existing ``target`` is set aside first and deleted last."""
    if not (target.exists() or target.is_symlink()):
        os.replace(staging, target)
        return
    old = _temp_dir(target, "old")
    os.replace(target, old / "model")
    try:
        os.replace(staging, target)
    except OSError:
        os.replace(old / "model", target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _listings(src: ModelSource, client: Client, files: list[str]) -> dict[str, Entry]:
    """The checked listing entries of every folder that ``files`` (of ``src``) are in."""
    entries: dict[str, Entry] = {}
    rev = quote(src.revision, safe="")
    for folder in dict.fromkeys(src.repo_path(f).rpartition("/")[0] for f in files):
        url = f"{client.base}/api/models/{src.repo}/tree/{rev}/{quote(folder)}".rstrip("/")
        entries.update(parse_listing(client.get_bytes(url, LISTING_MAX_BYTES), folder, url))
    missing = [src.repo_path(f) for f in files if src.repo_path(f) not in entries]
    if missing:
        raise DownloadError(f"{src.repo} at {src.revision} has no {missing} (found {sorted(entries)})")
    return entries


def _expected_sha256(src: ModelSource, file: str, entry: Entry) -> Optional[str]:
    pin = src.sha256.get(file)
    if pin and entry.sha256 and pin != entry.sha256:
        raise DownloadError(
            f"{src.repo} {entry.path}: the hub lists SHA-256 {entry.sha256}, "
            f"the pin is {pin} (another revision?)"
        )
    return pin or entry.sha256


def _from_cache(
    src: ModelSource, file: str, entry: Optional[Entry], sha256: Optional[str], dest: Path, note: Note
) -> Optional[str]:
    """Put ``file`` at ``dest`` from the Hugging Face cache, verified; None once done, else why not.

    The expected content is ``sha256`` and ``entry`` (from the listing); without a
    listing, a file whose SHA-256 is not pinned is held to the name of its blob.
    """
    path = src.repo_path(file)
    why = "not in the cache"
    for blob in hf_cache.candidates(
        src.repo, src.revision, path, (sha256, entry.git_sha1 if entry else None)
    ):
        named_sha, named_git = hf_cache.claims(blob)
        want = entry or Entry(
            path, blob.stat().st_size, sha256 or named_sha, None if sha256 or named_sha else named_git
        )
        sha = sha256 or want.sha256
        if (named_sha and sha and named_sha != sha) or (
            named_git and want.git_sha1 and named_git != want.git_sha1
        ):
            why = f"the cache holds another version ({blob.name})"
            continue
        if not (sha or want.git_sha1):
            why = f"{blob} cannot be checked (no pinned SHA-256, and it is not a blob named by its hash)"
            continue
        problem = hf_cache.place(blob, dest, want, sha)
        if problem is None:
            note(f"{path}: taken from the Hugging Face cache ({blob})")
            return None
        why = f"{blob} failed its check: {problem}"
        note(f"{path}: {why}; not using it")
    return why


def _pull_locked(src: ModelSource, target: Path, client: Client, quiet: bool) -> Path:
    downloads = target.parent / f".{target.name}.downloads"
    staging = _temp_dir(target, "partial")
    rev = quote(src.revision, safe="")
    name = {f: PurePosixPath(f).name for f in src.files}
    try:
        # A pinned file needs no listing; with no network, neither does one that a blob name vouches for.
        missing = {
            f: _from_cache(src, f, None, src.sha256.get(f), staging / name[f], client.note)
            for f in src.files
            if f in src.sha256 or offline()
        }
        pending = [f for f in src.files if missing.get(f, "") is not None]
        if pending and offline():
            what = "; ".join(f"{src.repo_path(f)}: {missing[f]}" for f in pending)
            raise DownloadError(
                f"{OFFLINE_ENV} is set and the Hugging Face cache {hf_cache.repo_folder(src.repo)} lacks "
                f"{src.repo} at {src.revision}: {what} (unset {OFFLINE_ENV} to download)"
            )
        entries = _listings(src, client, pending) if pending else {}
        for file in pending:
            entry = entries[src.repo_path(file)]
            sha256 = _expected_sha256(src, file, entry)
            if file not in missing and (sha256 or entry.git_sha1):
                if _from_cache(src, file, entry, sha256, staging / name[file], client.note) is None:
                    continue
            if sha256:
                downloads.mkdir(exist_ok=True)
            part = downloads / f"{sha256}.incomplete" if sha256 else staging / name[file]
            url = f"{client.base}/{src.repo}/resolve/{rev}/{quote(entry.path)}"
            show = _silent if quiet else _progress(name[file], entry.size)
            client.retrying(f"download of {url}", partial(client.download, url, entry, sha256, part, show))
            if part != staging / name[file]:
                os.replace(part, staging / name[file])
        (staging / "config.json").write_text(json.dumps(src.config, indent=2))
        _install(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already once installed
        try:
            downloads.rmdir()  # kept only while it holds partial files to resume
        except OSError:
            pass
    shutil.rmtree(downloads, ignore_errors=True)
    return target


def pull_source(
    src: ModelSource, target: Path, *, force: bool, timeout: float, quiet: bool, retries: int
) -> Path:
    """Install ``src`` at ``target`` as the module docstring describes; returns ``target``."""
    if (target / "config.json").is_file() and not force:
        return target
    note = _silent if quiet else _say
    client = Client(endpoint(), timeout, retries, note)
    try:
        with _locked(target, note):
            if (target / "config.json").is_file() and not force:
                return target  # a concurrent pull installed it while this one waited
            _remove_leftovers(target)
            return _pull_locked(src, target, client, quiet)
    except OSError as e:
        raise DownloadError(f"cannot write the model folder {target}: {e}") from None
