"""Conversions of the items of the background jobs: job runs, flow-log entries as the jobs read
them, sent alerts, and review items as the distiller queues them (see :mod:`.mappers`)."""

from __future__ import annotations

from datetime import datetime

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem
from agent_memory.adapters.dynamo.record_tables import AlertSentItem, JobRunItem, ReviewQueueItem
from agent_memory.domain.jobs import FlowLogEntry, JobRun, ReviewItem


def flow_log_entry_from_item(item: FlowLogItem) -> FlowLogEntry:
    return FlowLogEntry(
        message_id=item.message_id,
        session_id=item.session_id,
        role=item.role,
        content=item.content,
        at=item.at,
        user_id=item.user_id,
        study_role=item.study_role,
        status=item.status,
        source=item.source,
        rating=item.rating,
    )


def job_run_to_item(run: JobRun) -> JobRunItem:
    return JobRunItem(
        run.project_id,
        keys.job_run_sk(run.job, run.key),
        job=run.job,
        key=run.key,
        status=run.status,
        completed_at=run.completed_at,
        counts=dict(run.counts),
        hot_version=run.hot_version,
    )


def job_run_from_item(item: JobRunItem) -> JobRun:
    return JobRun(
        project_id=item.pk,
        job=item.job,
        key=item.key,
        status=item.status,
        completed_at=item.completed_at,
        counts={k: int(v) for k, v in (item.counts or {}).items()},
        hot_version=int(item.hot_version) if item.hot_version is not None else None,
    )


def alert_to_item(project_id: str, dedupe_key: str, *, kind: str, now: datetime) -> AlertSentItem:
    return AlertSentItem(project_id, keys.alert_sk(dedupe_key), kind=kind, created_at=now)


def review_to_item(r: ReviewItem) -> ReviewQueueItem:
    """A new review-queue item, as the distiller queues it (undecided)."""
    return ReviewQueueItem(
        r.project_id,
        keys.review_sk(r.day, r.review_id),
        review_id=r.review_id,
        day=r.day,
        text=r.text,
        section=r.section,
        role_tag=r.role_tag,
        evidence=r.evidence,
        reason=r.reason,
        detail=r.detail,
        origin=r.origin,
        status=r.status,
        created_at=r.created_at,
        created_by=r.created_by,
    )


__all__ = [
    "alert_to_item",
    "flow_log_entry_from_item",
    "job_run_from_item",
    "job_run_to_item",
    "review_to_item",
]
