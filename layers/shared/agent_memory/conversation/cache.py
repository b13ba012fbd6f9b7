"""Per-container cache of active sessions.

Holds at most ``max_messages`` (50) recent messages per session, at most ``max_sessions``
sessions (least recently used evicted) and drops sessions idle for ``idle_seconds``.
It is NEVER a source of truth: an entry is served only when its version equals the
session version just read from DynamoDB, so it can never be stale. Listings never use it.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agent_memory.domain.turns import MessageRecord


@dataclass
class _Entry:
    version: int
    messages: deque[MessageRecord]
    touched: float


class SessionCache:
    """LRU + idle-evicting cache keyed by (project_id, session_id); times in seconds."""

    def __init__(
        self,
        *,
        max_messages: int = 50,
        max_sessions: int = 128,
        idle_seconds: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_messages = max_messages
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()

    def get(self, project_id: str, session_id: str, version: int) -> list[MessageRecord] | None:
        """Cached messages (oldest first) if the entry matches ``version``; else None."""
        self._evict_idle()
        key = (project_id, session_id)
        entry = self._entries.get(key)
        if entry is None or entry.version != version:
            return None
        entry.touched = self._clock()
        self._entries.move_to_end(key)
        return list(entry.messages)

    def put(self, project_id: str, session_id: str, version: int, messages: Sequence[MessageRecord]) -> None:
        """Store the newest ``max_messages`` of ``messages`` for ``version``."""
        key = (project_id, session_id)
        self._entries[key] = _Entry(version, deque(messages, maxlen=self.max_messages), self._clock())
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_sessions:
            self._entries.popitem(last=False)

    def append(self, project_id: str, session_id: str, base_version: int, new_version: int,
               messages: Sequence[MessageRecord], fallback: Sequence[MessageRecord]) -> None:
        """After a write: extend the entry if it was at ``base_version``, else rebuild it
        from ``fallback`` (the window just written)."""
        current = self.get(project_id, session_id, base_version)
        self.put(project_id, session_id, new_version, (current + list(messages)) if current is not None else fallback)

    def holds(self, project_id: str, session_id: str) -> bool:
        """True when an entry of the session is held (at any version): the session exists and
        this container wrote or read messages of it. A hint only (never a source of truth)."""
        self._evict_idle()
        return (project_id, session_id) in self._entries

    def size(self, project_id: str, session_id: str) -> int:
        """Messages held for a session (0 if absent)."""
        entry = self._entries.get((project_id, session_id))
        return len(entry.messages) if entry else 0

    def _evict_idle(self) -> None:
        now = self._clock()
        for key in [k for k, e in self._entries.items() if now - e.touched > self.idle_seconds]:
            del self._entries[key]
