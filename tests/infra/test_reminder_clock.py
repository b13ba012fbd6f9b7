"""The local reminder clock (infra/local/reminder_clock.py) on a stand-in stack: one reminder's
failing invocation never holds back the others due in the same tick."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from infra.local.functions import FunctionError
from infra.local.reminder_clock import ReminderClock

NOW = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)


class _Scheduler:
    """Two one-time schedules, both due; deletions recorded."""

    def __init__(self) -> None:
        self.schedules = {
            f"s-{rid}": {"Name": f"s-{rid}", "ScheduleExpression": "at(2026-12-07T07:00:00)",
                         "ScheduleExpressionTimezone": "UTC", "ActionAfterCompletion": "DELETE",
                         "Target": {"Input": json.dumps({"project_id": pid, "reminder_id": rid})}}
            for pid, rid in (("p-broken", "r-1"), ("p-fine", "r-2"))
        }
        self.deleted: list[str] = []

    def list_schedules(self, **_: Any) -> dict[str, Any]:
        return {"Schedules": [{"Name": name} for name in self.schedules]}

    def get_schedule(self, *, Name: str, GroupName: str) -> dict[str, Any]:  # noqa: N803 (boto3's names)
        return self.schedules[Name]

    def delete_schedule(self, *, Name: str, GroupName: str) -> None:  # noqa: N803
        self.deleted.append(Name)


class _Stack:
    env = {"REMINDER_SCHEDULE_GROUP": "g"}

    def __init__(self) -> None:
        self.scheduler = _Scheduler()

    def aws_client(self, _: str) -> _Scheduler:
        return self.scheduler

    def invoke(self, _: str, event: dict[str, Any]) -> dict[str, Any]:
        if event["project_id"] == "p-broken":
            raise FunctionError("ExternalServiceError")
        return {**event, "status": "delivered", "user_id": "u", "channels": ["sns"], "text": "t"}


def test_a_failing_reminder_does_not_hold_back_the_others() -> None:
    stack = _Stack()
    printed: list[str] = []
    clock = ReminderClock(stack, now=lambda: NOW, out=printed.append)  # type: ignore[arg-type]  # a stand-in stack
    results = clock.tick()
    assert [(r["reminder_id"], r["status"]) for r in results] == [("r-1", "failed"), ("r-2", "delivered")]
    # the failed one-time schedule stays for the next tick; the delivered one is gone
    assert stack.scheduler.deleted == ["s-r-2"]
    assert any("r-1" in line and "failed" in line for line in printed)
