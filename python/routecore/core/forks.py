"""Background work a fork must not cut in half.

A process that forks (``os.fork``, ``multiprocessing``'s fork start, a ``subprocess`` with
``preexec_fn``, a pre-fork server) while another of its threads is inside a multithreaded OpenBLAS
call (numpy's ``@``) hangs: OpenBLAS's fork handler waits on the thread pool that call holds, in
the parent and the child (numpy 2.4's OpenBLAS 0.3.31: a gemm loop beside such forks hung within
seconds; with one BLAS thread it did not). A learning refit runs such calls on a background thread
(:mod:`routecore.updates.learning`): it holds :func:`unforked` while it does, and a fork from another
thread waits for it to end (``os.register_at_fork``).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Iterator

_lock = threading.Lock()
_registered = False


def _before() -> None:
    _lock.acquire()


def _after_in_parent() -> None:
    _lock.release()


def _after_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # the child has no background thread: a fresh, free lock


@contextmanager
def unforked() -> Iterator[None]:
    """Hold off ``os.fork`` (from any other thread) while the block runs."""
    global _registered
    if not _registered and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child)
        _registered = True
    with _lock:
        yield
