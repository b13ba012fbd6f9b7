"""PynamoDB models the admin API adds to the EXISTING MemoryTable (issue 5).

Key layout (``pk = {project_id}``: every key starts with the project id; case B08):

| sk | item |
|---|---|
| ``AUDIT#{UTC ISO time}#{audit_id}`` | one admin change: who, when, what, why |
| ``REPORTREV#{YYYY-Www}#{revision:06d}`` | a weekly report's text before an admin correction |
| ``REVIEW#{day}#{review_id}`` | the jobs' review-queue item, read here with the decision fields |

Bound like :mod:`agent_memory.adapters.dynamo.job_tables`: :func:`sync_admin_tables` copies the binding of the
core models (``bind_tables``), so no change to that module is needed.
"""

from __future__ import annotations

from pynamodb.attributes import ListAttribute, NumberAttribute, UnicodeAttribute, UTCDateTimeAttribute
from pynamodb.models import Model

from agent_memory.adapters.dynamo.job_tables import ReviewQueueItem, sync_job_tables
from agent_memory.adapters.dynamo.tables import ProjectItem, Utf8JSONAttribute, _Base, register_models


class AuditItem(_Base):
    """``sk = AUDIT#{at}#{audit_id}``: immutable record of one admin change."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    audit_id = UnicodeAttribute()
    at = UTCDateTimeAttribute()
    actor = UnicodeAttribute()
    action = UnicodeAttribute()
    target = UnicodeAttribute()
    reason = UnicodeAttribute(null=True)
    details = Utf8JSONAttribute(default=dict)


class ReportRevisionItem(_Base):
    """``sk = REPORTREV#{iso_week}#{revision:06d}``: the text a correction replaced."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    iso_week = UnicodeAttribute()
    revision = NumberAttribute()
    summary = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute()
    evidence = ListAttribute(of=UnicodeAttribute, default=list)
    replaced_at = UTCDateTimeAttribute()
    replaced_by = UnicodeAttribute()


class ReviewDecisionItem(ReviewQueueItem):
    """The review-queue item (same key and attributes as the jobs write) plus the admin decision."""

    class Meta(ReviewQueueItem.Meta):
        table_name = "unbound-memory"

    decided_by = UnicodeAttribute(null=True)
    decided_at = UTCDateTimeAttribute(null=True)
    decision_reason = UnicodeAttribute(null=True)


ADMIN_MODELS: tuple[type[Model], ...] = (AuditItem, ReportRevisionItem, ReviewDecisionItem)
register_models("memory", *ADMIN_MODELS)


_synced_with: list[object] = [None]


def sync_admin_tables() -> None:
    """Point the admin models (and the job models) at the bound MemoryTable (cheap; idempotent).

    Connections are reset whenever the core models were re-bound (``bind_tables`` gives them a new
    connection), not only when the table name changed: two stacks (moto in tests, the local
    runtime) may use the same table names on different endpoints.
    """
    sync_job_tables()
    name = ProjectItem.Meta.table_name
    region = ProjectItem.Meta.region
    marker = ProjectItem._get_connection()
    rebound = _synced_with[0] is not marker
    for model in ADMIN_MODELS:
        if rebound or model.Meta.table_name != name or model.Meta.region != region:
            model.Meta.table_name = name
            model.Meta.region = region
            model._connection = None
    _synced_with[0] = marker
