"""Reads of the job fan-out (who was active) and of the project views the jobs fill in
(hot memory with provenance, the history book), for the dispatcher and the read-only API.

Round trips:
- :meth:`ActivityRepository.active_projects`: one Query on the MemoryTable's ``ActivityIndex``
  (``activity_pk = ACTIVE#{local date}``, keys only) per date, every page; never a Scan. The
  cost is proportional to the number of ACTIVE projects, not of all projects.
- :meth:`ActivityRepository.project_hot_memory`: ONE BatchGetItem (``PROJECT`` + ``HOT``),
  strongly consistent.
- :meth:`ActivityRepository.reports_between`: one GetItem (``PROJECT``) + one Query on the
  project's ``REPORT#`` range, newest first, paginated until ``limit`` items.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from agent_memory.adapters.dynamo.repository import DynamoRepository, _hot_memory, _project, _report
from agent_memory.adapters.dynamo.tables import ActivityItem, HotMemoryItem, ProjectItem, WeeklyReportItem
from agent_memory.domain.errors import ProjectNotFound
from agent_memory.domain.models import HotMemory, Project, WeeklyReport

#: Bounds of ``REPORT#{YYYY-Www}`` sort keys when a range end is open.
_FIRST_WEEK = "0000-W00"
_LAST_WEEK = "9999-W99"


def activity_key(local_date: date) -> str:
    """``ACTIVE#{YYYY-MM-DD}``: the index partition of one local day (what chat writes)."""
    return f"ACTIVE#{local_date.isoformat()}"


class ActivityRepository(DynamoRepository):
    """:class:`DynamoRepository` plus the fan-out's and the read-only views' reads."""

    def active_projects(self, local_dates: Sequence[date], *, page_size: int | None = None) -> list[str]:
        """Distinct project ids with an activity marker on any of ``local_dates``, sorted.

        One Query per date on ``ActivityIndex`` read to its last page (``page_size`` forces
        small pages in tests). A GSI read is eventually consistent: a marker written a moment
        ago may be missing, which the schedules' hours (02:00-04:00 for yesterday's activity)
        make irrelevant.
        """
        projects: set[str] = set()
        for day in dict.fromkeys(local_dates):
            for item in ActivityItem.activity_index.query(activity_key(day), page_size=page_size):
                projects.add(item.activity_sk)
        return sorted(projects)

    def project_hot_memory(self, project_id: str) -> tuple[Project, HotMemory]:
        """The project and its current hot memory (``version == 0`` when none is stored).

        Raises:
            ProjectNotFound: no ``PROJECT`` item.
        """
        request: dict[str, Any] = {
            ProjectItem.Meta.table_name: {
                "Keys": [
                    {"pk": {"S": project_id}, "sk": {"S": "PROJECT"}},
                    {"pk": {"S": project_id}, "sk": {"S": "HOT"}},
                ],
                "ConsistentRead": True,
            }
        }
        project: Project | None = None
        hot = HotMemory(project_id=project_id, version=0)
        for raw in self._batch_get(request):
            sk = raw["sk"]["S"]
            if sk == "PROJECT":
                project = _project(ProjectItem.from_raw_data(raw))
            elif sk == "HOT":
                hot = _hot_memory(HotMemoryItem.from_raw_data(raw))
        if project is None:
            raise ProjectNotFound(f"unknown project {project_id}")
        return project, hot

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
        self.get_project(project_id)
        items = WeeklyReportItem.query(
            project_id,
            WeeklyReportItem.sk.between(f"REPORT#{first_week or _FIRST_WEEK}", f"REPORT#{last_week or _LAST_WEEK}"),
            scan_index_forward=False,
            limit=limit,
            page_size=page_size or min(limit, 100),
        )
        return [_report(item) for item in items]


__all__ = ["ActivityRepository", "activity_key"]
