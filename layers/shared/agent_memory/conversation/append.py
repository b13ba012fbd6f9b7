"""THE write path of a session's messages: one optimistic-lock append, used by the chat turn
and by the transcript import.

One call = one ``TransactWriteItems`` (``ports.ConversationStore.record_turn``): the message
items, their flow-log items, one activity marker per local date and the session item (window,
counters, session memory) under a condition on the version read. When another writer changed
the session meanwhile (``VersionConflict``), the session is read again and the SAME messages are
re-applied to it (no LLM call is repeated), with jittered exponential backoff between attempts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from agent_memory.conversation.window import WINDOW_BUDGET_BYTES, trim_window
from agent_memory.domain.errors import VersionConflict
from agent_memory.domain.turns import MessageRecord, SessionState, TurnWrite
from agent_memory.ports import ConversationStore

#: Write attempts on a version conflict (the first write included). Under N writers racing on one
#: session (Lambda runs a request per execution environment), each retry loses only to the writers
#: that committed meanwhile; 8 attempts with jittered backoff absorb a burst of several concurrent
#: turns, and the whole backoff (at most about 2 s) stays inside the response reserve the handler
#: keeps for writing (``RESPONSE_RESERVE_S``, 3 s by default).
WRITE_ATTEMPTS = 8
#: Backoff between attempts: random in [0, min(WAIT_MAX_S, WAIT_MULTIPLIER_S * 2**attempt)] seconds.
WAIT_MULTIPLIER_S = 0.02
WAIT_MAX_S = 0.4


def version_conflict_retrying(attempts: int = WRITE_ATTEMPTS) -> Retrying:
    """The retry policy of every optimistic-lock write of a session: retry on ``VersionConflict``
    only, ``attempts`` writes in all, full-jitter exponential backoff (``WAIT_MULTIPLIER_S``,
    capped at ``WAIT_MAX_S`` seconds), the last ``VersionConflict`` re-raised (HTTP 409 with
    ``Retry-After`` upstream)."""
    return Retrying(
        stop=stop_after_attempt(attempts),
        retry=retry_if_exception_type(VersionConflict),
        wait=wait_random_exponential(multiplier=WAIT_MULTIPLIER_S, max=WAIT_MAX_S),
        reraise=True,
    )

#: ``update(current, updated, full_window) -> updated``: adds what else the turn changes on the
#: session item (facts, rolling summary); ``full_window`` is the window before trimming.
SessionUpdate = Callable[[SessionState, SessionState, list[MessageRecord]], SessionState]


@dataclass(frozen=True)
class Append:
    """What one append writes.

    - ``new``: message items to create, in order;
    - ``flow``: the messages that also go to the flow log (usually ``new``);
    - ``mark_ok``: ids of earlier failed user messages this append answers (a retried turn): they
      turn ``ok`` and ``new`` goes right after the last of them instead of at the end, so the
      retried question and its reply stay one turn in the window;
    - ``contexts``: message id -> context manifest stored on that message item;
    - ``reply_to``: assistant message id -> the user message id it answers;
    - ``fill``: session fields set only when the stored value is empty (``created_by``,
      ``patient_id``, and ``type`` of a session created by this append).
    """

    new: Sequence[MessageRecord]
    flow: Sequence[MessageRecord]
    mark_ok: Sequence[str] = ()
    contexts: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    reply_to: Mapping[str, str] = field(default_factory=dict)
    fill: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Appended:
    """The outcome: ``base`` is the session as read before the write that succeeded,
    ``written`` the session as stored (``version == base.version + 1``)."""

    base: SessionState
    written: SessionState


def append_messages(
    store: ConversationStore,
    session: SessionState,
    append: Append,
    *,
    time_zone: str,
    now: Callable[[], datetime],
    keep_user_turns: int,
    flow_log_retention_days: int,
    update: SessionUpdate | None = None,
    attempts: int = WRITE_ATTEMPTS,
) -> Appended:
    """Append ``append`` to ``session`` in one transaction, retrying on version conflicts.

    Args:
        session: the session as read by the caller (``version`` 0: not stored yet).
        time_zone: the project's IANA zone; each message's local date gets an activity marker
            (a turn straddling local midnight marks both days, the daily jobs look days up),
            once per session and day: the session state keeps the last day its turns marked
            (``SessionState.activity_date``, written in the same transaction as the marker).
        now: the clock (UTC-aware datetimes).
        keep_user_turns: user turns kept in the window (the prompt's recent turns + 2).
        flow_log_retention_days: TTL of the flow-log items (0 = kept).
        update: see :data:`SessionUpdate`.
        attempts: writes tried in all before the conflict is raised.

    Returns:
        :class:`Appended`.

    Raises:
        VersionConflict: still conflicting after ``attempts`` writes (HTTP 409 upstream).
        ItemTooLarge, ProjectNotFound and storage errors from the store, unchanged.
    """
    zone = ZoneInfo(time_zone)
    current = session
    for attempt in version_conflict_retrying(attempts):
        with attempt:
            if attempt.retry_state.attempt_number > 1:
                current = store.get_session(session.project_id, session.session_id) or session.model_copy(
                    update={"version": 0, "window": []}
                )
            at = now()
            local_dates = sorted(
                {m.at.astimezone(zone).date().isoformat() for m in append.flow}
                or {at.astimezone(zone).date().isoformat()}
            )
            updated = _appended(current, append, at=at, activity_date=local_dates[-1],
                                keep_user_turns=keep_user_turns, update=update)
            store.record_turn(TurnWrite(
                session=updated, expected_version=current.version, new_messages=list(append.new),
                flow_log=list(append.flow), mark_ok=list(append.mark_ok), contexts=dict(append.contexts),
                reply_to=dict(append.reply_to),
                # a day this session's stored state says a turn already marked is not marked again
                activity_local_dates=[day for day in local_dates if day != current.activity_date],
                now=at, flow_log_retention_days=flow_log_retention_days,
            ))
            return Appended(base=current, written=updated.model_copy(update={"version": current.version + 1}))
    raise VersionConflict("session changed concurrently")  # pragma: no cover - Retrying re-raises


def _appended(current: SessionState, append: Append, *, at: datetime, activity_date: str, keep_user_turns: int,
              update: SessionUpdate | None) -> SessionState:
    """``current`` with the messages appended: the window (trimmed to ``keep_user_turns`` user
    turns and its byte budget), the counters, the last day its turns marked, the ``fill`` fields
    still empty (``type`` only on a session not stored yet), then ``update``'s changes."""
    full_window = _insert(list(current.window), append)
    fields: dict[str, Any] = {
        "window": trim_window(full_window, keep_user_turns=keep_user_turns, budget_bytes=WINDOW_BUDGET_BYTES),
        "updated_at": at,
        "message_count": current.message_count + len(append.new),
        "activity_date": activity_date,
    }
    for name, value in append.fill.items():
        if name == "type":
            if not current.version:
                fields[name] = value
        elif not getattr(current, name):
            fields[name] = value
    updated = current.model_copy(update=fields)
    return update(current, updated, full_window) if update is not None else updated


def _insert(window: list[MessageRecord], append: Append) -> list[MessageRecord]:
    """``window`` with ``append.new`` inserted and ``mark_ok`` messages turned ``ok``."""
    answered = [i for i, m in enumerate(window) if m.message_id in append.mark_ok]
    at = answered[-1] + 1 if answered else len(window)
    window[at:at] = list(append.new)
    if append.mark_ok:
        window = [m.model_copy(update={"status": "ok"}) if m.message_id in append.mark_ok else m for m in window]
    return window
