"""Reads of the job fan-out (who was active) and of the read-only project views (hot memory with
provenance, the history book).

Round trips:
- :meth:`ActivityRepository.active_projects`: one Query on the MemoryTable's ``ActivityIndex``
  (``activity_pk = ACTIVE#{local date}``, keys only) per date, every page; never a Scan. The
  cost is proportional to the number of ACTIVE projects, not of all projects.
- :meth:`ActivityRepository.project_hot_memory`: ONE strongly consistent BatchGetItem
  (``PROJECT`` + ``HOT``).
- :meth:`ActivityRepository.reports_between`: one GetItem (``PROJECT``) + one Query on the
  project's ``REPORT#`` range, newest first, paginated until ``limit`` items.
- :meth:`ActivityRepository.load_yearly_summaries`: one Query on the project's ``YEAR#`` range.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import sdk_errors_as_domain
from agent_memory.adapters.dynamo.delegation import delegate
from agent_memory.adapters.dynamo.mappers import report_from_item
from agent_memory.adapters.dynamo.projects import ProjectRepository
from agent_memory.adapters.dynamo.tables import ActivityItem, WeeklyReportItem
from agent_memory.domain.models import HotMemory, Project, WeeklyReport


@sdk_errors_as_domain
class ActivityRepository:
    """The fan-out's activity reader and the views' store, over a :class:`ProjectRepository`."""

    def __init__(self, projects: ProjectRepository | None = None) -> None:
        self.projects = projects or ProjectRepository()

    load_yearly_summaries = delegate("projects", ProjectRepository.load_yearly_summaries)

    def active_projects(self, local_dates: Sequence[date], *, page_size: int | None = None) -> list[str]:
        """Distinct project ids with an activity marker on any of ``local_dates``, sorted.

        One Query per date on ``ActivityIndex`` read to its last page (``page_size`` forces
        small pages in tests). A GSI read is eventually consistent: a marker written a moment
        ago may be missing, which the schedules' hours (02:00-04:00 for yesterday's activity)
        make irrelevant.
        """
        projects: set[str] = set()
        for day in dict.fromkeys(local_dates):
            for item in ActivityItem.activity_index.query(keys.activity_key(day), page_size=page_size):
                projects.add(item.activity_sk)
        return sorted(projects)

    def project_hot_memory(self, project_id: str) -> tuple[Project, HotMemory]:
        """The project and its current hot memory (``version == 0`` when none is stored).

        Raises:
            ProjectNotFound: no ``PROJECT`` item.
        """
        return self.projects.project_hot_memory(project_id)

    def reports_between(
        self,
        project_id: str,
        first_week: str | None,
        last_week: str | None,
        *,
        limit: int,
        page_size: int | None = None,
    ) -> list[WeeklyReport]:
        """Weekly reports with ``first_week <= iso_week <= last_week`` (``YYYY-Www``; None = open),
        newest first, at most ``limit``.

        Raises:
            ProjectNotFound: no ``PROJECT`` item.
        """
        self.projects.get_project(project_id)
        items = WeeklyReportItem.query(
            project_id,
            WeeklyReportItem.sk.between(
                keys.report_sk(first_week or keys.FIRST_WEEK), keys.report_sk(last_week or keys.LAST_WEEK)
            ),
            scan_index_forward=False,
            limit=limit,
            page_size=page_size or min(limit, 100),
        )
        return [report_from_item(item) for item in items]


__all__ = ["ActivityRepository"]
