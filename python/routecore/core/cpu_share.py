"""`CpuShare`: a token bucket over the wall time of background work (issue 36 §6).

A lesson being recorded is embedded on a background session. Written back to back, those embeddings
took a whole core from the calls being served, and lowering the thread's priority did not give it back
on the machines measured (BENCHMARKS.md §3.2). The bucket bounds the background work's sustained share
of one core instead: a burst of ``burst`` seconds of work runs at once, and past it each call waits
until the work done since stays within ``share`` of the time elapsed. An occasional lesson never waits.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Callable

from routecore.errors import InvalidArgumentError

#: The default sustained share of one core for background embeddings: a writer recording lessons back to
#: back runs about this fraction of the time (a lesson on e5 is a few milliseconds of work).
DEFAULT_SHARE = 0.1
#: Seconds of background work that run before the share applies: hundreds of lessons at once.
DEFAULT_BURST = 1.0


class CpuShare:
    """Bound background work to ``share`` of one core, sustained, after a burst of ``burst`` seconds.

    ``share=1`` turns the bound off. Thread-safe: callers on several threads share one budget.
    ``clock`` and ``sleep`` are for tests."""

    def __init__(
        self,
        share: float = DEFAULT_SHARE,
        burst: float = DEFAULT_BURST,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
            raise InvalidArgumentError(f"background_share must be a number in (0, 1], got {share!r}")
        if isinstance(burst, bool) or not isinstance(burst, (int, float)) or not 0 <= burst < math.inf:
            raise InvalidArgumentError(f"background burst must be a number of seconds >= 0, got {burst!r}")
        self.share = float(share)
        self.burst = float(burst)
        self._clock, self._sleep = clock, sleep
        self._credit = self.burst  # seconds of work that may run now
        self._at = clock()
        self._lock = threading.Lock()
        self.waited = 0.0  # seconds callers were held back, in all

    def _refill(self, now: float) -> None:
        self._credit = min(self.burst, self._credit + (now - self._at) * self.share)
        self._at = now

    def wait(self) -> float:
        """Before a piece of work: sleep while the budget is overdrawn; returns the seconds slept."""
        if self.share >= 1:
            return 0.0
        with self._lock:
            self._refill(self._clock())
            pause = -self._credit / self.share if self._credit < 0 else 0.0
        if pause > 0:
            self._sleep(pause)
            with self._lock:
                self.waited += pause
        return pause

    def spent(self, seconds: float) -> None:
        """After a piece of work: charge its ``seconds`` to the budget."""
        if self.share >= 1:
            return
        with self._lock:
            self._refill(self._clock())
            self._credit -= max(0.0, seconds)
