"""Conversions of the items only the admin function's store reads or writes: hot-memory revision
summaries, report revisions, review-queue entries as the admin API shows them, audit records
(see :mod:`.mappers`)."""

from __future__ import annotations

from datetime import datetime

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.record_tables import AuditItem, ReportRevisionItem, ReviewQueueItem
from agent_memory.adapters.dynamo.tables import HotMemoryRevisionItem
from agent_memory.domain.models import WeeklyReport
from agent_memory.domain.records import AuditRecord, ReviewEntry, RevisionSummary, review_item_id


def revision_summary_from_item(item: HotMemoryRevisionItem) -> RevisionSummary:
    """Who stored a ``HOTREV#`` version, when and why (its lines are not read)."""
    return RevisionSummary(
        version=int(item.revision),
        created_at=item.created_at,
        created_by=item.created_by,
        reason=item.reason,
        tokens=int(item.tokens or 0),
    )


def review_entry_from_item(item: ReviewQueueItem) -> ReviewEntry:
    """The review-queue item as the admin API shows it (route id and decision included)."""
    return ReviewEntry(
        item_id=review_item_id(item.day, item.review_id),
        review_id=item.review_id,
        day=item.day,
        text=item.text,
        section=item.section,
        role_tag=item.role_tag,
        evidence=list(item.evidence or []),
        reason=item.reason,
        detail=item.detail,
        origin=item.origin,
        status=item.status,
        created_at=item.created_at,
        created_by=item.created_by,
        decided_by=item.decided_by,
        decided_at=item.decided_at,
        decision_reason=item.decision_reason,
    )


def audit_to_item(audit: AuditRecord) -> AuditItem:
    return AuditItem(
        audit.project_id,
        keys.audit_sk(audit.at, audit.audit_id),
        audit_id=audit.audit_id,
        at=audit.at,
        actor=audit.actor,
        action=audit.action,
        target=audit.target,
        reason=audit.reason,
        details=audit.details,
    )


def audit_from_item(item: AuditItem) -> AuditRecord:
    return AuditRecord(
        project_id=item.pk,
        audit_id=item.audit_id,
        at=item.at,
        actor=item.actor,
        action=item.action,
        target=item.target,
        reason=item.reason,
        details=dict(item.details or {}),
    )


def report_revision_to_item(previous: WeeklyReport, *, replaced_at: datetime, replaced_by: str) -> ReportRevisionItem:
    """The ``REPORTREV#`` item keeping ``previous``'s text when a correction replaces it."""
    return ReportRevisionItem(
        previous.project_id,
        keys.report_revision_sk(previous.iso_week, previous.revision),
        iso_week=previous.iso_week,
        revision=previous.revision,
        summary=previous.summary,
        created_at=previous.created_at,
        created_by=previous.created_by,
        evidence=list(previous.evidence),
        replaced_at=replaced_at,
        replaced_by=replaced_by,
    )


__all__ = [
    "audit_from_item",
    "audit_to_item",
    "report_revision_to_item",
    "review_entry_from_item",
    "revision_summary_from_item",
]
