"""Reminders through the local stack over HTTP (offline provider, moto's EventBridge Scheduler):
zh and en requests in chat create schedules, ``GET .../reminders`` lists them (own; admins all),
the local reminder clock fires a due one through the ReminderFunction, and
``DELETE .../reminders/{id}`` deletes the schedule (owner or admin)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import requests

from agent_memory.domain.models import Project
from infra.local.reminder_clock import ReminderClock
from infra.local.stack import LocalStack
from tests.support.auth import bearer


def _h(project: str, user: str, role: str = "member") -> dict[str, str]:
    return bearer(f"{project}:{role}", user)


@pytest.fixture(scope="module")
def project(local_stack: LocalStack) -> str:
    pid = f"rem-{uuid.uuid4().hex[:8]}"
    local_stack.repo.projects.put_project(Project(project_id=pid, name=pid, time_zone="Asia/Shanghai",
                                         created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    return pid


def _say(stack: LocalStack, pid: str, user: str, text: str) -> dict[str, Any]:
    r = requests.post(f"{stack.base_url}/v1/projects/{pid}/sessions/s-{user}/messages", json={"content": text},
                      headers=_h(pid, user), timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _group(stack: LocalStack) -> str:
    return stack.env["REMINDER_SCHEDULE_GROUP"]


def test_chat_reminders_are_listed_fired_by_the_clock_and_cancelled(local_stack: LocalStack, project: str) -> None:
    # Given a zh one-time and an en recurring reminder asked for in chat by two members
    zh = _say(local_stack, project, "crc-1", "明天上午10点提醒我给P005打电话")
    en = _say(local_stack, project, "pi-1", "remind me every Monday at 9am to clean up queries")
    assert "已设置提醒「给P005打电话」" in zh["reply"]
    assert 'Reminder set: "clean up queries"' in en["reply"]

    # Then each member lists their own, an admin lists both
    base = f"{local_stack.base_url}/v1/projects/{project}/reminders"
    mine = requests.get(base, headers=_h(project, "crc-1"), timeout=30).json()["reminders"]
    assert [(r["owner"], r["text"]) for r in mine] == [("crc-1", "给P005打电话")]
    everyone = requests.get(base, headers=_h(project, "admin-1", "admin"), timeout=30).json()["reminders"]
    assert {r["owner"] for r in everyone} == {"crc-1", "pi-1"}
    scheduler = local_stack.aws_client("scheduler")
    names = {s["Name"] for s in scheduler.list_schedules(GroupName=_group(local_stack))["Schedules"]}
    assert {r["schedule_name"] for r in everyone} <= names

    # When the local clock ticks after the one-time reminder's time
    printed: list[str] = []
    due_at = datetime.fromisoformat(mine[0]["next_fire_at"]) + timedelta(minutes=1)
    # (only this test's reminders: the stack is shared with other modules, whose due reminders may
    # point at webhooks that are not there)
    ours = frozenset(r["reminder_id"] for r in everyone)
    results = ReminderClock(local_stack, now=lambda: due_at, out=printed.append).tick(reminder_ids=ours)

    # Then that reminder was delivered (and printed) and its schedule is gone
    delivered = [r for r in results if r.get("reminder_id") == mine[0]["reminder_id"]]
    assert delivered and delivered[0]["status"] == "delivered" and delivered[0]["channels"] == ["sns"]
    assert any("给P005打电话" in line for line in printed)
    names = {s["Name"] for s in scheduler.list_schedules(GroupName=_group(local_stack))["Schedules"]}
    assert mine[0]["schedule_name"] not in names

    # When another member tries to cancel the PI's reminder, then the PI does
    pis = next(r for r in everyone if r["owner"] == "pi-1")
    refused = requests.delete(f"{base}/{pis['reminder_id']}", headers=_h(project, "crc-1"), timeout=30)
    assert refused.status_code == 403
    gone = requests.delete(f"{base}/{pis['reminder_id']}", headers=_h(project, "pi-1"), timeout=30)
    assert gone.status_code == 200 and gone.json()["status"] == "cancelled"
    names = {s["Name"] for s in scheduler.list_schedules(GroupName=_group(local_stack))["Schedules"]}
    assert pis["schedule_name"] not in names
    unknown = requests.delete(f"{base}/r-0000000000000000", headers=_h(project, "pi-1"), timeout=30)
    assert unknown.status_code == 404


def test_a_past_time_in_chat_schedules_nothing(local_stack: LocalStack, project: str) -> None:
    reply = _say(local_stack, project, "crc-2", "昨天下午3点提醒我交材料")["reply"]
    assert "没有设置提醒" in reply
    base = f"{local_stack.base_url}/v1/projects/{project}/reminders"
    assert requests.get(base, headers=_h(project, "crc-2"), timeout=30).json()["reminders"] == []
