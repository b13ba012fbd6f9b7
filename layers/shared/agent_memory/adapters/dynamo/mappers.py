"""Every conversion between a stored item and a domain model, one pair per kind of item.

``<kind>_to_item(model)`` builds the item to write (keys from :mod:`.keys`);
``<kind>_from_item(item)`` reads one back. Items with a byte budget are checked with
:func:`check_size` before they are written, so a write never meets DynamoDB's 400 KB item limit.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pynamodb.expressions.update import Action
from pynamodb.models import Model

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.tables import (
    ActivityItem,
    AlertSentItem,
    AuditItem,
    DiagnosisItem,
    FlowLogItem,
    HotMemoryItem,
    HotMemoryRevisionItem,
    JobRunItem,
    MemberItem,
    MessageItem,
    ProjectItem,
    ReportRevisionItem,
    ReviewQueueItem,
    SessionItem,
    WeeklyReportItem,
    YearSummaryItem,
)
from agent_memory.domain.errors import ItemTooLarge
from agent_memory.domain.jobs import FlowLogEntry, JobRun, ReviewItem
from agent_memory.domain.models import (
    ClinicalDataSource,
    HotMemory,
    HotMemoryLine,
    Member,
    MessageRecord,
    Project,
    SessionState,
    ToolCall,
    WeeklyReport,
    YearlySummary,
)
from agent_memory.domain.records import AuditRecord, ReviewEntry, RevisionSummary, review_item_id
from agent_memory.domain.session_models import Diagnosis, SessionListItem, report_problem
from agent_memory.domain.text import DYNAMODB_ITEM_LIMIT_BYTES, dynamodb_item_size
from agent_memory.observability import logger

#: Byte budget of the session item (window + facts + summary + metadata), kept well under
#: DynamoDB's 400 KB item limit so that a turn can never hit it.
SESSION_ITEM_BUDGET_BYTES = 350_000
#: Byte budget of one message item (content + context manifest + tool calls).
MESSAGE_ITEM_BUDGET_BYTES = 380_000
#: Byte budget of the hot-memory item and of each of its revision items.
HOT_ITEM_MAX_BYTES = DYNAMODB_ITEM_LIMIT_BYTES - 10_000
#: Byte budget of a diagnosis item (report + symptom snapshot).
DIAGNOSIS_ITEM_BUDGET_BYTES = 300_000
#: The only key of the report shown for a stored report that cannot be read back (too deep).
UNREADABLE_REPORT_KEY = "_unreadable_report"


def check_size(item: Model, budget: int, what: str) -> None:
    """Raise :class:`ItemTooLarge` when ``item`` serialised is over ``budget`` bytes."""
    size = dynamodb_item_size(item.serialize())
    if size > budget:
        raise ItemTooLarge(f"{what} item would be {size} bytes (budget {budget})")


# ----------------------------------------------------------------------------------- project
def project_to_item(project: Project) -> ProjectItem:
    return ProjectItem(
        project.project_id,
        keys.PROJECT_SK,
        name=project.name,
        time_zone=project.time_zone,
        kind=project.kind,
        clinical_data=project.clinical_data.model_dump(mode="json") if project.clinical_data else None,
        created_at=project.created_at,
    )


def project_update_actions(project: Project) -> list[Action]:
    """The UpdateItem actions that make the ``PROJECT`` item hold ``project``: every field the
    domain model has, so that an update keeps what only the store keeps (``patient_refs_since``)."""
    clinical = project.clinical_data.model_dump(mode="json") if project.clinical_data else None
    return [
        ProjectItem.name.set(project.name),
        ProjectItem.time_zone.set(project.time_zone),
        ProjectItem.kind.set(project.kind),
        ProjectItem.created_at.set(project.created_at),
        ProjectItem.clinical_data.set(clinical) if clinical is not None else ProjectItem.clinical_data.remove(),
    ]


def new_project_item(project: Project) -> ProjectItem:
    """The ``PROJECT`` item of a project created now: no diagnosis exists yet, so every future one
    is referenced by its patient's item (``patient_refs_since`` = its creation time)."""
    item = project_to_item(project)
    item.patient_refs_since = project.created_at
    return item


def project_from_item(item: ProjectItem) -> Project:
    return Project(
        project_id=item.pk,
        name=item.name,
        time_zone=item.time_zone,
        kind=item.kind,  # type: ignore[arg-type]
        clinical_data=ClinicalDataSource.model_validate(item.clinical_data) if item.clinical_data else None,
        created_at=item.created_at,
    )


def member_to_item(member: Member) -> MemberItem:
    return MemberItem(
        member.project_id,
        keys.member_sk(member.user_id),
        user_id=member.user_id,
        project_role=member.project_role,
        study_role=member.study_role,
        display_name=member.display_name,
        added_at=member.added_at,
        added_by=member.added_by,
    )


def member_from_item(item: MemberItem) -> Member:
    return Member(
        project_id=item.pk,
        user_id=item.user_id,
        project_role=item.project_role,  # type: ignore[arg-type]
        study_role=item.study_role,  # type: ignore[arg-type]
        display_name=item.display_name,
        added_at=item.added_at,
        added_by=item.added_by,
    )


# -------------------------------------------------------------------------------- hot memory
def hot_memory_from_item(item: HotMemoryItem) -> HotMemory:
    return HotMemory(
        project_id=item.pk,
        version=int(item.version or 0),
        lines=[HotMemoryLine.model_validate(x) for x in item.lines or []],
        updated_at=item.updated_at,
        updated_by=item.updated_by,
    )


def hot_memory_to_items(
    hot: HotMemory, *, expected_version: int, actor: str, reason: str | None, now: datetime, tokens: int
) -> tuple[HotMemoryItem, HotMemoryRevisionItem]:
    """The ``HOT`` item and the ``HOTREV#{expected_version + 1}`` revision item of a new version.

    The ``HOT`` item's ``VersionAttribute`` makes its save conditional on ``expected_version``
    (0: no hot memory stored yet) and increments it.

    Raises:
        ItemTooLarge: either item would be over :data:`HOT_ITEM_MAX_BYTES`.
    """
    new_version = expected_version + 1
    lines = [ln.model_dump(mode="json") for ln in hot.lines]
    item = HotMemoryItem(hot.project_id, keys.HOT_SK, lines=lines, updated_at=now, updated_by=actor)
    if expected_version:
        item.version = expected_version
    revision = HotMemoryRevisionItem(
        hot.project_id,
        keys.hot_revision_sk(new_version),
        revision=new_version,
        lines=lines,
        created_at=now,
        created_by=actor,
        reason=reason,
        tokens=tokens,
    )
    for candidate in (item, revision):
        check_size(candidate, HOT_ITEM_MAX_BYTES, "hot memory")
    return item, revision


def hot_memory_from_revision(item: HotMemoryRevisionItem) -> HotMemory:
    """The hot memory as it was stored in a ``HOTREV#`` item."""
    return HotMemory(
        project_id=item.pk,
        version=int(item.revision),
        lines=[HotMemoryLine.model_validate(x) for x in item.lines or []],
        updated_at=item.created_at,
        updated_by=item.created_by,
    )


def revision_summary_from_item(item: HotMemoryRevisionItem) -> RevisionSummary:
    """Who stored a ``HOTREV#`` version, when and why (its lines are not read)."""
    return RevisionSummary(
        version=int(item.revision),
        created_at=item.created_at,
        created_by=item.created_by,
        reason=item.reason,
        tokens=int(item.tokens or 0),
    )


# ----------------------------------------------------------------------------- history book
def report_to_item(report: WeeklyReport) -> WeeklyReportItem:
    return WeeklyReportItem(
        report.project_id,
        keys.report_sk(report.iso_week),
        iso_week=report.iso_week,
        summary=report.summary,
        revision=report.revision,
        created_at=report.created_at,
        created_by=report.created_by,
        evidence=report.evidence,
    )


def report_from_item(item: WeeklyReportItem) -> WeeklyReport:
    return WeeklyReport(
        project_id=item.pk,
        iso_week=item.iso_week,
        summary=item.summary,
        revision=int(item.revision),
        created_at=item.created_at,
        created_by=item.created_by,
        evidence=list(item.evidence or []),
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


def yearly_summary_to_item(summary: YearlySummary) -> YearSummaryItem:
    return YearSummaryItem(
        summary.project_id,
        keys.year_sk(summary.year),
        year=summary.year,
        summary=summary.summary,
        weeks=summary.weeks,
        created_at=summary.created_at,
        created_by=summary.created_by,
    )


def yearly_summary_from_item(item: YearSummaryItem) -> YearlySummary:
    return YearlySummary(
        project_id=item.pk,
        year=int(item.year),
        summary=item.summary,
        weeks=list(item.weeks or []),
        created_at=item.created_at,
        created_by=item.created_by,
    )


def activity_to_item(project_id: str, local_date: str, *, at: datetime) -> ActivityItem:
    """The project's activity marker for one local day (``ActivityIndex``: day -> project)."""
    key = keys.activity_key(local_date)
    return ActivityItem(project_id, key, activity_pk=key, activity_sk=project_id, last_at=at)


# ---------------------------------------------------------------------- sessions and messages
def session_to_item(s: SessionState) -> SessionItem:
    """The session item, in both indexes by ``updated_at`` (the PatientIndex only with a patient)."""
    updated = keys.sort_time(s.updated_at)
    return SessionItem(
        keys.session_pk(s.project_id, s.session_id),
        keys.SESSION_SK,
        project_id=s.project_id,
        session_id=s.session_id,
        patient_id=s.patient_id,
        type=s.type,
        name=s.name,
        created_by=s.created_by,
        created_at=s.created_at,
        updated_at=s.updated_at,
        message_count=s.message_count,
        diagnosis_count=s.diagnosis_count,
        window=[json.loads(m.model_dump_json()) for m in s.window],
        facts=s.facts,
        summary=s.summary,
        patient_pk=keys.patient_pk(s.project_id, s.patient_id) if s.patient_id else None,
        patient_sk=f"{updated}#{s.session_id}" if s.patient_id else None,
        project_pk=s.project_id,
        project_sk=f"{updated}#{s.session_id}",
    )


def session_from_item(item: SessionItem) -> SessionState:
    return SessionState(
        project_id=item.project_id,
        session_id=item.session_id,
        patient_id=item.patient_id,
        type=item.type,  # type: ignore[arg-type]
        name=item.name,
        created_by=item.created_by,
        created_at=item.created_at,
        updated_at=item.updated_at,
        version=int(item.version or 0),
        message_count=int(item.message_count),
        diagnosis_count=int(item.diagnosis_count),
        window=[MessageRecord.model_validate(x) for x in item.window or []],
        facts=item.facts or {},
        summary=item.summary or "",
    )


def session_list_item_from_item(item: SessionItem) -> SessionListItem:
    """A row of a session listing (no window, facts or summary)."""
    return SessionListItem(
        session_id=item.session_id,
        patient_id=item.patient_id,
        type=item.type,  # type: ignore[arg-type]
        name=item.name,
        created_at=item.created_at,
        updated_at=item.updated_at,
        message_count=int(item.message_count or 0),
        diagnosis_count=int(item.diagnosis_count or 0),
    )


def message_to_item(
    project_id: str,
    session_id: str,
    m: MessageRecord,
    *,
    context: dict[str, Any] | None = None,
    reply_to: str | None = None,
) -> MessageItem:
    return MessageItem(
        keys.session_pk(project_id, session_id),
        keys.message_sk(m.message_id),
        message_id=m.message_id,
        role=m.role,
        content=m.content,
        at=m.at,
        user_id=m.user_id,
        study_role=m.study_role,
        status=m.status,
        truncated=1 if m.truncated else 0,
        tool_calls=[tc.model_dump(mode="json") for tc in m.tool_calls],
        context=context,
        reply_to=reply_to,
        idempotency_hash=m.idempotency_hash,
        source=m.source,
    )


def message_from_item(item: MessageItem) -> MessageRecord:
    return MessageRecord(
        message_id=item.message_id,
        role=item.role,  # type: ignore[arg-type]
        content=item.content,
        at=item.at,
        user_id=item.user_id,
        study_role=item.study_role,  # type: ignore[arg-type]
        status=item.status,  # type: ignore[arg-type]
        truncated=bool(item.truncated),
        tool_calls=[ToolCall.model_validate(x) for x in item.tool_calls or []],
        idempotency_hash=item.idempotency_hash,
        source=item.source,  # type: ignore[arg-type]
    )


def flow_log_to_item(project_id: str, session_id: str, m: MessageRecord, *, expires_at: datetime | None) -> FlowLogItem:
    pk, sk = keys.flow_log_keys(project_id, m.at, m.message_id)
    return FlowLogItem(
        pk,
        sk,
        project_id=project_id,
        session_id=session_id,
        message_id=m.message_id,
        role=m.role,
        content=m.content,
        user_id=m.user_id,
        study_role=m.study_role,
        at=m.at,
        status=m.status,
        expires_at=expires_at,
    )


def flow_log_entry_from_item(item: FlowLogItem) -> FlowLogEntry:
    return FlowLogEntry(
        message_id=item.message_id,
        session_id=item.session_id,
        role=item.role,  # type: ignore[arg-type]
        content=item.content,
        at=item.at,
        user_id=item.user_id,
        study_role=item.study_role,
        status=item.status,
        source=item.source,
        rating=item.rating,
    )


def diagnosis_to_item(d: Diagnosis) -> DiagnosisItem:
    """The diagnosis item; with a patient, also in the PatientIndex (``DIAG#{created_at}#{id}``,
    which sorts apart from the patient's sessions, whose index sort keys start with a digit)."""
    return DiagnosisItem(
        keys.session_pk(d.project_id, d.session_id),
        keys.diagnosis_sk(d.diagnosis_id),
        project_id=d.project_id,
        session_id=d.session_id,
        diagnosis_id=d.diagnosis_id,
        patient_id=d.patient_id,
        created_at=d.created_at,
        created_by=d.created_by,
        report=d.report,
        symptoms_snapshot=d.symptoms_snapshot,
        patient_pk=keys.patient_pk(d.project_id, d.patient_id) if d.patient_id else None,
        patient_sk=(
            f"{keys.DIAGNOSIS_PREFIX}{keys.sort_time(d.created_at)}#{d.diagnosis_id}" if d.patient_id else None
        ),
    )


def diagnosis_from_item(item: DiagnosisItem) -> Diagnosis:
    """The diagnosis; a stored report that can no longer be read back (stored before reports
    were checked) shows as ``{UNREADABLE_REPORT_KEY: problem}`` instead of failing every read
    of the session's diagnoses."""
    report = item.report or {}
    problem = report_problem(report)
    if problem is not None:
        logger.warning(
            "stored diagnosis report unreadable",
            extra={"project_id": item.project_id, "diagnosis_id": item.diagnosis_id},
        )
        report = {UNREADABLE_REPORT_KEY: problem}
    return Diagnosis(
        project_id=item.project_id,
        session_id=item.session_id,
        diagnosis_id=item.diagnosis_id,
        patient_id=item.patient_id,
        created_at=item.created_at,
        created_by=item.created_by,
        report=report,
        symptoms_snapshot=list(item.symptoms_snapshot or []),
    )


# ----------------------------------------------------------------- jobs, review queue, audit
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
        status=item.status,  # type: ignore[arg-type]
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
        action=item.action,  # type: ignore[arg-type]
        target=item.target,
        reason=item.reason,
        details=dict(item.details or {}),
    )


__all__ = [
    "DIAGNOSIS_ITEM_BUDGET_BYTES",
    "HOT_ITEM_MAX_BYTES",
    "MESSAGE_ITEM_BUDGET_BYTES",
    "SESSION_ITEM_BUDGET_BYTES",
    "UNREADABLE_REPORT_KEY",
    "activity_to_item",
    "alert_to_item",
    "audit_from_item",
    "audit_to_item",
    "check_size",
    "diagnosis_from_item",
    "diagnosis_to_item",
    "flow_log_entry_from_item",
    "flow_log_to_item",
    "hot_memory_from_item",
    "hot_memory_from_revision",
    "hot_memory_to_items",
    "job_run_from_item",
    "job_run_to_item",
    "message_from_item",
    "message_to_item",
    "project_from_item",
    "project_to_item",
    "report_from_item",
    "report_revision_to_item",
    "report_to_item",
    "review_entry_from_item",
    "review_to_item",
    "revision_summary_from_item",
    "session_from_item",
    "session_list_item_from_item",
    "session_to_item",
    "yearly_summary_from_item",
    "yearly_summary_to_item",
]
