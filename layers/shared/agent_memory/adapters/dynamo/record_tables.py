"""PynamoDB models of the MemoryTable's records that only some functions read or write: report
revisions, the review queue, job runs, sent alerts, audit, erasures, reminders, webhooks and the
WeCom channel, registered with :func:`.tables.register` (bound like every model by
:func:`.tables.bind_tables`).
Key layout: :mod:`agent_memory.adapters.dynamo.keys`.
"""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)

from agent_memory.adapters.dynamo.tables import BaseItem, Utf8JSONAttribute, register


class ReportRevisionItem(BaseItem):
    """``sk = REPORTREV#{iso_week}#{revision:06d}``: the text an admin correction replaced."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    iso_week = UnicodeAttribute()
    revision = NumberAttribute()
    summary = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute()
    evidence = ListAttribute(of=UnicodeAttribute, default=list)
    reason = UnicodeAttribute(null=True)  # why this revision was made (a correction's reason)
    replaced_at = UTCDateTimeAttribute()
    replaced_by = UnicodeAttribute()


class ReviewQueueItem(BaseItem):
    """``sk = REVIEW#{local day}#{review_id}``: a distilled candidate held for admin review, with
    its evidence ids and the reason it was held; the ``decided_*`` fields are set by the admin's
    decision (the jobs create the item, only the admin API updates it)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    review_id = UnicodeAttribute()
    day = UnicodeAttribute()
    text = UnicodeAttribute()
    section = UnicodeAttribute()
    role_tag = UnicodeAttribute(null=True)
    evidence = ListAttribute(of=UnicodeAttribute, default=list)
    reason = UnicodeAttribute()
    detail = UnicodeAttribute(null=True)
    origin = UnicodeAttribute(default="rules")
    status = UnicodeAttribute(default="pending")
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute(default="distiller")
    decided_by = UnicodeAttribute(null=True)
    decided_at = UTCDateTimeAttribute(null=True)
    decision_reason = UnicodeAttribute(null=True)
    approved_text = UnicodeAttribute(null=True)


class JobRunItem(BaseItem):
    """``sk = JOBRUN#{job}#{key}``: a job finished for that period (checked first by every job)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    job = UnicodeAttribute()
    key = UnicodeAttribute()
    status = UnicodeAttribute(default="done")
    completed_at = UTCDateTimeAttribute()
    counts = JSONAttribute(default=dict)
    hot_version = NumberAttribute(null=True)


class AlertSentItem(BaseItem):
    """``sk = ALERT#{dedupe key}``: this alert was sent (so a re-run never sends it twice)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    kind = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()


class AuditItem(BaseItem):
    """``sk = AUDIT#{at}#{audit_id}``: immutable record of one admin change."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    audit_id = UnicodeAttribute()
    at = UTCDateTimeAttribute()
    actor = UnicodeAttribute()
    action = UnicodeAttribute()
    target = UnicodeAttribute()
    reason = UnicodeAttribute(null=True)
    details = Utf8JSONAttribute(default=dict)


class ErasureItem(BaseItem):
    """``sk = ERASURE#{kind}#{target_id}``: the audit record of an erasure (who, when, what kind,
    how many items; no content). Never erased; a session's record also refuses later writes to
    that session (the turn's transaction checks it does not exist)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    kind = UnicodeAttribute()
    target_id = UnicodeAttribute()
    actor = UnicodeAttribute()
    requested_at = UTCDateTimeAttribute()
    status = UnicodeAttribute(default="running")
    finished_at = UTCDateTimeAttribute(null=True)
    mode = UnicodeAttribute(default="inline")
    sessions = ListAttribute(of=UnicodeAttribute, default=list)
    counts = JSONAttribute(default=dict)


class ReminderItem(BaseItem):
    """``sk = REMINDER#{reminder_id}``: one reminder (owner, text, schedule, next firing, status)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    reminder = Utf8JSONAttribute()
    owner = UnicodeAttribute()
    status = UnicodeAttribute()


class WebhookItem(BaseItem):
    """``sk = WEBHOOK``: the project's reminder webhook (URL and the Secrets Manager secret holding
    its HMAC key); absent = no webhook."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    url = UnicodeAttribute()
    secret_name = UnicodeAttribute()


class WeComChannelItem(BaseItem):
    """``sk = CHANNEL#wecom``: the project's WeCom channel as readable (corp id, agent id, whether a
    robot is set, who set it when); the credentials are in the project's channel secret."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    corp_id = UnicodeAttribute()
    agent_id = NumberAttribute()
    robot_webhook = BooleanAttribute()
    updated_at = UTCDateTimeAttribute()
    updated_by = UnicodeAttribute()


register(
    "memory",
    ReportRevisionItem,
    ReviewQueueItem,
    JobRunItem,
    AlertSentItem,
    AuditItem,
    ErasureItem,
    ReminderItem,
    WebhookItem,
    WeComChannelItem,
)

__all__ = [
    "AlertSentItem",
    "AuditItem",
    "ErasureItem",
    "JobRunItem",
    "ReminderItem",
    "ReportRevisionItem",
    "ReviewQueueItem",
    "WeComChannelItem",
    "WebhookItem",
]
