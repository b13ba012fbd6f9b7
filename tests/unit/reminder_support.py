"""In-memory fakes of the reminder ports: the reminder items and a recording scheduler."""

from __future__ import annotations

from datetime import datetime

from agent_memory.adapters.scheduler import recurrence_from_cron, schedule_expression
from agent_memory.domain.reminders import Reminder
from agent_memory.domain.when import Recurrence, When
from agent_memory.reminders.service import ReminderDeps
from tests.fakes import FakeClock


class InMemoryReminderStore:
    """``ReminderStore`` in a dict."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Reminder] = {}
        self.roles: dict[tuple[str, str], str] = {}

    def study_role_of(self, project_id: str, user_id: str) -> str | None:
        return self.roles.get((project_id, user_id))

    def put_reminder(self, reminder: Reminder) -> None:
        key = (reminder.project_id, reminder.reminder_id)
        assert key not in self.items
        self.items[key] = reminder

    def get_reminder(self, project_id: str, reminder_id: str) -> Reminder | None:
        return self.items.get((project_id, reminder_id))

    def list_reminders(self, project_id: str, *, owner: str | None = None) -> list[Reminder]:
        found = [r for (p, _), r in self.items.items() if p == project_id and (owner is None or r.owner == owner)]
        return sorted(found, key=lambda r: r.created_at)

    def update_reminder(self, reminder: Reminder) -> None:
        assert (reminder.project_id, reminder.reminder_id) in self.items
        self.items[(reminder.project_id, reminder.reminder_id)] = reminder


class RecordingScheduler:
    """``ReminderScheduler`` that keeps the live schedules by name."""

    def __init__(self) -> None:
        self.schedules: dict[str, Reminder] = {}

    def expression(self, when: When) -> str:
        return schedule_expression(when)

    def recurrence(self, expression: str) -> Recurrence:
        return recurrence_from_cron(expression)

    def create(self, reminder: Reminder) -> None:
        self.schedules[reminder.schedule_name] = reminder

    def delete(self, reminder: Reminder) -> None:
        self.schedules.pop(reminder.schedule_name, None)


class RecordingChannel:
    """``ReminderChannel`` that keeps what it delivered."""

    def __init__(self) -> None:
        self.delivered: list[object] = []

    def deliver(self, delivery: object) -> list[str]:
        self.delivered.append(delivery)
        return ["sns"]


def reminder_deps(now: datetime, **kwargs: object) -> tuple[ReminderDeps, InMemoryReminderStore, RecordingScheduler]:
    store, scheduler = InMemoryReminderStore(), RecordingScheduler()
    deps = ReminderDeps(store=store, scheduler=scheduler, now=FakeClock(now), **kwargs)  # type: ignore[arg-type]  # kwargs
    return deps, store, scheduler
