"""Reminder items in the MemoryTable: pk ``{project}``, sk ``REMINDER#{reminder_id}`` (the whole
reminder as JSON, plus ``owner`` and ``status`` for filtering); the project's webhook at sk
``WEBHOOK``. A project's reminders are one Query (``begins_with(sk, "REMINDER#")``)."""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist

from agent_memory.adapters.dynamo.access import sdk_errors_as_domain
from agent_memory.adapters.dynamo.fields import item_fields
from agent_memory.adapters.dynamo.members import study_role_of
from agent_memory.adapters.dynamo.record_tables import ReminderItem, WebhookItem
from agent_memory.domain.reminders import Reminder

REMINDER_PREFIX = "REMINDER#"
WEBHOOK_SK = "WEBHOOK"


def reminder_sk(reminder_id: str) -> str:
    """``REMINDER#{reminder_id}``."""
    return f"{REMINDER_PREFIX}{reminder_id}"


def _item(r: Reminder) -> ReminderItem:
    return ReminderItem(r.project_id, reminder_sk(r.reminder_id), **item_fields(r, ReminderItem,
        reminder=r.model_dump(mode="json"),
    ))


@sdk_errors_as_domain
class ReminderRepository:
    """The reminder store (port ``ReminderStore``) and the webhook lookup of the delivery."""

    def put_reminder(self, reminder: Reminder) -> None:
        """Write a new reminder (its id is new: never overwrites another)."""
        _item(reminder).save(condition=ReminderItem.sk.does_not_exist())

    def get_reminder(self, project_id: str, reminder_id: str) -> Reminder | None:
        """The reminder (strongly consistent) or None."""
        try:
            item = ReminderItem.get(project_id, reminder_sk(reminder_id), consistent_read=True)
        except DoesNotExist:
            return None
        return Reminder.model_validate(item.reminder)

    def list_reminders(self, project_id: str, *, owner: str | None = None) -> list[Reminder]:
        """The project's reminders (one owner's when given), oldest first."""
        condition = ReminderItem.owner == owner if owner is not None else None
        items = ReminderItem.query(project_id, ReminderItem.sk.startswith(REMINDER_PREFIX),
                                   filter_condition=condition, consistent_read=True)
        found = [Reminder.model_validate(i.reminder) for i in items]
        return sorted(found, key=lambda r: r.created_at)

    def update_reminder(self, reminder: Reminder) -> None:
        """Overwrite the stored reminder (it must exist)."""
        _item(reminder).save(condition=ReminderItem.sk.exists())

    def study_role_of(self, project_id: str, user_id: str) -> str | None:
        """The member's study role, or None (:func:`.members.study_role_of`: one GetItem)."""
        return study_role_of(project_id, user_id)

    def webhook(self, project_id: str) -> tuple[str, str] | None:
        """The project's webhook ``(url, secret name)`` or None."""
        try:
            item = WebhookItem.get(project_id, WEBHOOK_SK)
        except DoesNotExist:
            return None
        return item.url, item.secret_name

    def put_webhook(self, project_id: str, url: str, secret_name: str) -> None:
        """Set the project's webhook (local runs and tests; no HTTP route sets it)."""
        WebhookItem(project_id, WEBHOOK_SK, url=url, secret_name=secret_name).save()


__all__ = ["REMINDER_PREFIX", "ReminderRepository", "reminder_sk"]
