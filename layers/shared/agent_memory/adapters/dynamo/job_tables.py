"""PynamoDB models the background jobs add to the EXISTING MemoryTable (issue 4).

Key layout (``pk = {project_id}``, so every key starts with the project id; case B08):

| sk | item |
|---|---|
| ``REVIEW#{local day}#{review_id}`` | a distilled candidate held for admin review (case B09) |
| ``JOBRUN#{job}#{key}`` | completion marker of a job run (idempotency; key = day / ISO week / date) |
| ``YEAR#{yyyy}`` | yearly summary of a complete ISO year older than the 50 loaded weeks |
| ``ALERT#{dedupe key}`` | an admin alert that was sent (at most once per key) |

These models follow the table binding of :mod:`agent_memory.adapters.dynamo.tables` (``bind_tables``)
through :func:`sync_job_tables`, so no change to that module is needed.
"""

from __future__ import annotations

from pynamodb.attributes import (
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
)
from pynamodb.models import Model

from agent_memory.adapters.dynamo.tables import ProjectItem, _Base, register_models


class ReviewQueueItem(_Base):
    """``sk = REVIEW#{local day}#{review_id}``: candidate, evidence ids and the reason it was held."""

    class Meta(_Base.Meta):
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


class JobRunItem(_Base):
    """``sk = JOBRUN#{job}#{key}``: a job finished for that period (checked first by every job)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    job = UnicodeAttribute()
    key = UnicodeAttribute()
    status = UnicodeAttribute(default="done")
    completed_at = UTCDateTimeAttribute()
    counts = JSONAttribute(default=dict)
    hot_version = NumberAttribute(null=True)


class YearSummaryItem(_Base):
    """``sk = YEAR#{yyyy}``: yearly summary built from that year's weekly reports."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    year = NumberAttribute()
    summary = UnicodeAttribute()
    weeks = ListAttribute(of=UnicodeAttribute, default=list)
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute(default="pruner")


class AlertSentItem(_Base):
    """``sk = ALERT#{dedupe key}``: this alert was sent (so a re-run never sends it twice)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    kind = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()


JOB_MODELS: tuple[type[Model], ...] = (ReviewQueueItem, JobRunItem, YearSummaryItem, AlertSentItem)
register_models("memory", *JOB_MODELS)


def sync_job_tables() -> None:
    """Point the job models at the MemoryTable the core models are bound to (cheap; idempotent).

    ``bind_tables`` binds the core models at cold start; this copies that binding (table name
    and region) and resets a model's connection only when it changed.
    """
    name = ProjectItem.Meta.table_name
    region = ProjectItem.Meta.region
    for model in JOB_MODELS:
        if model.Meta.table_name != name or model.Meta.region != region:
            model.Meta.table_name = name
            model.Meta.region = region
            model._connection = None
