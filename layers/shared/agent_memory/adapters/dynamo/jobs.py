"""Data access of the background jobs (issue 4): the chat repository plus the jobs' reads/writes.

Round trips per job and project (the cost does not grow with the number of projects):
- distill: 1 GetItem (marker) + 1 GetItem (hot memory) + 1-2 Query (flow-log partitions of the
  UTC dates the local day overlaps) + 1 TransactWriteItems (HOT, HOTREV, JOBRUN) + one
  conditional PutItem per review item;
- archive: 1 GetItem (marker) + 1 GetItem (report) + 8 Query (flow log of the week) +
  1 TransactWriteItems (REPORT, JOBRUN);
- prune: 1 GetItem (marker) + 1 GetItem (hot memory) + 1 Query (``YEAR#``) [+ 1 Query of old
  reports when a year is due] + 1 TransactWriteItems or PutItem.

The flow log is read only by Query on ``{project}#{UTC date}`` partitions with ``sk BETWEEN``;
never by Scan.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from pynamodb.exceptions import DoesNotExist, PutError, TransactWriteError
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo.job_tables import (
    AlertSentItem,
    JobRunItem,
    ReviewQueueItem,
    YearSummaryItem,
    sync_job_tables,
)
from agent_memory.adapters.dynamo.repository import DynamoRepository, _report
from agent_memory.adapters.dynamo.tables import FlowLogItem, HotMemoryRevisionItem, WeeklyReportItem
from agent_memory.domain.errors import VersionConflict
from agent_memory.domain.jobs import FlowLogEntry, JobRun, ReviewItem, YearlySummary
from agent_memory.domain.models import HotMemory, WeeklyReport

#: Hot-memory and revision items stay this far under DynamoDB's 400 KB item limit (case B14).


def flow_log_sort_key_bound(at: datetime) -> str:
    """The time prefix of flow-log sort keys (``{UTC ISO}#{message_id}``) for instant ``at``.

    Same format as the chat path writes (``%Y-%m-%dT%H:%M:%S.%fZ``, fixed width), so string
    order is time order and ``BETWEEN bound(start) AND bound(end)`` selects exactly
    ``start <= at < end`` (a key at ``end`` is ``bound(end) + "#..."``, which sorts after it).
    """
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def utc_dates_overlapping(start: datetime, end: datetime) -> list[date]:
    """The UTC calendar dates that the half-open interval ``[start, end)`` touches."""
    first = start.astimezone(UTC).date()
    last = (end.astimezone(UTC) - timedelta(microseconds=1)).date()
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


class JobsRepository(DynamoRepository):
    """:class:`DynamoRepository` plus what the jobs need (module docstring lists the calls)."""

    # ------------------------------------------------------------ hot memory
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
        ``JOBRUN#`` marker in ONE TransactWriteItems (same items as ``save_hot_memory``).

        Raises:
            VersionConflict: the hot memory changed since ``expected_version`` was read, or the
                marker already exists (a concurrent run finished first); carries the current
                hot-memory version.
            ItemTooLarge: the hot-memory item would be over its byte budget (case B14).
        """
        sync_job_tables()
        item, revision, new_version = self._hot_memory_items(
            hot, expected_version=expected_version, actor=actor, reason=reason, now=now, tokens=tokens
        )
        try:
            with TransactWrite(connection=self._connection()) as tx:
                tx.save(item)
                tx.save(revision, condition=HotMemoryRevisionItem.sk.does_not_exist())
                if run is not None:
                    marker = _job_run_item(run.model_copy(update={"hot_version": new_version}))
                    tx.save(marker, condition=JobRunItem.sk.does_not_exist())
        except TransactWriteError:
            raise VersionConflict(
                "hot memory changed", current_version=self._current_hot_version(hot.project_id)
            ) from None
        return hot.model_copy(update={"version": new_version, "updated_at": now, "updated_by": actor})

    # -------------------------------------------------------------- flow log
    def read_flow_log(
        self, project_id: str, start: datetime, end: datetime, *, page_size: int | None = None
    ) -> list[FlowLogEntry]:
        """Every flow-log message with ``start <= at < end`` (aware datetimes), in time order.

        One Query per UTC-date partition ``{project}#{YYYY-MM-DD}`` the interval overlaps, each
        with ``sk BETWEEN`` the interval's bounds, read to the last page (case B15).
        """
        lo, hi = flow_log_sort_key_bound(start), flow_log_sort_key_bound(end)
        out: list[FlowLogEntry] = []
        for day in utc_dates_overlapping(start, end):
            for item in FlowLogItem.query(
                f"{project_id}#{day.isoformat()}", FlowLogItem.sk.between(lo, hi), page_size=page_size
            ):
                if not (start <= item.at < end):
                    continue
                out.append(
                    FlowLogEntry(
                        message_id=item.message_id,
                        session_id=item.session_id,
                        role=item.role,  # type: ignore[arg-type]
                        content=item.content,
                        at=item.at,
                        user_id=item.user_id,
                        status=item.status,
                    )
                )
        out.sort(key=lambda e: (e.at, e.message_id))
        return out

    # ------------------------------------------------------------ job markers
    def get_job_run(self, project_id: str, job: str, key: str) -> JobRun | None:
        """The ``JOBRUN#{job}#{key}`` marker (strongly consistent) or None."""
        sync_job_tables()
        try:
            item = JobRunItem.get(project_id, f"JOBRUN#{job}#{key}", consistent_read=True)
        except DoesNotExist:
            return None
        return JobRun(
            project_id=project_id,
            job=item.job,
            key=item.key,
            status=item.status,
            completed_at=item.completed_at,
            counts={k: int(v) for k, v in (item.counts or {}).items()},
            hot_version=int(item.hot_version) if item.hot_version is not None else None,
        )

    def put_job_run(self, run: JobRun) -> bool:
        """Write the marker unless it exists; False when a run already finished."""
        sync_job_tables()
        return _put_new(_job_run_item(run), JobRunItem)

    # ----------------------------------------------------------- review queue
    def put_review_items(self, items: list[ReviewItem]) -> int:
        """Queue candidates for admin review; an item already queued (same key) is left as is.

        Returns:
            How many items were new.
        """
        sync_job_tables()
        written = 0
        for r in items:
            item = ReviewQueueItem(
                r.project_id,
                f"REVIEW#{r.day}#{r.review_id}",
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
            written += _put_new(item, ReviewQueueItem)
        return written

    def list_review_items(self, project_id: str, *, page_size: int | None = None) -> list[ReviewItem]:
        """The project's review queue, oldest day first (Query on ``REVIEW#``, every page)."""
        sync_job_tables()
        return [
            ReviewItem(
                project_id=project_id,
                review_id=i.review_id,
                day=i.day,
                text=i.text,
                section=i.section,
                role_tag=i.role_tag,
                evidence=list(i.evidence or []),
                reason=i.reason,  # type: ignore[arg-type]
                detail=i.detail,
                origin=i.origin,  # type: ignore[arg-type]
                status=i.status,  # type: ignore[arg-type]
                created_at=i.created_at,
                created_by=i.created_by,
            )
            for i in ReviewQueueItem.query(
                project_id, ReviewQueueItem.sk.startswith("REVIEW#"), page_size=page_size
            )
        ]

    # --------------------------------------------------------- history book
    def get_weekly_report(self, project_id: str, iso_week: str) -> WeeklyReport | None:
        """The report of one ISO week (strongly consistent) or None."""
        try:
            item = WeeklyReportItem.get(project_id, f"REPORT#{iso_week}", consistent_read=True)
        except DoesNotExist:
            return None
        return _report(item)

    def commit_weekly_report(self, report: WeeklyReport, run: JobRun) -> bool:
        """Write a NEW report and the archive marker in ONE TransactWriteItems.

        Never overwrites: returns False (and writes nothing) when the report or the marker
        already exists.
        """
        sync_job_tables()
        item = WeeklyReportItem(
            report.project_id,
            f"REPORT#{report.iso_week}",
            iso_week=report.iso_week,
            summary=report.summary,
            revision=report.revision,
            created_at=report.created_at,
            created_by=report.created_by,
            evidence=report.evidence,
        )
        try:
            with TransactWrite(connection=self._connection()) as tx:
                tx.save(item, condition=WeeklyReportItem.sk.does_not_exist())
                tx.save(_job_run_item(run), condition=JobRunItem.sk.does_not_exist())
        except TransactWriteError as exc:
            reasons = [r.code for r in (exc.cancellation_reasons or []) if r is not None]
            if "ConditionalCheckFailed" in reasons:
                return False
            raise
        return True

    def list_reports_between(
        self, project_id: str, first_week: str, last_week: str, *, page_size: int | None = None
    ) -> list[WeeklyReport]:
        """Reports with ``first_week <= iso_week <= last_week`` (labels ``YYYY-Www``), oldest
        first: one Query with ``sk BETWEEN``, every page."""
        items = WeeklyReportItem.query(
            project_id,
            WeeklyReportItem.sk.between(f"REPORT#{first_week}", f"REPORT#{last_week}"),
            page_size=page_size,
        )
        return [_report(i) for i in items]

    def put_yearly_summary(self, summary: YearlySummary) -> bool:
        """Write ``YEAR#{yyyy}`` unless it exists (idempotent); False when it existed."""
        sync_job_tables()
        item = YearSummaryItem(
            summary.project_id,
            f"YEAR#{summary.year:04d}",
            year=summary.year,
            summary=summary.summary,
            weeks=summary.weeks,
            created_at=summary.created_at,
            created_by=summary.created_by,
        )
        return _put_new(item, YearSummaryItem)

    # ---------------------------------------------------------------- alerts
    def claim_alert(self, project_id: str, dedupe_key: str, *, kind: str, now: datetime) -> bool:
        """Record that alert ``dedupe_key`` is being sent; False when it was sent before."""
        sync_job_tables()
        return _put_new(AlertSentItem(project_id, f"ALERT#{dedupe_key}", kind=kind, created_at=now), AlertSentItem)

    def release_alert(self, project_id: str, dedupe_key: str) -> None:
        """Forget a claimed alert whose delivery failed (so a retry sends it)."""
        sync_job_tables()
        AlertSentItem(project_id, f"ALERT#{dedupe_key}").delete()


def _put_new(item: ReviewQueueItem | JobRunItem | YearSummaryItem | AlertSentItem, model: Any) -> bool:
    try:
        item.save(condition=model.sk.does_not_exist())
    except PutError as exc:
        if exc.cause_response_code == "ConditionalCheckFailedException":
            return False
        raise
    return True


def _job_run_item(run: JobRun) -> JobRunItem:
    return JobRunItem(
        run.project_id,
        f"JOBRUN#{run.job}#{run.key}",
        job=run.job,
        key=run.key,
        status=run.status,
        completed_at=run.completed_at,
        counts=dict(run.counts),
        hot_version=run.hot_version,
    )




__all__ = ["JobsRepository", "flow_log_sort_key_bound", "utc_dates_overlapping"]
