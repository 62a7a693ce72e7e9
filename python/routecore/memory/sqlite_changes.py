"""Whether an SQLite lesson store may have changed, known without asking SQLite on every call
(issue 36 §6).

Every ``tools()`` call asks its store. ``PRAGMA data_version`` gives the GIL up inside SQLite;
with fifteen reader threads, each such hand-over is a context switch (a connection per thread
doubled them, 55,000 a second, and cost a fifth of the calls). So a store counts the writes made
through any store of this process on the same file, and polls ``data_version`` for other
processes' writes at most every ``max_lag`` seconds (``ExperienceMemory.max_lag``).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import Callable


class FileWrites:
    """Writes through the stores of this process on one database file (``n``), and where the count
    stood after each thread's last one."""

    def __init__(self) -> None:
        self.n = 0
        self._lock = threading.Lock()
        self._mine = threading.local()

    def add(self) -> None:
        """Count a write of the calling thread (committed)."""
        with self._lock:  # += is not atomic across threads
            self.n += 1
            self._mine.n = self.n

    def mine(self) -> int:
        """The count after the calling thread's last write (0: none)."""
        return int(getattr(self._mine, "n", 0))


_FILES: weakref.WeakValueDictionary[str, FileWrites] = weakref.WeakValueDictionary()
_FILES_LOCK = threading.Lock()


def file_writes(path: str | None) -> FileWrites:
    """The counter of the file at ``path``, shared by its stores in this process (``None``: a
    database private to one connection, a counter of its own)."""
    if path is None:
        return FileWrites()
    key = os.path.realpath(path)
    with _FILES_LOCK:
        writes = _FILES.get(key)
        if writes is None:
            writes = _FILES[key] = FileWrites()
        return writes


class Changes:
    """The version of a store: (``data_version`` as last polled by ``read_version``, writes through
    this process's stores). It changes after every write through this process at once, and
    after another process's once ``data_version`` is polled again. ``read_version`` returns None
    when the connection is busy (then the value last read stands: a thread polling waited for the
    GIL back inside the lock, and every 5 ms the next one queued behind it)."""

    def __init__(self, writes: FileWrites, read_version: Callable[[], int | None]) -> None:
        self.writes = writes
        self._read_version = read_version
        self._polled = -float("inf")
        self._data_version = -1

    def version(self, interval: float = 0.0) -> tuple[int, int]:
        """The version now, ``data_version`` polled when it was last more than ``interval`` seconds
        ago (0: now)."""
        writes = self.writes.n  # before the poll: a write in between shows at the next call
        now = time.monotonic()
        if now - self._polled >= interval:
            self._polled = now  # first: the threads calling meanwhile take the version last read
            read = self._read_version()
            if read is not None:
                self._data_version = read
        return self._data_version, writes
