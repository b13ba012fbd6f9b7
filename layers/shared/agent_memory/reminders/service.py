"""The reminder use cases: schedule, list, cancel, deliver.

Rules:
- ``when`` is read in the project's time zone (:func:`agent_memory.reminders.when.parse_when`); a time
  in the past, a phrase naming no time, a text over ``REMINDER_TEXT_MAX_CHARS`` characters or a
  user's ``MAX_ACTIVE_REMINDERS + 1``-th active reminder is refused (InvalidInput, 422) and nothing
  is scheduled;
- a time the owner's hot-memory preferences rule out moves to the next allowed time
  (:mod:`agent_memory.reminders.quiet`), and the answer says so;
- the schedule is created first, then the item; if the item cannot be written the schedule is
  deleted again (a firing whose item is missing is dropped by :func:`deliver` anyway);
- the same active reminder asked for twice (same owner, text and expression: a retried turn) is
  answered with the existing one, not scheduled twice.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from agent_memory.domain.errors import Forbidden, InvalidInput, NotFound
from agent_memory.domain.models import HotMemoryLine
from agent_memory.domain.reminders import (
    MAX_ACTIVE_REMINDERS,
    REMINDER_TEXT_MAX_CHARS,
    Reminder,
    ReminderDelivery,
)
from agent_memory.domain.text import content_problem
from agent_memory.domain.when import When
from agent_memory.ports import ReminderChannel, ReminderScheduler, ReminderStore
from agent_memory.reminders.quiet import next_allowed, quiet_rules, shift_recurrence
from agent_memory.reminders.when import parse_when

_CJK = re.compile(r"[\u4e00-\u9fff]")


#: A recurring reminder's firing this long before its stored next firing is a duplicate of the
#: previous occurrence.
EARLY_TOLERANCE = timedelta(minutes=5)
#: A firing this long after its occurrence is marked ``late`` (EventBridge Scheduler fires on time,
#: without a flexible window: later means a retry, or a local runtime that was stopped).
LATE_AFTER = timedelta(minutes=1)


class ReminderNotFound(NotFound):
    """No such reminder in the project (404)."""


@dataclass
class ReminderDeps:
    """Collaborators of the reminder use cases; tests pass fakes."""

    store: ReminderStore
    scheduler: ReminderScheduler
    now: Callable[[], datetime] = lambda: datetime.now(UTC)
    max_active: int = MAX_ACTIVE_REMINDERS


@dataclass(frozen=True)
class Scheduled:
    """The outcome of :func:`schedule_reminder`: the reminder, whether a preference moved it, and
    whether it already existed."""

    reminder: Reminder
    moved: bool = False
    existing: bool = False

    def message(self) -> str:
        """One sentence for the user, in the reminder text's language (Chinese or English)."""
        r = self.reminder
        zh = bool(_CJK.search(r.text))
        when = r.description if r.recurring else r.next_fire_local.replace("T", " ")
        if zh:
            out = f"已设置提醒「{r.text}」：{when}（{r.time_zone}），编号 {r.reminder_id}。"
            if self.existing:
                out = f"这个提醒已经设置过了：「{r.text}」，{when}（{r.time_zone}），编号 {r.reminder_id}。"
            if self.moved:
                out += f"按你的偏好「{r.shifted_because}」，已从 {r.requested} 顺延到 {when}。"
            return out
        out = f"Reminder set: \"{r.text}\" — {when} ({r.time_zone}), id {r.reminder_id}."
        if self.existing:
            out = f"That reminder already exists: \"{r.text}\" — {when} ({r.time_zone}), id {r.reminder_id}."
        if self.moved:
            out += f" Moved from {r.requested} to {when} because of your preference \"{r.shifted_because}\"."
        return out

    def as_result(self) -> dict[str, Any]:
        """The tool result (JSON) the model answers from."""
        r = self.reminder
        return {
            "ok": True, "reminder_id": r.reminder_id, "text": r.text, "recurring": r.recurring,
            "when": r.description, "next_fire_local": r.next_fire_local, "time_zone": r.time_zone,
            "moved": {"requested": r.requested, "because": r.shifted_because} if self.moved else None,
            "already_scheduled": self.existing, "message": self.message(),
        }


def check_text(text: str) -> str:
    """The reminder text, stripped. Raises InvalidInput: empty, control characters, or over
    REMINDER_TEXT_MAX_CHARS characters."""
    clean = " ".join(text.split())
    problem = content_problem(clean) if clean else "must not be empty"
    if problem is not None:
        raise InvalidInput(f"the reminder text {problem}")
    if len(clean) > REMINDER_TEXT_MAX_CHARS:
        raise InvalidInput(f"the reminder text is {len(clean)} characters; the limit is {REMINDER_TEXT_MAX_CHARS}")
    return clean


def _local_now(now: datetime, time_zone: str) -> datetime:
    return now.astimezone(ZoneInfo(time_zone)).replace(tzinfo=None, second=0, microsecond=0)


def _to_utc(local: datetime, time_zone: str) -> datetime:
    return local.replace(tzinfo=ZoneInfo(time_zone)).astimezone(UTC)


def parse_or_refuse(when: str, now_local: datetime) -> When:
    """``when`` parsed. Raises InvalidInput: no time in it, an impossible one, or a past one."""
    try:
        parsed = parse_when(when, now_local)
    except ValueError as exc:
        raise InvalidInput(f"the time cannot be used: {exc}") from None
    if parsed is None:
        raise InvalidInput("no date or time could be read from 'when' (e.g. 2026-12-04T16:00, 明天上午10点, "
                           "every Monday 09:00)")
    if parsed.at is not None and parsed.at <= now_local:
        raise InvalidInput(f"{parsed.at:%Y-%m-%d %H:%M} is in the past")
    return parsed


def schedule_reminder(
    deps: ReminderDeps,
    *,
    project_id: str,
    time_zone: str,
    owner: str,
    text: str,
    when: str,
    study_role: str | None = None,
    hot_lines: Sequence[HotMemoryLine] = (),
) -> Scheduled:
    """Schedule a reminder for ``owner`` (see the module docstring).

    Raises:
        InvalidInput: bad text or time, or the owner has ``max_active`` active reminders (422).
        ExternalServiceError: the scheduler or the store failed (nothing stays scheduled).
    """
    clean = check_text(text)
    now = deps.now()
    now_local = _local_now(now, time_zone)
    parsed = parse_or_refuse(when, now_local)
    if study_role is None and any(line.role_tag for line in hot_lines):
        study_role = deps.store.study_role_of(project_id, owner)  # a role's rule applies to its members
    rules = quiet_rules(owner, study_role, hot_lines)
    requested = parsed.describe()
    moved_because: str | None = None
    if parsed.recurrence is not None:
        shifted = shift_recurrence(parsed.recurrence, rules)
        if shifted != parsed.recurrence:
            parsed, moved_because = When(recurrence=shifted), rules.sources[0]
    else:
        assert parsed.at is not None
        allowed = next_allowed(parsed.at, rules)
        if allowed != parsed.at:
            parsed, moved_because = When(at=allowed), rules.sources[0]
    expression = deps.scheduler.expression(parsed)
    active = [r for r in deps.store.list_reminders(project_id, owner=owner) if r.status == "active"]
    for r in active:
        if r.text == clean and r.expression == expression:
            return Scheduled(r, moved=r.shifted_because is not None, existing=True)
    if len(active) >= deps.max_active:
        raise InvalidInput(f"you already have {len(active)} active reminders; the limit is {deps.max_active}")
    first = parsed.first_fire(now_local)
    reminder_id = f"r-{uuid.uuid4().hex[:16]}"
    reminder = Reminder(
        project_id=project_id, reminder_id=reminder_id, owner=owner, text=clean, recurring=parsed.recurring,
        expression=expression, description=parsed.describe(), time_zone=time_zone,
        schedule_name=f"reminder-{reminder_id}", next_fire_at=_to_utc(first, time_zone),
        next_fire_local=first.strftime("%Y-%m-%dT%H:%M"), created_at=now,
        requested=requested if moved_because else None, shifted_because=moved_because,
    )
    deps.scheduler.create(reminder)
    try:
        deps.store.put_reminder(reminder)
    except Exception:
        deps.scheduler.delete(reminder)
        raise
    return Scheduled(reminder, moved=moved_because is not None)


def list_reminders(
    deps: ReminderDeps, project_id: str, *, user_id: str, admin: bool, status: str | None = "active",
    scope: str | None = None,
) -> list[Reminder]:
    """Reminders oldest first; ``status`` None = any status. ``scope``: ``own`` (the caller's),
    ``all`` (everyone's: admins only) or None (an admin's call everyone's, a member's their own).

    Raises:
        Forbidden: ``scope="all"`` from a member (403).
    """
    if scope == "all" and not admin:
        raise Forbidden("only the project's admins may list everyone's reminders")
    everyone = scope == "all" or (scope is None and admin)
    found = deps.store.list_reminders(project_id, owner=None if everyone else user_id)
    return [r for r in found if status is None or r.status == status]


def cancel_reminder(deps: ReminderDeps, project_id: str, reminder_id: str, *, user_id: str, admin: bool) -> Reminder:
    """Cancel a reminder: its schedule is deleted, its item marked ``cancelled`` (a repeated cancel
    answers the same).

    Raises:
        ReminderNotFound: no such reminder in the project (404).
        Forbidden: neither its owner nor an admin (403).
    """
    reminder = deps.store.get_reminder(project_id, reminder_id)
    if reminder is None:
        raise ReminderNotFound(f"unknown reminder {reminder_id}")
    if reminder.owner != user_id and not admin:
        raise Forbidden("only the reminder's owner or an admin may cancel it")
    if reminder.status != "active":
        return reminder
    deps.scheduler.delete(reminder)
    cancelled = reminder.model_copy(update={"status": "cancelled"})
    deps.store.update_reminder(cancelled)
    return cancelled


def deliver(deps: ReminderDeps, channel: ReminderChannel, project_id: str, reminder_id: str) -> dict[str, Any]:
    """One firing of a schedule: deliver the reminder, then record it (a one-time reminder is
    ``done``; a recurring one gets its next firing).

    A reminder that is unknown, no longer active, or already delivered for this occurrence (a
    duplicate delivery) is skipped. A delivery failure raises (the scheduler retries, then the DLQ);
    the item is only updated after a delivery, so nothing is lost.

    A firing more than :data:`LATE_AFTER` after the occurrence it delivers (a scheduler retry, a
    local runtime that was stopped meanwhile) is delivered once and marked ``late``.

    Returns:
        ``{"status": "delivered" | "skipped", ...}``: ids, channels, ``late`` and, when delivered, the
        ``text`` (the caller must not log it).
    """
    reminder = deps.store.get_reminder(project_id, reminder_id)
    if reminder is None or reminder.status != "active":
        return {"status": "skipped", "reason": "not active", "project_id": project_id, "reminder_id": reminder_id}
    now = deps.now()
    if reminder.recurring and now < reminder.next_fire_at - EARLY_TOLERANCE:
        # Before the stored next firing: a duplicate delivery of an occurrence already delivered (a
        # one-time reminder is ``done`` after its delivery, so its duplicates stop above).
        return {"status": "skipped", "reason": "duplicate", "project_id": project_id, "reminder_id": reminder_id}
    late = now - reminder.next_fire_at > LATE_AFTER
    delivery = ReminderDelivery(
        project_id=project_id, reminder_id=reminder_id, user_id=reminder.owner, text=reminder.text, fired_at=now,
        scheduled_local=reminder.next_fire_local, recurring=reminder.recurring, late=late,
    )
    channels = channel.deliver(delivery)
    update: dict[str, Any] = {"last_fired_at": now, "fired_count": reminder.fired_count + 1}
    if reminder.recurring:
        nxt = deps.scheduler.recurrence(reminder.expression).next_after(_local_now(now, reminder.time_zone))
        update.update(next_fire_at=_to_utc(nxt, reminder.time_zone), next_fire_local=nxt.strftime("%Y-%m-%dT%H:%M"))
    else:
        update["status"] = "done"
    deps.store.update_reminder(reminder.model_copy(update=update))
    return {"status": "delivered", "project_id": project_id, "reminder_id": reminder_id, "user_id": reminder.owner,
            "channels": channels, "scheduled_local": reminder.next_fire_local, "late": late, "text": reminder.text}


__all__ = [
    "ReminderDeps", "ReminderNotFound", "Scheduled", "cancel_reminder", "check_text", "deliver", "list_reminders",
    "parse_or_refuse", "schedule_reminder",
]
