"""Where a project's reminders and admin alerts go besides SNS and the webhook: its WeCom channel
(docs/architecture.md, "WeCom").

- A reminder goes to its owner as an application message when the project has a WeCom channel
  and the owner a WeCom user id. It never goes to the group robot: a reminder is its owner's own
  text (it may name a patient), not the group's.
- An admin alert goes to the group robot (Markdown) when the channel has one, else as an
  application message to each admin of the project with a WeCom user id. Alerts hold ids, counts
  and token numbers only (``agent_memory.domain.jobs.Alert``).

Both queue the message on the WeCom outbox (ordered per recipient, deduplicated on the reminder's
occurrence or the alert's dedupe key, so the scheduler's or the job's retry sends nothing twice);
the outbox's consumer sends it, with retries, then a dead-letter queue and its alarm.

:class:`ReminderChannels` and :class:`Notifiers` deliver to several channels in turn (a failure
raises after the channels before it delivered: the retry may repeat those, never skip one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_memory.domain.wecom import WeComOutbound

if TYPE_CHECKING:
    from agent_memory.domain.jobs import Alert
    from agent_memory.domain.reminders import ReminderDelivery
    from agent_memory.ports import MemberStore, Notifier, ReminderChannel, WeComChannelStore, WeComOutbox


def reminder_text(delivery: ReminderDelivery) -> str:
    """A reminder as its owner reads it in WeCom (the scheduled local time, then the text)."""
    return f"⏰ 提醒 / Reminder ({delivery.scheduled_local})\n{delivery.text}"


def alert_markdown(alert: Alert) -> str:
    """An admin alert as WeCom Markdown: the subject in bold, the project, the message."""
    return f"**{alert.subject}**\n> project: {alert.project_id}\n\n{alert.message}"


@dataclass(frozen=True)
class WeComReminders:
    """A reminder channel (port ``ReminderChannel``): the owner's WeCom, when they have one."""

    channels: WeComChannelStore
    members: MemberStore
    outbox: WeComOutbox

    def deliver(self, delivery: ReminderDelivery) -> list[str]:
        """Queue the reminder for its owner's WeCom; ``["wecom"]``, or ``[]`` when the project has no
        channel or the owner no WeCom user id (or is no longer a member).

        Raises:
            ExternalServiceError: the table or the outbox failed (the scheduler retries).
        """
        if self.channels.get_channel(delivery.project_id) is None:
            return []
        owner = self.members.get_member(delivery.project_id, delivery.user_id)
        if owner is None or not owner.wecom_userid:
            return []
        key = f"reminder#{delivery.project_id}#{delivery.reminder_id}#{delivery.scheduled_local}"
        self.outbox.send([WeComOutbound(project_id=delivery.project_id, to_userid=owner.wecom_userid,
                                        text=reminder_text(delivery), dedupe_key=key)])
        return ["wecom"]


@dataclass(frozen=True)
class WeComAlerts:
    """An admin-alert notifier (port ``Notifier``): the group robot, else the admins' WeCom."""

    channels: WeComChannelStore
    members: MemberStore
    outbox: WeComOutbox

    def notify(self, alert: Alert) -> None:
        """Queue the alert (nothing when the project has no channel, no robot and no admin with a
        WeCom user id).

        Raises:
            ExternalServiceError: the table or the outbox failed (the job releases its claim and retries).
        """
        channel = self.channels.get_channel(alert.project_id)
        if channel is None:
            return
        key = f"alert#{alert.project_id}#{alert.dedupe_key}"
        if channel.robot_webhook:
            messages = [WeComOutbound(project_id=alert.project_id, to_userid=None, text=alert_markdown(alert),
                                      dedupe_key=key)]
        else:
            admins = [m for m in self.members.list_members(alert.project_id)
                      if m.project_role == "admin" and m.wecom_userid]
            text = f"{alert.subject}\nproject: {alert.project_id}\n\n{alert.message}"
            messages = [WeComOutbound(project_id=alert.project_id, to_userid=m.wecom_userid, text=text,
                                      dedupe_key=f"{key}#{m.user_id}") for m in admins]
        if messages:
            self.outbox.send(messages)


@dataclass(frozen=True)
class ReminderChannels:
    """Several reminder channels in turn (port ``ReminderChannel``)."""

    channels: Sequence[ReminderChannel]

    def deliver(self, delivery: ReminderDelivery) -> list[str]:
        """Deliver through each channel; the names of the channels used, in order."""
        return [name for channel in self.channels for name in channel.deliver(delivery)]


@dataclass(frozen=True)
class Notifiers:
    """Several admin-alert notifiers in turn (port ``Notifier``)."""

    notifiers: Sequence[Notifier]

    def notify(self, alert: Alert) -> None:
        """Notify through each."""
        for notifier in self.notifiers:
            notifier.notify(alert)


__all__ = ["Notifiers", "ReminderChannels", "WeComAlerts", "WeComReminders", "alert_markdown", "reminder_text"]
