"""The reminder tools on the Claude path: the real anthropic SDK against the strict Messages-API test
server (``tests/support/messages_api.py``), default (current) chat model. The model is offered the
three reminder tools beside the clinical one, calls ``schedule_reminder`` with a zh or en ``when``,
the schedule is created in the project's zone, and the tool result it answers from says when it
fires (and why it moved, for a weekend rule)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_memory.adapters.llm.anthropic import AnthropicClient
from agent_memory.chat.turn import handle_message
from tests.fakes import InMemoryStore
from tests.support.messages_api import MessagesAPIServer, text_reply, tool_use_reply
from tests.unit.chat_support import USER, hot_line, make_deps, seed_project
from tests.unit.reminder_support import reminder_deps

#: Wednesday 2026-12-02 17:05 in Shanghai (the project's zone).
NOW = datetime(2026, 12, 2, 9, 5, tzinfo=UTC)


def _turn(server: MessagesAPIServer, message: str, tool_input: dict[str, Any], *, lines: list[Any] | None = None
          ) -> tuple[str, list[str], dict[str, Any]]:
    repo = InMemoryStore()
    seed_project(repo, hot_lines=lines)
    deps = make_deps(repo, llm=AnthropicClient("test-key", base_url=server.base_url, max_retries=0))
    rdeps, _, scheduler = reminder_deps(NOW)
    deps.reminders = rdeps
    deps.now = lambda: NOW
    server.script(tool_use_reply("schedule_reminder", tool_input), text_reply("好的 / Done."))
    result = handle_message(deps, project_id="p1", session_id="s1", user_id=USER, content=message,
                            patient_id=None, deadline=None)
    second = server.requests[-1].body
    tool_result = next(b for b in second["messages"][-1]["content"] if b["type"] == "tool_result")
    return result.reply, [r.expression for r in scheduler.schedules.values()], tool_result


@pytest.mark.parametrize(("message", "tool_input", "expression"), [
    ("每周一早上9点提醒我清理Query", {"text": "清理Query", "when": "every Monday 09:00"}, "cron(0 9 ? * MON *)"),
    ("明天上午10点提醒我给P005打电话", {"text": "给P005打电话", "when": "2026-12-03T10:00"}, "at(2026-12-03T10:00:00)"),
    ("remind me on Friday at 4pm to send the weekly report",
     {"text": "send the weekly report", "when": "on Friday at 4pm"}, "at(2026-12-04T16:00:00)"),
])
def test_claude_schedules_a_reminder_through_the_tool(
    messages_api: MessagesAPIServer, message: str, tool_input: dict[str, Any], expression: str
) -> None:
    reply, expressions, tool_result = _turn(messages_api, message, tool_input)
    # the first request offered the reminder tools beside the clinical one
    tools = [t["name"] for t in messages_api.requests[0].body["tools"]]
    assert tools == ["read_clinical_data", "schedule_reminder", "list_reminders", "cancel_reminder"]
    assert expressions == [expression]
    assert tool_result["is_error"] is False
    data = json.loads(tool_result["content"])
    assert data["time_zone"] == "Asia/Shanghai" and data["text"] == tool_input["text"]
    assert reply == "好的 / Done."


def test_claude_gets_a_clear_error_for_a_past_time_and_nothing_is_scheduled(messages_api: MessagesAPIServer) -> None:
    _, expressions, tool_result = _turn(messages_api, "昨天提醒我交材料",
                                        {"text": "交材料", "when": "2026-12-01T10:00"})
    assert expressions == []
    assert tool_result["is_error"] is True and "in the past" in tool_result["content"]


def test_claude_is_told_when_a_weekend_rule_moved_the_reminder(messages_api: MessagesAPIServer) -> None:
    lines = [hot_line("l1", "User Preferences", "周末别发消息", source="distilled")]
    _, expressions, tool_result = _turn(messages_api, "周六上午10点提醒我看周报",
                                        {"text": "看周报", "when": "2026-12-05T10:00"}, lines=lines)
    assert expressions == ["at(2026-12-07T09:00:00)"]
    data = json.loads(tool_result["content"])
    assert data["moved"] == {"requested": "2026-12-05 10:00 (Sat)", "because": "周末别发消息"}
    assert "顺延" in data["message"]
