"""Conversions of the items of the background jobs: job runs, flow-log entries as the jobs read
them, sent alerts, and review items as the distiller queues them (see :mod:`.mappers`)."""

from __future__ import annotations

from datetime import datetime

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem
from agent_memory.adapters.dynamo.fields import item_fields, read_fields
from agent_memory.adapters.dynamo.record_tables import AlertSentItem, JobRunItem, ReviewQueueItem
from agent_memory.domain.jobs import FlowLogEntry, JobRun, ReviewItem


def flow_log_entry_from_item(item: FlowLogItem) -> FlowLogEntry:
    return FlowLogEntry(**read_fields(item, FlowLogEntry))


def job_run_to_item(run: JobRun) -> JobRunItem:
    return JobRunItem(run.project_id, keys.job_run_sk(run.job, run.key), **item_fields(run, JobRunItem,
        counts=dict(run.counts),
    ))


def job_run_from_item(item: JobRunItem) -> JobRun:
    return JobRun(**read_fields(item, JobRun,
        project_id=item.pk,
        counts={k: int(v) for k, v in (item.counts or {}).items()},
        hot_version=int(item.hot_version) if item.hot_version is not None else None,
    ))


def alert_to_item(project_id: str, dedupe_key: str, *, kind: str, now: datetime) -> AlertSentItem:
    return AlertSentItem(project_id, keys.alert_sk(dedupe_key), kind=kind, created_at=now)


def review_to_item(r: ReviewItem) -> ReviewQueueItem:
    """A new review-queue item, as the distiller queues it (undecided)."""
    return ReviewQueueItem(r.project_id, keys.review_sk(r.day, r.review_id), **item_fields(r, ReviewQueueItem))


__all__ = [
    "alert_to_item",
    "flow_log_entry_from_item",
    "job_run_from_item",
    "job_run_to_item",
    "review_to_item",
]
