"""The weekly report's feedback section, from flow-log feedback events: counts per rating (a rater's
last rating of a message counts once), the recurring down-vote reasons first, and the byte cap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agent_memory.domain.jobs import FlowLogEntry
from agent_memory.feedback.report import feedback_lines, split_feedback, with_feedback_section

T = datetime(2026, 3, 3, 2, 0, tzinfo=UTC)


def fb(message_id: str, user: str, rating: str, reason: str = "", minutes: int = 0) -> FlowLogEntry:
    return FlowLogEntry(message_id=message_id, session_id="s1", role="user", content=reason,
                        at=T + timedelta(minutes=minutes), user_id=user, source="feedback", rating=rating)


def test_counts_take_each_raters_last_rating_and_recurring_reasons_come_first() -> None:
    events = [
        fb("m1", "u1", "up", minutes=0), fb("m1", "u1", "down", "太长了", minutes=5),  # u1 changed their mind
        fb("m2", "u2", "down", "Too verbose.", minutes=1), fb("m3", "u3", "down", "too verbose", minutes=2),
        fb("m4", "u1", "up", minutes=3),
    ]
    assert feedback_lines(events) == [
        "[反馈] 回答评价 up 1 / down 3 [m1,m2,m3,m4]",
        "[反馈] 差评理由 down-vote reason: Too verbose. ×2 [m2]",
        "[反馈] 差评理由 down-vote reason: 太长了 [m1]",
    ]


def test_no_events_no_section_and_the_section_never_passes_the_cap() -> None:
    assert feedback_lines([]) == [] and with_feedback_section("[进度] x [m0]", [], 100) == "[进度] x [m0]"
    events = [fb("m1", "u1", "down", "原因" * 30)]
    capped = with_feedback_section("[进度] x [m0]", events, 80)
    assert len(capped.encode("utf-8")) <= 80 and capped.startswith("[进度] x [m0]\n[反馈] 回答评价")


def test_split_keeps_conversation_and_feedback_apart() -> None:
    said = FlowLogEntry(message_id="m0", session_id="s1", role="user", content="决定：下周入组", at=T)
    messages, events = split_feedback([said, fb("m1", "u1", "up")])
    assert messages == [said] and [e.message_id for e in events] == ["m1"]
