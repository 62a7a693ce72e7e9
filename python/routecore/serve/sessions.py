"""``request_more_tools`` sessions of the sidecar, keyed by a client-chosen id, kept
``session_ttl`` seconds after their last use."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Optional

from routecore.serve.metrics import Metrics
from routecore.serve.openapi import SessionState

# -- request_more_tools sessions ------------------------------------------------------


class _Session:
    __slots__ = ("tool_session", "lock", "expires", "tripped")

    def __init__(self, tool_session: Any, expires: float):
        self.tool_session, self.expires, self.tripped = tool_session, expires, False
        self.lock = asyncio.Lock()


class SessionStore:
    """Tool sessions by id, each kept ``ttl`` seconds after its last use (at most
    ``max_sessions``: the least recently used goes first). Used from the event loop only."""

    def __init__(
        self, ttl: float, max_sessions: int, metrics: Metrics, clock: Callable[[], float] = time.monotonic
    ):
        self.ttl, self.max_sessions, self.metrics, self.clock = ttl, max_sessions, metrics, clock
        self._sessions: dict[str, _Session] = {}

    def get(self, sid: str) -> Optional[_Session]:
        """The live session ``sid`` (its life starts again), or None."""
        self.sweep()
        s = self._sessions.pop(sid, None)
        if s is not None and s.expires <= self.clock() and not s.lock.locked():
            s = None
        if s is not None:  # most recently used last
            self._sessions[sid] = s
            s.expires = self.clock() + self.ttl
        self.metrics.sessions.set(len(self._sessions))
        return s

    def put(self, sid: str, tool_session: Any) -> _Session:
        self.sweep()
        self._sessions.pop(sid, None)
        while len(self._sessions) >= self.max_sessions:
            self._sessions.pop(next(iter(self._sessions)))
        s = self._sessions[sid] = _Session(tool_session, self.clock() + self.ttl)
        self.metrics.sessions.set(len(self._sessions))
        return s

    def sweep(self) -> None:
        """Drop expired sessions from the least recently used end (O(expired sessions))."""
        now = self.clock()
        while self._sessions:
            sid, s = next(iter(self._sessions.items()))
            if s.expires > now or s.lock.locked():
                break
            del self._sessions[sid]
        self.metrics.sessions.set(len(self._sessions))

    def state(self, sid: str, s: _Session) -> SessionState:
        """Session ``sid``'s state, as the endpoints answer it."""
        ts = s.tool_session
        limit = ts.tool_catalog.policy.more_tools_limit
        return SessionState(
            session_id=sid,
            tool_names=list(ts.tool_names),
            calls=ts.calls,
            limit=limit,
            breaker_open=ts.calls >= limit,
            expires_in_s=round(max(s.expires - self.clock(), 0.0), 3),
        )
