"""Reminders a user schedules through the assistant (the cron skill).

A reminder is one EventBridge Scheduler schedule (``at(...)`` once, or ``cron(...)``) in the
project's time zone, and one item holding its owner, text, schedule, next firing and status.
Times are timezone-aware UTC unless a name says ``local`` (naive wall-clock time of ``time_zone``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel

ReminderStatus = Literal["active", "done", "cancelled"]

#: Longest reminder text (characters) and most active reminders per user (more -> refused).
REMINDER_TEXT_MAX_CHARS = 500
MAX_ACTIVE_REMINDERS = 50


class Reminder(BaseModel):
    """One reminder.

    - ``expression``: the schedule's expression as the scheduler wrote it (``ReminderScheduler.expression``;
      EventBridge Scheduler: ``at(yyyy-mm-ddThh:mm:ss)`` / ``cron(...)``), read in ``time_zone``;
    - ``schedule_name``: the EventBridge Scheduler schedule (in the stack's schedule group);
    - ``next_fire_at`` / ``next_fire_local``: the next firing (UTC / local ``YYYY-MM-DDTHH:MM``);
    - ``requested``: what the user asked for when a preference moved it (``shifted_because``: the line).
    """

    project_id: str
    reminder_id: str
    owner: str
    text: str
    recurring: bool
    expression: str
    description: str
    time_zone: str
    schedule_name: str
    next_fire_at: datetime
    next_fire_local: str
    status: ReminderStatus = "active"
    created_at: datetime
    requested: str | None = None
    shifted_because: str | None = None
    last_fired_at: datetime | None = None
    fired_count: int = 0


class ReminderDelivery(BaseModel):
    """What a firing delivers (SNS message body and webhook body): never more than the owner's own
    reminder text and ids."""

    kind: Literal["reminder"] = "reminder"
    project_id: str
    reminder_id: str
    user_id: str
    text: str
    fired_at: datetime
    scheduled_local: str
    recurring: bool


__all__ = ["MAX_ACTIVE_REMINDERS", "REMINDER_TEXT_MAX_CHARS", "Reminder", "ReminderDelivery", "ReminderStatus"]
