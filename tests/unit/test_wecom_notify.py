"""Reminders and admin alerts of a project with a WeCom channel (agent_memory.channels.notify):
a reminder to its owner's WeCom only (never the group robot), an alert to the group robot as
Markdown or else to each admin with a WeCom id, deduplicated across the sender's retries, and the
several channels in turn."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.channels.notify import Notifiers, ReminderChannels, WeComAlerts, WeComReminders
from agent_memory.domain.errors import ExternalServiceError
from agent_memory.domain.jobs import Alert
from agent_memory.domain.reminders import ReminderDelivery
from agent_memory.domain.wecom import WeComChannel
from tests.fakes import InMemoryStore, InMemoryWeComChannels, RecordingOutbox
from tests.support.auth import add_member

T0 = datetime(2026, 3, 10, 1, 0, tzinfo=UTC)


def _channel(robot: bool) -> WeComChannel:
    return WeComChannel(project_id="p1", corp_id="ww1", agent_id=1000002, robot_webhook=robot, updated_at=T0,
                        updated_by="pi-zhang")


def _team(store: InMemoryStore) -> None:
    """p1: the PI (admin, WeCom pi.zhang), a CRC (WeCom crc.li), a DM (no WeCom), a second admin
    without WeCom."""
    for user, role, wecom in (("pi-zhang", "admin", "pi.zhang"), ("crc-li", "member", "crc.li"),
                              ("dm-chen", "member", None), ("pi-wu", "admin", None)):
        member = add_member(store, "p1", user, role)
        store.put_member(member.model_copy(update={"wecom_userid": wecom}))


def _delivery(user: str = "crc-li") -> ReminderDelivery:
    return ReminderDelivery(project_id="p1", reminder_id="r-42", user_id=user, text="给P005打随访电话",
                            fired_at=T0, scheduled_local="2026-03-10 09:00", recurring=False)


ALERT = Alert(project_id="p1", kind="weekly_report_failed", subject="Weekly report failed",
              message="2026-W10: 3 attempts, job id j-77", dedupe_key="weekly#p1#2026-W10")


def _reminders(store: InMemoryStore, *, robot: bool = True) -> tuple[WeComReminders, RecordingOutbox]:
    outbox = RecordingOutbox()
    return WeComReminders(InMemoryWeComChannels({"p1": _channel(robot)}), store, outbox), outbox


def test_a_reminder_goes_to_its_owners_wecom_as_an_application_message(store: InMemoryStore) -> None:
    _team(store)
    channel, outbox = _reminders(store)
    assert channel.deliver(_delivery()) == ["wecom"]
    (sent,) = outbox.sent
    assert sent.to_userid == "crc.li" and not sent.markdown  # never the group robot, though p1 has one
    assert sent.text == "⏰ 提醒 / Reminder (2026-03-10 09:00)\n给P005打随访电话"
    assert sent.dedupe_key == "reminder#p1#r-42#2026-03-10 09:00"


@pytest.mark.parametrize("owner", ["dm-chen", "gone-user"])
def test_a_reminder_of_an_owner_without_wecom_or_no_longer_a_member_is_not_sent(
    store: InMemoryStore, owner: str
) -> None:
    _team(store)
    channel, outbox = _reminders(store)
    assert channel.deliver(_delivery(owner)) == [] and outbox.sent == []


def test_a_project_without_channel_sends_nothing_to_wecom(store: InMemoryStore) -> None:
    _team(store)
    outbox = RecordingOutbox()
    assert WeComReminders(InMemoryWeComChannels(), store, outbox).deliver(_delivery()) == []
    WeComAlerts(InMemoryWeComChannels(), store, outbox).notify(ALERT)
    assert outbox.sent == []


def test_an_alert_goes_to_the_group_robot_as_markdown(store: InMemoryStore) -> None:
    _team(store)
    outbox = RecordingOutbox()
    WeComAlerts(InMemoryWeComChannels({"p1": _channel(robot=True)}), store, outbox).notify(ALERT)
    (sent,) = outbox.sent
    assert sent.to_userid is None and sent.markdown
    assert sent.text == "**Weekly report failed**\n> project: p1\n\n2026-W10: 3 attempts, job id j-77"
    assert sent.dedupe_key == "alert#p1#weekly#p1#2026-W10"


def test_without_robot_an_alert_goes_to_each_admin_with_a_wecom_id(store: InMemoryStore) -> None:
    _team(store)
    outbox = RecordingOutbox()
    WeComAlerts(InMemoryWeComChannels({"p1": _channel(robot=False)}), store, outbox).notify(ALERT)
    assert [(m.to_userid, m.dedupe_key) for m in outbox.sent] == [("pi.zhang", "alert#p1#weekly#p1#2026-W10#pi-zhang")]
    assert outbox.sent[0].text.startswith("Weekly report failed\nproject: p1")


def test_a_failed_outbox_raises_so_the_sender_retries(store: InMemoryStore) -> None:
    _team(store)
    channel, outbox = _reminders(store)
    outbox.fail = True
    with pytest.raises(ExternalServiceError):
        channel.deliver(_delivery())


def test_several_channels_deliver_in_turn(store: InMemoryStore) -> None:
    _team(store)

    class Sns:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def deliver(self, delivery: ReminderDelivery) -> list[str]:
            self.seen.append(delivery.reminder_id)
            return ["sns"]

        def notify(self, alert: Alert) -> None:
            self.seen.append(alert.dedupe_key)

    sns = Sns()
    wecom, outbox = _reminders(store)
    assert ReminderChannels([sns, wecom]).deliver(_delivery()) == ["sns", "wecom"]
    Notifiers([sns, WeComAlerts(InMemoryWeComChannels({"p1": _channel(robot=True)}), store, outbox)]).notify(ALERT)
    assert sns.seen == ["r-42", "weekly#p1#2026-W10"] and len(outbox.sent) == 2
