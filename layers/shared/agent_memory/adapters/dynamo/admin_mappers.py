"""Conversions of the items only the admin function's store reads or writes: hot-memory revision
summaries, report revisions, review-queue entries as the admin API shows them, audit records
(see :mod:`.mappers`)."""

from __future__ import annotations

from datetime import datetime

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.fields import item_fields, read_fields
from agent_memory.adapters.dynamo.record_tables import AuditItem, ReportRevisionItem, ReviewQueueItem
from agent_memory.adapters.dynamo.tables import HotMemoryRevisionItem
from agent_memory.domain.models import WeeklyReport
from agent_memory.domain.records import AuditRecord, ReportRevision, ReviewEntry, RevisionSummary, review_item_id


def revision_summary_from_item(item: HotMemoryRevisionItem) -> RevisionSummary:
    """Who stored a ``HOTREV#`` version, when and why (its lines are not read)."""
    return RevisionSummary(**read_fields(item, RevisionSummary,
        version=int(item.revision),
        tokens=int(item.tokens or 0),
    ))


def review_entry_from_item(item: ReviewQueueItem) -> ReviewEntry:
    """The review-queue item as the admin API shows it (route id and decision included)."""
    return ReviewEntry(**read_fields(item, ReviewEntry,
        item_id=review_item_id(item.day, item.review_id),
        evidence=list(item.evidence or []),
    ))


def audit_to_item(audit: AuditRecord) -> AuditItem:
    return AuditItem(audit.project_id, keys.audit_sk(audit.at, audit.audit_id), **item_fields(audit, AuditItem))


def audit_from_item(item: AuditItem) -> AuditRecord:
    return AuditRecord(**read_fields(item, AuditRecord,
        project_id=item.pk,
        details=dict(item.details or {}),
    ))


def report_revision_to_item(previous: WeeklyReport, *, replaced_at: datetime, replaced_by: str) -> ReportRevisionItem:
    """The ``REPORTREV#`` item keeping ``previous``'s text when a correction replaces it."""
    return ReportRevisionItem(
        previous.project_id, keys.report_revision_sk(previous.iso_week, previous.revision),
        **item_fields(previous, ReportRevisionItem,
        evidence=list(previous.evidence),
        replaced_at=replaced_at,
        replaced_by=replaced_by,
    ))


def report_revision_from_item(item: ReportRevisionItem) -> ReportRevision:
    """A ``REPORTREV#`` item: a replaced revision of a report, with who replaced it and when."""
    return ReportRevision(**read_fields(item, ReportRevision, revision=int(item.revision)))


__all__ = [
    "audit_from_item",
    "audit_to_item",
    "report_revision_from_item",
    "report_revision_to_item",
    "review_entry_from_item",
    "revision_summary_from_item",
]
