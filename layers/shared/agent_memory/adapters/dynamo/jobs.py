"""The background jobs' store: the flow log, the run markers, the review queue, the archive's report
write and the alert claims, over the project's partition (a :class:`ProjectRepository` it holds:
the project record, hot memory, reports and yearly summaries).

Round trips per job and project (the cost does not grow with the number of projects):
- distill: 1 GetItem (marker) + 1 GetItem (hot memory) + 1-2 Query (flow-log partitions of the
  UTC dates the local day overlaps) + 1 Query (the members, when the day has statements to merge)
  + 1 TransactWriteItems (HOT, HOTREV, JOBRUN) + one
  conditional PutItem per review item;
- archive: 1 GetItem (marker) + 1 GetItem (report) + 8 Query (flow log of the week) +
  1 TransactWriteItems (REPORT, JOBRUN);
- prune: 1 GetItem (marker) + 1 GetItem (hot memory) + 1 Query (``YEAR#``) [+ 1 Query of old
  reports when a year is due] + 1 TransactWriteItems or PutItem.

The flow log is read only by Query on ``{project}#{UTC date}`` partitions with ``sk BETWEEN``;
never by Scan.
"""

from __future__ import annotations

from datetime import datetime

from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import (
    cancellation_codes,
    put_if_absent,
    sdk_errors_as_domain,
    transaction,
)
from agent_memory.adapters.dynamo.admin import queue_review_items
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem
from agent_memory.adapters.dynamo.delegation import delegate
from agent_memory.adapters.dynamo.job_mappers import (
    alert_to_item,
    flow_log_entry_from_item,
    job_run_from_item,
    job_run_to_item,
)
from agent_memory.adapters.dynamo.mappers import report_to_item
from agent_memory.adapters.dynamo.members import MemberRepository
from agent_memory.adapters.dynamo.projects import ProjectRepository
from agent_memory.adapters.dynamo.record_tables import AlertSentItem, JobRunItem
from agent_memory.adapters.dynamo.tables import WeeklyReportItem
from agent_memory.domain.jobs import FlowLogEntry, JobRun, ReviewItem
from agent_memory.domain.models import HotMemory, WeeklyReport


def save_job_run(tx: TransactWrite, run: JobRun) -> None:
    """Add the run marker to a transaction; the transaction fails if the marker exists (a
    concurrent run finished first)."""
    tx.save(job_run_to_item(run), condition=JobRunItem.sk.does_not_exist())


@sdk_errors_as_domain
class JobsRepository:
    """What the jobs read and write (module docstring lists the calls).

    Args:
        projects: the project's partition: the project record, hot memory (a job's commit goes
            through it with the run marker), weekly reports and yearly summaries (a new
            :class:`ProjectRepository` by default).
        members: the project's members (the distillation reads the team to tell a preference of the
            only holder of a study role from one person's; a new :class:`MemberRepository` by default).
    """

    def __init__(self, projects: ProjectRepository | None = None, members: MemberRepository | None = None) -> None:
        self.projects = projects or ProjectRepository()
        self.members = members or MemberRepository()

    get_project = delegate("projects", ProjectRepository.get_project)
    list_members = delegate("members", MemberRepository.list_members)
    load_hot_memory = delegate("projects", ProjectRepository.load_hot_memory)
    get_weekly_report = delegate("projects", ProjectRepository.get_weekly_report)
    list_reports_between = delegate("projects", ProjectRepository.list_reports_between)
    load_yearly_summaries = delegate("projects", ProjectRepository.load_yearly_summaries)
    put_yearly_summary = delegate("projects", ProjectRepository.put_yearly_summary)

    # ----------------------------------------------------------------------- hot memory
    def commit_hot_memory(
        self,
        hot: HotMemory,
        *,
        expected_version: int,
        actor: str,
        reason: str | None,
        now: datetime,
        tokens: int,
        run: JobRun | None,
    ) -> HotMemory:
        """Store a new hot-memory version, its ``HOTREV#`` revision and (optionally) the job's
        ``JOBRUN#`` marker, which records the new version, in ONE TransactWriteItems.

        Raises:
            VersionConflict: the hot memory changed since ``expected_version`` was read, or the
                marker already exists (a concurrent run finished first); carries the current
                hot-memory version.
            ItemTooLarge: the hot-memory item would be over its byte budget.
        """

        def add_marker(tx: TransactWrite, new_version: int) -> None:
            if run is not None:
                save_job_run(tx, run.model_copy(update={"hot_version": new_version}))

        return self.projects.write_hot_memory(
            hot, expected_version=expected_version, actor=actor, reason=reason, now=now, tokens=tokens,
            extra=add_marker,
        )

    # ------------------------------------------------------------------------- flow log
    def read_flow_log(
        self, project_id: str, start: datetime, end: datetime, *, page_size: int | None = None
    ) -> list[FlowLogEntry]:
        """Every flow-log message with ``start <= at < end`` (aware datetimes), in time order.

        One Query per UTC-date partition ``{project}#{YYYY-MM-DD}`` the interval overlaps, each
        with ``sk BETWEEN`` the interval's bounds, read to the last page.
        """
        lo, hi = keys.flow_log_sort_key_bound(start), keys.flow_log_sort_key_bound(end)
        out: list[FlowLogEntry] = []
        for day in keys.utc_dates_overlapping(start, end):
            for item in FlowLogItem.query(
                keys.flow_log_pk(project_id, day), FlowLogItem.sk.between(lo, hi), page_size=page_size
            ):
                if start <= item.at < end:
                    out.append(flow_log_entry_from_item(item))
        out.sort(key=lambda e: (e.at, e.message_id))
        return out

    # ---------------------------------------------------------------------- run markers
    def get_job_run(self, project_id: str, job: str, key: str) -> JobRun | None:
        """The ``JOBRUN#{job}#{key}`` marker (strongly consistent) or None."""
        try:
            item = JobRunItem.get(project_id, keys.job_run_sk(job, key), consistent_read=True)
        except DoesNotExist:
            return None
        return job_run_from_item(item)

    def put_job_run(self, run: JobRun) -> bool:
        """Write the marker unless it exists; False when a run already finished."""
        return put_if_absent(job_run_to_item(run))

    # --------------------------------------------------------------------- review queue
    def put_review_items(self, items: list[ReviewItem]) -> int:
        """Queue candidates for admin review; an item already queued (same key) is left as is.

        Returns:
            How many items were new.
        """
        return queue_review_items(items)

    # --------------------------------------------------------------------- history book
    def commit_weekly_report(self, report: WeeklyReport, run: JobRun) -> bool:
        """Write a NEW report and the archive marker in ONE TransactWriteItems.

        Never overwrites: returns False (and writes nothing) when the report or the marker
        already exists.
        """
        try:
            with transaction() as tx:
                tx.save(report_to_item(report), condition=WeeklyReportItem.sk.does_not_exist())
                save_job_run(tx, run)
        except TransactWriteError as exc:
            if "ConditionalCheckFailed" in cancellation_codes(exc):
                return False
            raise
        return True

    # --------------------------------------------------------------------------- alerts
    def claim_alert(self, project_id: str, dedupe_key: str, *, kind: str, now: datetime) -> bool:
        """Record that alert ``dedupe_key`` is being sent; False when it was sent before."""
        return put_if_absent(alert_to_item(project_id, dedupe_key, kind=kind, now=now))

    def release_alert(self, project_id: str, dedupe_key: str) -> None:
        """Forget a claimed alert whose delivery failed (so a retry sends it)."""
        AlertSentItem(project_id, keys.alert_sk(dedupe_key)).delete()


__all__ = ["JobsRepository", "save_job_run"]
