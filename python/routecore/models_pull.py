"""The network half of `routecore models pull`: checked, retried, resumable, locked and atomic.

A pull of a :class:`~routecore.models.ModelSource` into the folder ``T``
(``$ROUTECORE_HOME/models/NAME``):

1. holds ``.T.lock`` next to ``T`` (``fcntl.flock``, released even if the process
   dies), so a second pull of the same model waits, then finds it installed; it
   also removes the temporary folders that a killed pull left;
2. lists each folder of the repository (``/api/models/{repo}/tree/{revision}/{folder}``)
   and checks the listing: a JSON list of objects, each a direct child of that
   folder with a plain relative ``path``, an integer ``size`` and, for LFS files, an
   ``lfs.oid`` SHA-256 whose ``lfs.size`` agrees. Anything else, including a path
   with ``..`` or an absolute one, is a :class:`~routecore.errors.DownloadError`;
3. downloads each file (``/{repo}/resolve/{revision}/{path}``) into a fresh
   ``tempfile.mkdtemp`` folder next to ``T``, checks ``Content-Length`` and the byte
   count against the listed size, then the SHA-256 (the model's pin, else the LFS
   listing) or, for a non-LFS file, the git blob id that the listing gives as ``oid``;
4. writes ``config.json`` and renames the folder to ``T``. An installed ``T`` is set
   aside only then, and deleted once the new folder is in place, so a bad download
   never touches it.

HTTP 5xx, 408 and 429, refused or dropped connections, timeouts and short bodies are
retried with exponential backoff (a numeric ``Retry-After`` is honoured up to a
minute). A file whose SHA-256 is known downloads into ``.T.downloads/`` and resumes
there with a ``Range`` request, within a pull and across pulls; if a resumed file
fails its checksum, it is downloaded again from the start.

The endpoint is ``$ROUTECORE_HUB_ENDPOINT``, else ``$HF_ENDPOINT``, else
``https://huggingface.co``. ``$HF_TOKEN`` goes as ``Authorization: Bearer`` to that
endpoint's origin only, never to a host that it redirects to (a CDN).
``$HF_HUB_OFFLINE=1`` refuses any download.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator, Optional, TypeVar
from urllib.parse import quote, urlsplit

from routecore.errors import DownloadError
from routecore.models import _SHA256, HUB_ENV, ModelSource, _safe_rel_path

try:
    import fcntl
except ImportError:  # not POSIX: no lock; temporary names still never collide
    fcntl = None  # type: ignore[assignment]

DEFAULT_ENDPOINT = "https://huggingface.co"
ENDPOINT_ENV = "HF_ENDPOINT"
TOKEN_ENV = "HF_TOKEN"
OFFLINE_ENV = "HF_HUB_OFFLINE"
#: First wait between attempts in seconds; it doubles each time, up to BACKOFF_MAX_S.
BACKOFF_S = 0.5
BACKOFF_MAX_S = 8.0
LISTING_MAX_BYTES = 32 << 20
CHUNK = 1 << 20
USER_AGENT = "routecore-models-pull"
_SHA1 = re.compile(r"[0-9a-f]{40}")
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
_T = TypeVar("_T")
Note = Callable[[str], None]


class _Transient(Exception):
    """A failure that another attempt may not meet: 5xx, a dropped connection, a short body."""

    def __init__(self, message: str, wait: Optional[float] = None) -> None:
        super().__init__(message)
        self.wait = wait


class _RangeRefused(_Transient):
    """HTTP 416: the server will not resume where the partial file ends."""


@dataclass(frozen=True)
class Entry:
    """One file of a checked listing: its path from the repository root, size and hashes."""

    path: str
    size: int
    sha256: Optional[str] = None
    git_sha1: Optional[str] = None


def offline() -> bool:
    """``$HF_HUB_OFFLINE`` is set to a true value (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(OFFLINE_ENV, "").strip().upper() in ("1", "ON", "YES", "TRUE")


def endpoint() -> str:
    """The hub's base URL: ``$ROUTECORE_HUB_ENDPOINT``, ``$HF_ENDPOINT`` or the Hugging Face hub."""
    return (os.environ.get(HUB_ENV) or os.environ.get(ENDPOINT_ENV) or DEFAULT_ENDPOINT).rstrip("/")


def _size(value: Any) -> Optional[int]:
    """``value`` if it is a non-negative int (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse_listing(raw: bytes, folder: str, url: str) -> dict[str, Entry]:
    """The files of one tree listing by path; raises DownloadError on anything malformed."""

    def bad(why: str) -> DownloadError:
        return DownloadError(f"malformed file listing from {url}: {why}")

    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise bad(f"not JSON ({e})") from None
    if not isinstance(data, list):
        raise bad(f"expected a JSON list, got {type(data).__name__}")
    out: dict[str, Entry] = {}
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise bad(f"entry {i} is a {type(row).__name__}, not an object")
        path, kind = row.get("path"), row.get("type", "file")
        if not isinstance(path, str) or not isinstance(kind, str):
            raise bad(f"entry {i} needs a string 'path' and 'type'")
        if not _safe_rel_path(path) or path.rpartition("/")[0] != folder:
            raise bad(f"entry {i} path {path!r} is not a plain relative path inside {folder or 'the root'!r}")
        if kind != "file":
            continue
        size, lfs, oid = _size(row.get("size")), row.get("lfs"), row.get("oid")
        if size is None:
            raise bad(f"{path!r} has no non-negative integer 'size' ({row.get('size')!r})")
        if path in out:
            raise bad(f"{path!r} is listed twice")
        if lfs is None:
            if oid is not None and not isinstance(oid, str):
                raise bad(f"{path!r} has a non-string 'oid' ({oid!r})")
            out[path] = Entry(path, size, git_sha1=oid if oid and _SHA1.fullmatch(oid) else None)
            continue
        sha = lfs.get("oid", lfs.get("sha256")) if isinstance(lfs, dict) else None
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            raise bad(f"{path!r} has an 'lfs' without a SHA-256 'oid' ({lfs!r})")
        if "size" in lfs and _size(lfs["size"]) != size:
            raise bad(f"{path!r}: lfs.size {lfs['size']!r} is not size {size}")
        out[path] = Entry(path, size, sha256=sha)
    return out


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class _TokenStaysHome(urllib.request.HTTPRedirectHandler):
    """Follows redirects, dropping ``Authorization`` when one leaves the origin (a CDN)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            new.remove_header("Authorization")
        return new


def _retry_after(value: Optional[str]) -> Optional[float]:
    try:
        return min(max(float(value), 0.0), 60.0) if value is not None else None
    except ValueError:  # an HTTP date: use the backoff
        return None


def _content_length(r: Any, url: str) -> Optional[int]:
    value = r.headers.get("Content-Length")
    if value is None:
        return None
    n = int(value) if value.strip().isascii() and value.strip().isdigit() else None
    if n is None:
        raise DownloadError(f"{url}: bad Content-Length {value!r}")
    return n


def _chunks(r: Any, url: str) -> Iterator[bytes]:
    """The body of ``r`` in chunks; a broken connection is transient."""
    while True:
        try:
            chunk = r.read(CHUNK)
        except (OSError, http.client.HTTPException) as e:
            raise _Transient(f"connection to {url} broke: {e!r}") from None
        if not chunk:
            return
        yield chunk


class _Client:
    """HTTP to one hub: headers and token, error mapping, retries, downloads."""

    def __init__(self, base: str, timeout: float, retries: int, note: Note) -> None:
        self.base, self.timeout, self.retries, self.note = base, timeout, max(0, retries), note
        self.token = os.environ.get(TOKEN_ENV) or None
        self.opener = urllib.request.build_opener(_TokenStaysHome())

    def open(self, url: str, headers: Optional[dict[str, str]] = None) -> Any:
        """The response to GET ``url``; HTTP errors become _Transient or DownloadError."""
        req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
        if self.token and _origin(url) == _origin(self.base):
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            return self.opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            e.close()
            if e.code >= 500 or e.code in (408, 429):
                raise _Transient(f"HTTP {e.code} from {url}", _retry_after(e.headers.get("Retry-After"))) from None
            if e.code == 416:
                raise _RangeRefused(f"HTTP 416 from {url}") from None
            hint = f" (set {TOKEN_ENV} for a gated or private repository)" if e.code in (401, 403) else ""
            raise DownloadError(f"HTTP {e.code} {e.reason} from {url}{hint}") from None
        except ValueError as e:
            raise DownloadError(f"bad hub URL {url!r}: {e}") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            raise _Transient(f"cannot reach {url}: {getattr(e, 'reason', None) or e!r}") from None

    def retrying(self, what: str, fn: Callable[[], _T]) -> _T:
        """``fn()``, retried with backoff while it fails transiently."""
        for attempt in range(self.retries + 1):
            try:
                return fn()
            except _Transient as e:
                if attempt == self.retries:
                    raise DownloadError(f"{what} failed after {attempt + 1} attempts: {e}") from None
                wait = e.wait if e.wait is not None else min(BACKOFF_S * 2**attempt, BACKOFF_MAX_S)
                self.note(f"{e}; retry {attempt + 1}/{self.retries} in {wait:.1f} s")
                time.sleep(wait)
        raise AssertionError("unreachable")

    def get_bytes(self, url: str, limit: int) -> bytes:
        """The whole body of ``url`` (at most ``limit`` bytes), retried."""

        def once() -> bytes:
            with self.open(url) as r:
                expected, body = _content_length(r, url), bytearray()
                for chunk in _chunks(r, url):
                    body += chunk
                    if len(body) > limit:
                        raise DownloadError(f"{url} sends more than {limit} bytes")
            if expected is not None and len(body) != expected:
                raise _Transient(f"{url}: connection closed after {len(body)} of {expected} bytes")
            return bytes(body)

        return self.retrying(f"GET {url}", once)

    def download(self, url: str, entry: Entry, sha256: Optional[str], part: Path, show: Callable[[int], None]) -> None:
        """One attempt to put ``entry``'s verified content at ``part``.

        With a known ``sha256`` the bytes already in ``part`` are kept and the rest
        requested with ``Range``; without one the download starts over.
        """
        if part.is_symlink():  # planted: drop the link, never read or write through it
            part.unlink()
        have = part.stat().st_size if sha256 and part.is_file() else 0
        if have > entry.size:
            part.unlink()
            have = 0
        if have < entry.size or entry.size == 0:
            self._fetch(url, entry, part, have, show)
        problem = _verify(part, entry, sha256)
        if problem:
            part.unlink()
            if have:  # the bytes kept from before may be the bad ones: start over
                raise _Transient(f"resumed {entry.path} failed its checksum ({problem}); downloading it again")
            raise DownloadError(f"checksum mismatch for {entry.path} from {url}: {problem}")

    def _fetch(self, url: str, entry: Entry, part: Path, have: int, show: Callable[[int], None]) -> None:
        try:
            r = self.open(url, {"Range": f"bytes={have}-"} if have else None)
        except _RangeRefused:
            part.unlink()
            raise _Transient(f"{url} refused to resume at byte {have}; starting over") from None
        with r:
            if have and r.status == 206:
                m = _CONTENT_RANGE.fullmatch(r.headers.get("Content-Range", "").strip())
                if not m or (int(m[1]), int(m[2]), int(m[3])) != (have, entry.size - 1, entry.size):
                    raise DownloadError(f"{url}: Content-Range {r.headers.get('Content-Range')!r} does not continue byte {have} of {entry.size}")
            else:
                have = 0  # the server sends the whole file
            length = _content_length(r, url)
            if length is not None and length != entry.size - have:
                raise DownloadError(f"{url}: Content-Length {length} but the listing gives {entry.size} bytes" + (f" ({entry.size - have} from byte {have})" if have else ""))
            done = have
            # The part file's name is predictable: never follow a link planted there.
            flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if have else os.O_TRUNC) | getattr(os, "O_NOFOLLOW", 0)
            with os.fdopen(os.open(part, flags, 0o644), "ab" if have else "wb") as f:
                for chunk in _chunks(r, url):
                    done += len(chunk)
                    if done > entry.size:
                        raise DownloadError(f"{url} sends more than the {entry.size} bytes listed")
                    f.write(chunk)
                    show(done)
        if done < entry.size:
            raise _Transient(f"{url}: connection closed after {done} of {entry.size} bytes")


def _verify(path: Path, entry: Entry, sha256: Optional[str]) -> Optional[str]:
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
    fd = os.open(target.parent / f".{target.name}.lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
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


def _listings(src: ModelSource, client: _Client) -> dict[str, Entry]:
    """The checked listing entries of every folder that ``src`` takes files from."""
    entries: dict[str, Entry] = {}
    rev = quote(src.revision, safe="")
    for folder in dict.fromkeys(src.repo_path(f).rpartition("/")[0] for f in src.files):
        url = f"{client.base}/api/models/{src.repo}/tree/{rev}/{quote(folder)}".rstrip("/")
        entries.update(parse_listing(client.get_bytes(url, LISTING_MAX_BYTES), folder, url))
    missing = [src.repo_path(f) for f in src.files if src.repo_path(f) not in entries]
    if missing:
        raise DownloadError(f"{src.repo} at {src.revision} has no {missing} (found {sorted(entries)})")
    return entries


def _expected_sha256(src: ModelSource, file: str, entry: Entry) -> Optional[str]:
    pin = src.sha256.get(file)
    if pin and entry.sha256 and pin != entry.sha256:
        raise DownloadError(f"{src.repo} {entry.path}: the hub lists SHA-256 {entry.sha256}, the pin is {pin} (another revision?)")
    return pin or entry.sha256


def _pull_locked(src: ModelSource, target: Path, client: _Client, quiet: bool) -> Path:
    entries = _listings(src, client)
    downloads = target.parent / f".{target.name}.downloads"
    staging = _temp_dir(target, "partial")
    rev = quote(src.revision, safe="")
    try:
        for file in src.files:
            entry, name = entries[src.repo_path(file)], PurePosixPath(file).name
            sha256 = _expected_sha256(src, file, entry)
            if sha256:
                downloads.mkdir(exist_ok=True)
            part = downloads / f"{sha256}.incomplete" if sha256 else staging / name
            url = f"{client.base}/{src.repo}/resolve/{rev}/{quote(entry.path)}"
            show = _silent if quiet else _progress(name, entry.size)
            client.retrying(f"download of {url}", partial(client.download, url, entry, sha256, part, show))
            if part != staging / name:
                os.replace(part, staging / name)
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


def pull_source(src: ModelSource, target: Path, *, force: bool, timeout: float, quiet: bool, retries: int) -> Path:
    """Install ``src`` at ``target`` as the module docstring describes; returns ``target``."""
    if (target / "config.json").is_file() and not force:
        return target
    if offline():
        raise DownloadError(f"{OFFLINE_ENV} is set: {src.repo} is not downloaded into {target} (unset {OFFLINE_ENV} to pull it)")
    note = _silent if quiet else _say
    client = _Client(endpoint(), timeout, retries, note)
    try:
        with _locked(target, note):
            if (target / "config.json").is_file() and not force:
                return target  # a concurrent pull installed it while this one waited
            _remove_leftovers(target)
            return _pull_locked(src, target, client, quiet)
    except OSError as e:
        raise DownloadError(f"cannot write the model folder {target}: {e}") from None
