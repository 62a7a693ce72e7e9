"""Progress of long jobs (embedding 100k exemplars takes minutes): a callback, or one line on stderr."""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, Union

#: Seconds between two progress lines when stderr is not a terminal.
LOG_EVERY = 10.0


def _isatty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


#: ``True`` for a line on stderr, a callable ``(done, total)`` of your own, or ``False``/``None`` for silence.
ProgressArg = Optional[Union[bool, Callable[[int, int], None]]]


class Progress:
    """Reports ``done`` of ``total``: to a callback on every step, or as a line with the
    elapsed time and an estimate of what is left, at most twice a second, on stderr."""

    def __init__(self, total: int, what: str, report: ProgressArg = True):
        self.total, self.what, self.done = total, what, 0
        self.callback = report if callable(report) else None
        self.line = report is True and total > 0
        # A bar redrawn with \r on a terminal; plain lines, every LOG_EVERY seconds, in pipes and logs.
        self.tty = self.line and _isatty()
        self.every = 0.5 if self.tty else LOG_EVERY
        self.t0 = self.last = time.perf_counter()

    def advance(self, n: int) -> None:
        self.update(self.done + n)

    def update(self, done: int) -> None:
        self.done = done
        if self.callback is not None:
            self.callback(done, self.total)
        if not self.line:
            return
        now = time.perf_counter()
        if now - self.last < self.every and done < self.total:
            return
        self.last = now
        el = now - self.t0
        eta = el / done * (self.total - done) if done else 0.0
        text = f"{self.what}: {done:,}/{self.total:,} [{el:5.1f}s elapsed, ETA {eta:5.1f}s]"
        if self.tty:
            sys.stderr.write(f"\r{text}" + ("\n" if done >= self.total else ""))
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()
