"""The project's partition of the MemoryTable: the project record, its hot memory with every
stored version, and its history book (weekly reports, yearly summaries).

Round trips:
- :meth:`ProjectRepository.write_hot_memory` (every writer of hot memory: the seed, the jobs, the
  admin API): ONE TransactWriteItems with ``HOT`` (condition on the version read), ``HOTREV#{new
  version}`` (must not exist) and the caller's own items; one GetItem more only on a conflict, for
  the current version.
- :meth:`ProjectRepository.load_history`: ONE Query (``REPORT#``, newest first), paginated until
  ``limit_weeks`` items are read or the partition ends.
- :meth:`ProjectRepository.project_hot_memory`: ONE strongly consistent BatchGetItem
  (``PROJECT`` + ``HOT``).
- every other read: one GetItem, one BatchGetItem or one Query read to its end.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import (
    batch_get,
    cancellation_codes,
    is_conflict,
    put_if_absent,
    sdk_errors_as_domain,
    transaction,
)
from agent_memory.adapters.dynamo.mappers import (
    hot_memory_from_item,
    hot_memory_from_revision,
    hot_memory_to_items,
    new_project_item,
    project_from_item,
    project_update_actions,
    report_from_item,
    report_to_item,
    yearly_summary_from_item,
    yearly_summary_to_item,
)
from agent_memory.adapters.dynamo.tables import (
    HotMemoryItem,
    HotMemoryRevisionItem,
    ProjectItem,
    WeeklyReportItem,
    YearSummaryItem,
)
from agent_memory.domain.errors import ProjectNotFound, VersionConflict
from agent_memory.domain.models import HotMemory, Project, WeeklyReport, YearlySummary

#: Adds a caller's own items to the hot-memory transaction; gets the new version.
ExtraWrites = Callable[[TransactWrite, int], None]
#: Sees the cancellation codes of the caller's own items (in the order it added them) before the
#: conflict is reported as a ``VersionConflict``; may raise a more precise domain exception.
ConflictCheck = Callable[[list[str | None]], None]


def project_keys(project_id: str) -> dict[str, Any]:
    """The BatchGetItem request entry of a project's ``PROJECT`` and ``HOT`` items (strongly
    consistent)."""
    return {
        "Keys": [
            {"pk": {"S": project_id}, "sk": {"S": keys.PROJECT_SK}},
            {"pk": {"S": project_id}, "sk": {"S": keys.HOT_SK}},
        ],
        "ConsistentRead": True,
    }


def project_and_hot_memory(project_id: str, raw_items: list[dict[str, Any]]) -> tuple[Project, HotMemory]:
    """The project and its hot memory among the raw items of a batch read of
    :func:`project_keys` (``version == 0`` when no hot memory is stored).

    Raises:
        ProjectNotFound: no ``PROJECT`` item among them.
    """
    project: Project | None = None
    hot = HotMemory(project_id=project_id, version=0)
    for raw in raw_items:
        sk = raw["sk"]["S"]
        if sk == keys.PROJECT_SK:
            project = project_from_item(ProjectItem.from_raw_data(raw))
        elif sk == keys.HOT_SK:
            hot = hot_memory_from_item(HotMemoryItem.from_raw_data(raw))
    if project is None:
        raise ProjectNotFound(f"unknown project {project_id}")
    return project, hot


#: Years of summaries (``YEAR#{yyyy}``) the chat turn's BatchGetItem reads: the current ISO year
#: and the ones before it. A project with a summary of the oldest of them may have older ones.
YEARS_READ_WITH_TURN = 11


def yearly_summary_keys(project_id: str, now: datetime) -> list[dict[str, Any]]:
    """BatchGetItem keys of the ``YEAR#{yyyy}`` items of the :data:`YEARS_READ_WITH_TURN` years up to ``now``'s."""
    last = now.isocalendar()[0]
    return [
        {"pk": {"S": project_id}, "sk": {"S": keys.year_sk(year)}}
        for year in range(last - YEARS_READ_WITH_TURN + 1, last + 1)
    ]


def yearly_summaries_among(
    project_id: str, now: datetime, raw_items: list[dict[str, Any]]
) -> list[YearlySummary] | None:
    """The yearly summaries among the raw items of a batch read of :func:`yearly_summary_keys`,
    oldest first; None when the oldest year read has one (older years may too: query them)."""
    found = [
        yearly_summary_from_item(YearSummaryItem.from_raw_data(raw))
        for raw in raw_items
        if raw["pk"]["S"] == project_id and raw["sk"]["S"].startswith(keys.YEAR_PREFIX)
    ]
    oldest = now.isocalendar()[0] - YEARS_READ_WITH_TURN + 1
    if any(s.year == oldest for s in found):
        return None
    return sorted(found, key=lambda s: s.year)


@sdk_errors_as_domain
class ProjectRepository:
    """Project record, hot memory and history book (PynamoDB models bound by ``bind_tables``)."""

    # -------------------------------------------------------------------------- project
    def get_project(self, project_id: str) -> Project:
        """The project record. Raises ProjectNotFound."""
        try:
            return project_from_item(ProjectItem.get(project_id, keys.PROJECT_SK))
        except DoesNotExist:
            raise ProjectNotFound(f"unknown project {project_id}") from None

    def put_project(self, project: Project) -> None:
        """Create the project record (:func:`new_project_item`: a conditional PutItem) or, when it
        exists, update its fields (UpdateItem; what only the store keeps, ``patient_refs_since``,
        stays)."""
        if not put_if_absent(new_project_item(project)):
            ProjectItem(project.project_id, keys.PROJECT_SK).update(actions=project_update_actions(project))

    def project_hot_memory(self, project_id: str) -> tuple[Project, HotMemory]:
        """The project and its current hot memory in ONE BatchGetItem (``version == 0`` when
        none is stored).

        Raises:
            ProjectNotFound: no ``PROJECT`` item.
        """
        return project_and_hot_memory(project_id, batch_get({ProjectItem.Meta.table_name: project_keys(project_id)}))

    # ----------------------------------------------------------------------- hot memory
    def load_hot_memory(self, project_id: str) -> HotMemory:
        """The current hot memory, strongly consistent (``version == 0`` when none is stored)."""
        try:
            return hot_memory_from_item(HotMemoryItem.get(project_id, keys.HOT_SK, consistent_read=True))
        except DoesNotExist:
            return HotMemory(project_id=project_id, version=0)

    def current_hot_version(self, project_id: str) -> int:
        """The stored hot-memory version (0 when none), strongly consistent."""
        try:
            return int(HotMemoryItem.get(project_id, keys.HOT_SK, consistent_read=True).version or 0)
        except DoesNotExist:
            return 0

    def get_hot_memory_revision(self, project_id: str, version: int) -> HotMemory | None:
        """A stored hot-memory version (``HOTREV#``), or None if it was never stored."""
        try:
            item = HotMemoryRevisionItem.get(project_id, keys.hot_revision_sk(version))
        except DoesNotExist:
            return None
        return hot_memory_from_revision(item)

    def save_hot_memory(
        self, hot: HotMemory, *, expected_version: int, actor: str, reason: str | None, now: datetime, tokens: int
    ) -> HotMemory:
        """Store a new hot-memory version and its revision item (see :meth:`write_hot_memory`)."""
        return self.write_hot_memory(
            hot, expected_version=expected_version, actor=actor, reason=reason, now=now, tokens=tokens
        )

    def write_hot_memory(
        self,
        hot: HotMemory,
        *,
        expected_version: int,
        actor: str,
        reason: str | None,
        now: datetime,
        tokens: int,
        extra: ExtraWrites | None = None,
        on_conflict: ConflictCheck | None = None,
        conflict_reason: str = "hot memory changed",
    ) -> HotMemory:
        """Store a new hot-memory version in ONE TransactWriteItems: ``HOT`` (condition: still
        ``expected_version``, 0 = none yet), ``HOTREV#{expected_version + 1}`` (must not exist),
        then whatever ``extra`` adds (a job's run marker, an admin's audit record...).

        Returns:
            ``hot`` with the new version, ``updated_at = now`` and ``updated_by = actor``.

        Raises:
            VersionConflict: a condition failed (``conflict_reason``, with the current version),
                unless ``on_conflict`` raised first on the codes of the ``extra`` items.
            ItemTooLarge: an item would be over the hot-memory item budget.
        """
        item, revision = hot_memory_to_items(
            hot, expected_version=expected_version, actor=actor, reason=reason, now=now, tokens=tokens
        )
        new_version = int(revision.revision)
        try:
            with transaction() as tx:
                tx.save(item)
                tx.save(revision, condition=HotMemoryRevisionItem.sk.does_not_exist())
                if extra is not None:
                    extra(tx, new_version)
        except TransactWriteError as exc:
            if not is_conflict(exc):
                raise
            if on_conflict is not None:
                on_conflict(cancellation_codes(exc)[2:])
            raise VersionConflict(conflict_reason, current_version=self.current_hot_version(hot.project_id)) from None
        return hot.model_copy(update={"version": new_version, "updated_at": now, "updated_by": actor})

    # --------------------------------------------------------------------- history book
    def load_history(self, project_id: str, *, limit_weeks: int, page_size: int | None = None) -> list[WeeklyReport]:
        """The ``limit_weeks`` most recent weekly reports, newest first.

        One Query on the project's partition (``sk`` begins with ``REPORT#``, descending),
        paginated until ``limit_weeks`` items are read or the partition ends; ``page_size``
        forces small pages in tests.
        """
        results = WeeklyReportItem.query(
            project_id,
            WeeklyReportItem.sk.startswith(keys.REPORT_PREFIX),
            scan_index_forward=False,
            limit=limit_weeks,
            page_size=page_size or limit_weeks,
        )
        return [report_from_item(item) for item in results]

    def get_reports(self, project_id: str, weeks: list[str]) -> list[WeeklyReport]:
        """Reports for the given ISO weeks (``YYYY-Www``), newest first; missing weeks skipped."""
        item_keys = [(project_id, keys.report_sk(w)) for w in weeks]
        found = [report_from_item(item) for item in WeeklyReportItem.batch_get(item_keys)]
        return sorted(found, key=lambda r: r.iso_week, reverse=True)

    def get_weekly_report(self, project_id: str, iso_week: str) -> WeeklyReport | None:
        """The report of one ISO week (strongly consistent) or None."""
        try:
            item = WeeklyReportItem.get(project_id, keys.report_sk(iso_week), consistent_read=True)
        except DoesNotExist:
            return None
        return report_from_item(item)

    def put_weekly_report(self, report: WeeklyReport, *, overwrite: bool = False) -> bool:
        """Store a weekly report; returns False (and writes nothing) if one exists and
        ``overwrite`` is False."""
        item = report_to_item(report)
        if not overwrite:
            return put_if_absent(item)
        item.save()
        return True

    def list_reports_between(
        self, project_id: str, first_week: str, last_week: str, *, page_size: int | None = None
    ) -> list[WeeklyReport]:
        """Reports with ``first_week <= iso_week <= last_week`` (labels ``YYYY-Www``), oldest
        first: one Query with ``sk BETWEEN``, every page."""
        items = WeeklyReportItem.query(
            project_id,
            WeeklyReportItem.sk.between(keys.report_sk(first_week), keys.report_sk(last_week)),
            page_size=page_size,
        )
        return [report_from_item(i) for i in items]

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]:
        """Every ``YEAR#{yyyy}`` summary of the project, oldest year first (one Query). Chat
        uses them for periods older than the weeks it loads."""
        items = YearSummaryItem.query(project_id, YearSummaryItem.sk.startswith(keys.YEAR_PREFIX))
        return [yearly_summary_from_item(i) for i in items]

    def put_yearly_summary(self, summary: YearlySummary) -> bool:
        """Write ``YEAR#{yyyy}`` unless it exists (idempotent); False when it existed."""
        return put_if_absent(yearly_summary_to_item(summary))


__all__ = [
    "ConflictCheck",
    "ExtraWrites",
    "ProjectRepository",
    "project_and_hot_memory",
    "project_keys",
    "yearly_summaries_among",
    "yearly_summary_keys",
]
