"""The one session append: a version conflict re-reads the session and re-applies the same
messages; a writer that keeps losing gets VersionConflict and nothing of its own is written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.conversation.append import WRITE_ATTEMPTS, Append, append_messages
from agent_memory.domain.errors import VersionConflict
from agent_memory.domain.turns import MessageRecord, SessionState, TurnWrite
from tests.fakes import InMemoryStore

T0 = datetime(2026, 3, 2, 15, 59, 30, tzinfo=UTC)  # 23:59:30 in Asia/Shanghai


def _msg(mid: str, role: str, text: str, at: datetime) -> MessageRecord:
    return MessageRecord(message_id=mid, role=role, content=text, at=at)


def _new_session() -> SessionState:
    return SessionState(project_id="p1", session_id="s1", created_at=T0, updated_at=T0, version=0)


class _RacingStore(InMemoryStore):
    """Before each of its first ``races`` writes, another writer appends one message first."""

    def __init__(self, races: int) -> None:
        super().__init__()
        self.races = races
        self.writes = 0

    def record_turn(self, write: TurnWrite) -> None:
        self.writes += 1
        if self.races:
            self.races -= 1
            other = self.get_session("p1", "s1") or _new_session()
            append_messages(
                InMemoryStore(self.tables), other,
                Append(new=[_msg(f"other-{self.races}", "user", "另一台设备的消息", T0)], flow=[]),
                time_zone="Asia/Shanghai", now=lambda: T0, keep_user_turns=12, flow_log_retention_days=0,
            )
        super().record_turn(write)


def test_a_conflict_re_applies_the_same_messages_to_the_session_read_again() -> None:
    # Given a session another writer changes once between our read and our write
    store = _RacingStore(races=1)
    mine = [_msg("m1", "user", "P001 入组了吗", T0), _msg("m2", "assistant", "已入组", T0 + timedelta(minutes=1))]

    # When we append our two messages
    done = append_messages(
        store, _new_session(), Append(new=mine, flow=mine, fill={"created_by": "u1"}),
        time_zone="Asia/Shanghai", now=lambda: T0 + timedelta(minutes=1), keep_user_turns=12,
        flow_log_retention_days=0,
    )

    # Then the second write landed on top of the other writer's, and nothing was lost
    assert store.writes == 2
    stored = store.get_session("p1", "s1")
    assert stored is not None
    assert [m.message_id for m in stored.window] == ["other-0", "m1", "m2"]
    assert stored.version == 2 == done.written.version
    assert done.base.version == 1
    assert stored.message_count == 3
    assert stored.created_by == "u1"


def test_the_flow_log_marks_every_local_day_a_turn_touches() -> None:
    # Given a question at 23:59:30 local time answered after midnight
    store = InMemoryStore()
    mine = [_msg("m1", "user", "问题", T0), _msg("m2", "assistant", "回答", T0 + timedelta(minutes=1))]

    # When the turn is appended
    append_messages(store, _new_session(), Append(new=mine, flow=mine), time_zone="Asia/Shanghai",
                    now=lambda: T0 + timedelta(minutes=1), keep_user_turns=12, flow_log_retention_days=0)

    # Then both local days are active for the daily jobs
    assert store.active_projects([datetime(2026, 3, 2).date()]) == ["p1"]
    assert store.active_projects([datetime(2026, 3, 3).date()]) == ["p1"]


def test_a_writer_that_keeps_losing_gets_version_conflict_and_writes_nothing_of_its_own() -> None:
    # Given a session that changes before every one of our writes
    store = _RacingStore(races=WRITE_ATTEMPTS)
    mine = [_msg("m1", "user", "P001 入组了吗", T0)]

    # When we try to append
    with pytest.raises(VersionConflict):
        append_messages(store, _new_session(), Append(new=mine, flow=mine), time_zone="Asia/Shanghai",
                        now=lambda: T0, keep_user_turns=12, flow_log_retention_days=0)

    # Then every attempt was made and only the other writer's messages are stored
    assert store.writes == WRITE_ATTEMPTS
    stored = store.get_session("p1", "s1")
    assert stored is not None
    assert all(m.message_id.startswith("other-") for m in stored.window)
    assert len(stored.window) == WRITE_ATTEMPTS
