"""What is a reminder request in chat, offline (agent_memory.adapters.llm.offline_reminders): the
user asking the assistant to remind them. Reported speech ("你上次说以后会每天提醒我…", "you said you'd
remind me …"), a question about an earlier promise ("你不是说会提醒我吗？") and a complaint about a
reminder ("你之前说会提醒我，结果没提醒") ask for none: no reminder is scheduled, none is attempted.
Sentences written for these tests (zh, en)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.adapters.llm.offline_reminders import split_reminder_request
from agent_memory.chat.turn import handle_message
from tests.fakes import InMemoryStore
from tests.unit.chat_support import llm_requests, make_deps, seed_project
from tests.unit.reminder_support import reminder_deps

#: Wednesday 2026-12-02 17:05 in Shanghai.
NOW = datetime(2026, 12, 2, 9, 5, tzinfo=UTC)

NOT_REQUESTS = [
    "你上次说以后会每天提醒我填日志，怎么今天没有？",
    "你之前说会提醒我，结果没提醒",
    "你不是说每周一早上9点提醒我清理Query吗？",
    "你答应过明天上午10点提醒我给P005打电话的",
    "昨天你忘了提醒我交周报",
    "你怎么没提醒我P003的随访？",
    "You said you'd remind me every Monday at 9 to clean up the queries, but you didn't.",
    "Didn't you promise to remind me tomorrow at 10 to call the site?",
    "You were supposed to remind me on Friday at 4pm to send the weekly report.",
    "Why didn't you remind me to call P005 this morning?",
    "You forgot to remind me about the SIV yesterday.",
]

REQUESTS = [
    ("每天早上8点提醒我填日志", "cron(0 8 * * ? *)"),
    ("别忘了明天上午10点提醒我给P005打电话", "at(2026-12-03T10:00:00)"),
    ("能不能每周一早上9点提醒我清理Query？", "cron(0 9 ? * MON *)"),
    ("上次的事别再漏了，每周五下午4点提醒我发周报", "cron(0 16 ? * FRI *)"),
    ("你每天早上8点提醒我填日志好吗？", "cron(0 8 * * ? *)"),
    ("remind me every Monday at 9 to clean up the queries", "cron(0 9 ? * MON *)"),
    ("Could you remind me tomorrow at 10am to call the site?", "at(2026-12-03T10:00:00)"),
    ("Last time I forgot, so please remind me on Friday at 4pm to send the weekly report.",
     "at(2026-12-04T16:00:00)"),
]


def _chat(message: str) -> tuple[str, list[str], list[str]]:
    """One offline turn with the reminder tools: the reply, the schedules' expressions, the tools called."""
    repo = InMemoryStore()
    seed_project(repo)
    deps = make_deps(repo)
    rdeps, _, scheduler = reminder_deps(NOW)
    deps.reminders = rdeps
    deps.now = lambda: NOW
    result = handle_message(deps, project_id="p1", session_id="s1", user_id="u1", content=message,
                            patient_id=None, deadline=None)
    called = [b["name"] for r in llm_requests(deps) for m in r.messages if m["role"] == "assistant"
              and isinstance(m["content"], list) for b in m["content"] if b.get("type") == "tool_use"]
    return result.reply, [r.expression for r in scheduler.schedules.values()], called


@pytest.mark.parametrize("message", NOT_REQUESTS)
def test_reported_speech_questions_and_complaints_are_no_reminder_requests(message: str) -> None:
    assert split_reminder_request(message) is None
    reply, expressions, called = _chat(message)
    assert expressions == [] and "schedule_reminder" not in called
    assert "没有设置提醒" not in reply and "Nothing was scheduled" not in reply


@pytest.mark.parametrize(("message", "expression"), REQUESTS)
def test_a_real_request_still_schedules(message: str, expression: str) -> None:
    _, expressions, called = _chat(message)
    assert expressions == [expression] and called == ["schedule_reminder"]
