"""HTTP to a Hugging Face-compatible hub for `models pull`: checked listings, retries, resume.

:class:`Client` maps HTTP errors to :class:`Transient` (5xx, 408, 429, dropped or refused
connections, timeouts, short bodies, stalls: another attempt may succeed) or
:class:`~routecore.errors.DownloadError` (the rest), retries with exponential backoff
(a numeric ``Retry-After`` is honoured up to a minute) and resumes a partial file with
``Range``. ``$HF_TOKEN`` goes as a bearer token to the hub's origin only, never to a
host that it redirects to (a CDN). :mod:`routecore.hub.models_pull` describes the whole pull.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, TypeVar
from urllib.parse import urlsplit

from routecore.errors import DownloadError
from routecore.hub.hf_cache import SHA1, Entry, verify
from routecore.hub.model_source import SHA256, safe_rel_path

TOKEN_ENV = "HF_TOKEN"
#: First wait between attempts in seconds; it doubles each time, up to BACKOFF_MAX_S.
BACKOFF_S = 0.5
BACKOFF_MAX_S = 8.0
#: Slower than this over a whole ``timeout`` (however steady) is a stall, retried like a timeout.
STALL_BYTES_PER_S = 1024
CHUNK = 1 << 20
USER_AGENT = "routecore-models-pull"
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
_T = TypeVar("_T")
Note = Callable[[str], None]


class Transient(Exception):
    """A failure that another attempt may not meet: 5xx, a dropped connection, a short body, a stall."""

    def __init__(self, message: str, wait: Optional[float] = None) -> None:
        super().__init__(message)
        self.wait = wait


class RangeRefused(Transient):
    """HTTP 416: the server will not resume where the partial file ends."""


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
        if not safe_rel_path(path) or path.rpartition("/")[0] != folder:
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
            out[path] = Entry(path, size, git_sha1=oid if oid and SHA1.fullmatch(oid) else None)
            continue
        sha = lfs.get("oid", lfs.get("sha256")) if isinstance(lfs, dict) else None
        if not isinstance(sha, str) or not SHA256.fullmatch(sha):
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


def _chunks(r: Any, url: str, window: float) -> Iterator[bytes]:
    """The body of ``r`` as it arrives; a broken connection or a stall is transient.

    ``read1`` returns what one receive brings, so a trickle is seen as it happens: fewer
    than ``STALL_BYTES_PER_S`` per second over ``window`` seconds is a stall.
    """
    read = getattr(r, "read1", r.read)
    start, got = time.monotonic(), 0
    while True:
        try:
            chunk = read(CHUNK)
        except (OSError, http.client.HTTPException) as e:
            raise Transient(f"connection to {url} broke: {e!r}") from None
        if not chunk:
            return
        yield chunk
        got += len(chunk)
        elapsed = time.monotonic() - start
        if elapsed >= window:
            if got < STALL_BYTES_PER_S * elapsed:
                raise Transient(
                    f"{url} stalled: {got} bytes in {elapsed:.1f} s (under {STALL_BYTES_PER_S} bytes/s)"
                )
            start, got = time.monotonic(), 0


class Client:
    """HTTP to one hub: headers and token, error mapping, retries, downloads."""

    def __init__(self, base: str, timeout: float, retries: int, note: Note) -> None:
        self.base, self.timeout, self.retries, self.note = base, timeout, max(0, retries), note
        self.token = os.environ.get(TOKEN_ENV) or None
        self.opener = urllib.request.build_opener(_TokenStaysHome())

    def open(self, url: str, headers: Optional[dict[str, str]] = None) -> Any:
        """The response to GET ``url``; HTTP errors become Transient or DownloadError."""
        req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, **(headers or {})})
        if self.token and _origin(url) == _origin(self.base):
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            return self.opener.open(req, timeout=self.timeout)
        except urllib.error.HTTPError as e:
            e.close()
            if e.code >= 500 or e.code in (408, 429):
                raise Transient(
                    f"HTTP {e.code} from {url}", _retry_after(e.headers.get("Retry-After"))
                ) from None
            if e.code == 416:
                raise RangeRefused(f"HTTP 416 from {url}") from None
            hint = f" (set {TOKEN_ENV} for a gated or private repository)" if e.code in (401, 403) else ""
            raise DownloadError(f"HTTP {e.code} {e.reason} from {url}{hint}") from None
        except ValueError as e:
            raise DownloadError(f"bad hub URL {url!r}: {e}") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            raise Transient(f"cannot reach {url}: {getattr(e, 'reason', None) or e!r}") from None

    def retrying(self, what: str, fn: Callable[[], _T]) -> _T:
        """``fn()``, retried with backoff while it fails transiently."""
        for attempt in range(self.retries + 1):
            try:
                return fn()
            except Transient as e:
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
                for chunk in _chunks(r, url, self.timeout):
                    body += chunk
                    if len(body) > limit:
                        raise DownloadError(f"{url} sends more than {limit} bytes")
            if expected is not None and len(body) != expected:
                raise Transient(f"{url}: connection closed after {len(body)} of {expected} bytes")
            return bytes(body)

        return self.retrying(f"GET {url}", once)

    def download(
        self, url: str, entry: Entry, sha256: Optional[str], part: Path, show: Callable[[int], None]
    ) -> None:
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
        problem = verify(part, entry, sha256)
        if problem:
            part.unlink()
            if have:  # the bytes kept from before may be the bad ones: start over
                raise Transient(f"resumed {entry.path} failed its checksum ({problem}); downloading it again")
            raise DownloadError(f"checksum mismatch for {entry.path} from {url}: {problem}")

    def _fetch(self, url: str, entry: Entry, part: Path, have: int, show: Callable[[int], None]) -> None:
        try:
            r = self.open(url, {"Range": f"bytes={have}-"} if have else None)
        except RangeRefused:
            part.unlink()
            raise Transient(f"{url} refused to resume at byte {have}; starting over") from None
        with r:
            if have and r.status == 206:
                m = _CONTENT_RANGE.fullmatch(r.headers.get("Content-Range", "").strip())
                if not m or (int(m[1]), int(m[2]), int(m[3])) != (have, entry.size - 1, entry.size):
                    raise DownloadError(
                        f"{url}: Content-Range {r.headers.get('Content-Range')!r} "
                        f"does not continue byte {have} of {entry.size}"
                    )
            else:
                have = 0  # the server sends the whole file
            length = _content_length(r, url)
            if length is not None and length != entry.size - have:
                raise DownloadError(
                    f"{url}: Content-Length {length} but the listing gives {entry.size} bytes"
                    + (f" ({entry.size - have} from byte {have})" if have else "")
                )
            done = have
            # The part file's name is predictable: never follow a link planted there.
            flags = (
                os.O_WRONLY
                | os.O_CREAT
                | (os.O_APPEND if have else os.O_TRUNC)
                | getattr(os, "O_NOFOLLOW", 0)
            )
            with os.fdopen(os.open(part, flags, 0o644), "ab" if have else "wb") as f:
                for chunk in _chunks(r, url, self.timeout):
                    done += len(chunk)
                    if done > entry.size:
                        raise DownloadError(f"{url} sends more than the {entry.size} bytes listed")
                    f.write(chunk)
                    show(done)
        if done < entry.size:
            raise Transient(f"{url}: connection closed after {done} of {entry.size} bytes")
