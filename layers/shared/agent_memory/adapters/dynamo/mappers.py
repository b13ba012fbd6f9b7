"""Conversions between the stored items and the domain models every store uses: projects,
members, hot memory, weekly reports and yearly summaries, activity.

``<kind>_to_item(model)`` builds the item to write (keys from :mod:`.keys`);
``<kind>_from_item(item)`` reads one back. Items with a byte budget are checked with
:func:`.item_size.check_size` before they are written, so a write never meets DynamoDB's 400 KB item limit.
The kinds only some functions store have their own modules, so that a function imports only the
domain models it uses: :mod:`.admin_mappers` (revisions, report revisions, review queue, audit),
:mod:`.job_mappers` (job runs, flow log entries, alerts, review items),
:mod:`.message_mappers` (session items, messages, flow-log items) and :mod:`.session_mappers`
(session listings, diagnoses).
"""

from __future__ import annotations

from datetime import datetime

from pynamodb.expressions.update import Action

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.fields import item_fields, read_fields
from agent_memory.adapters.dynamo.item_size import DYNAMODB_ITEM_LIMIT_BYTES, check_size
from agent_memory.adapters.dynamo.tables import (
    ActivityItem,
    HotMemoryItem,
    HotMemoryRevisionItem,
    MemberItem,
    ProjectItem,
    WeeklyReportItem,
    YearSummaryItem,
)
from agent_memory.domain.models import (
    ClinicalDataSource,
    DismissedLine,
    HotMemory,
    HotMemoryLine,
    Member,
    Project,
    WeeklyReport,
    YearlySummary,
)

#: Byte budget of the hot-memory item and of each of its revision items.
HOT_ITEM_MAX_BYTES = DYNAMODB_ITEM_LIMIT_BYTES - 10_000


# ----------------------------------------------------------------------------------- project
def project_to_item(project: Project) -> ProjectItem:
    return ProjectItem(project.project_id, keys.PROJECT_SK, **item_fields(project, ProjectItem,
        clinical_data=project.clinical_data.stored() if project.clinical_data else None,
    ))


def project_update_actions(project: Project) -> list[Action]:
    """The UpdateItem actions that make the ``PROJECT`` item hold ``project``: every field the
    domain model has, so that an update keeps what only the store keeps (``patient_refs_since``)."""
    clinical = project.clinical_data.stored() if project.clinical_data else None
    return [
        ProjectItem.name.set(project.name),
        ProjectItem.time_zone.set(project.time_zone),
        ProjectItem.kind.set(project.kind),
        ProjectItem.created_at.set(project.created_at),
        ProjectItem.clinical_data.set(clinical) if clinical is not None else ProjectItem.clinical_data.remove(),
        ProjectItem.identifiers.set(project.identifiers),
    ]


def new_project_item(project: Project) -> ProjectItem:
    """The ``PROJECT`` item of a project created now: no diagnosis exists yet, so every future one
    is referenced by its patient's item (``patient_refs_since`` = its creation time)."""
    item = project_to_item(project)
    item.patient_refs_since = project.created_at
    return item


def project_from_item(item: ProjectItem) -> Project:
    return Project(**read_fields(item, Project,
        project_id=item.pk,
        clinical_data=ClinicalDataSource.model_validate(item.clinical_data) if item.clinical_data else None,
        identifiers=item.identifiers or "redact",  # absent on items written before the policy
    ))


def member_to_item(member: Member) -> MemberItem:
    return MemberItem(member.project_id, keys.member_sk(member.user_id), **item_fields(member, MemberItem,
        member_pk=keys.user_memberships_pk(member.user_id),
        member_sk=member.project_id,
    ))


def member_from_item(item: MemberItem) -> Member:
    return Member(**read_fields(item, Member,
        project_id=item.pk,
    ))


# -------------------------------------------------------------------------------- hot memory
def hot_memory_from_item(item: HotMemoryItem) -> HotMemory:
    return HotMemory(**read_fields(item, HotMemory,
        project_id=item.pk,
        version=int(item.version or 0),
        lines=[HotMemoryLine.model_validate(x) for x in item.lines or []],
        dismissed_evidence=list(item.dismissed_evidence or []),
        dismissed_lines=[DismissedLine.model_validate(x) for x in item.dismissed_lines or []],
    ))


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
    item = HotMemoryItem(hot.project_id, keys.HOT_SK, lines=lines, updated_at=now, updated_by=actor,
                         dismissed_evidence=hot.dismissed_evidence,
                         dismissed_lines=[d.model_dump(mode="json") for d in hot.dismissed_lines])
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



# ----------------------------------------------------------------------------- history book
def report_to_item(report: WeeklyReport) -> WeeklyReportItem:
    return WeeklyReportItem(report.project_id, keys.report_sk(report.iso_week), **item_fields(report, WeeklyReportItem))


def report_from_item(item: WeeklyReportItem) -> WeeklyReport:
    return WeeklyReport(**read_fields(item, WeeklyReport,
        project_id=item.pk,
        revision=int(item.revision),
        evidence=list(item.evidence or []),
    ))



def yearly_summary_to_item(summary: YearlySummary) -> YearSummaryItem:
    return YearSummaryItem(summary.project_id, keys.year_sk(summary.year), **item_fields(summary, YearSummaryItem))


def yearly_summary_from_item(item: YearSummaryItem) -> YearlySummary:
    return YearlySummary(**read_fields(item, YearlySummary,
        project_id=item.pk,
        year=int(item.year),
        weeks=list(item.weeks or []),
    ))


def activity_to_item(project_id: str, local_date: str, *, at: datetime) -> ActivityItem:
    """The project's activity marker for one local day (``ActivityIndex``: day -> project)."""
    key = keys.activity_key(local_date)
    return ActivityItem(project_id, key, activity_pk=key, activity_sk=project_id, last_at=at)



__all__ = [
    "HOT_ITEM_MAX_BYTES",
    "activity_to_item",
    "hot_memory_from_item",
    "hot_memory_from_revision",
    "hot_memory_to_items",
    "member_from_item",
    "member_to_item",
    "project_from_item",
    "project_to_item",
    "report_from_item",
    "report_to_item",
    "yearly_summary_from_item",
    "yearly_summary_to_item",
]
