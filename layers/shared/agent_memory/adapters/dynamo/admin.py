"""The admin API's store: revisions, the review queue, the audit trail and report corrections, over
the project's partition (a :class:`ProjectRepository` it holds: the project record, hot memory and
the reports).

Round trips per call (all on the project's MemoryTable partition, so every key carries the project):
- a hot-memory write: ONE TransactWriteItems: ``HOT`` (condition on the version read),
  ``HOTREV#{new version}`` (must not exist), ``AUDIT#...`` and, for an approval, the ``REVIEW#``
  item (condition: still pending);
- a review decision: ONE TransactWriteItems: ``REVIEW#`` (condition: still pending), ``AUDIT#...``;
- a report correction: ONE TransactWriteItems: ``REPORT#`` (condition on the revision read),
  ``REPORTREV#`` (the previous text; must not exist), ``AUDIT#...``;
- listings: one Query per page (``HOTREV#`` / ``AUDIT#`` newest first, ``REVIEW#`` every page);
- the evidence of a line or a review item: one Query per cited message, on the FlowLogTable's
  partition of the message's date (``adapters/dynamo/flow_log.py``; the admin function's only
  read outside the MemoryTable).
A failed condition costs one GetItem more, to report the current state.

Cursors are the sort key of the last item returned (base64url); the partition key always comes
from the route's project, never from the cursor.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import is_conflict, put_if_absent, sdk_errors_as_domain, transaction
from agent_memory.adapters.dynamo.admin_mappers import (
    audit_from_item,
    audit_to_item,
    report_revision_from_item,
    report_revision_to_item,
    review_entry_from_item,
    revision_summary_from_item,
)
from agent_memory.adapters.dynamo.delegation import delegate
from agent_memory.adapters.dynamo.flow_log import flow_log_messages
from agent_memory.adapters.dynamo.job_mappers import review_to_item
from agent_memory.adapters.dynamo.mappers import hot_memory_from_revision
from agent_memory.adapters.dynamo.projects import ProjectRepository
from agent_memory.adapters.dynamo.record_tables import AuditItem, ReportRevisionItem, ReviewQueueItem
from agent_memory.adapters.dynamo.tables import HotMemoryRevisionItem, WeeklyReportItem
from agent_memory.domain.errors import AlreadyDecided, InvalidInput, VersionConflict
from agent_memory.domain.jobs import FlowLogEntry, ReviewItem
from agent_memory.domain.models import HotMemory, WeeklyReport
from agent_memory.domain.records import (
    AuditRecord,
    Page,
    ReportRevision,
    ReviewEntry,
    RevisionSummary,
    StoredRevision,
    split_review_item_id,
)

#: The attributes a revision listing reads (not the lines).
_REVISION_SUMMARY_ATTRIBUTES = ["pk", "sk", "revision", "created_at", "created_by", "reason", "tokens"]


def encode_cursor(sort_key: str) -> str:
    """The opaque cursor of a listing: the last sort key, base64url."""
    return base64.urlsafe_b64encode(sort_key.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(project_id: str, cursor: str, prefix: str) -> dict[str, Any]:
    """The ``ExclusiveStartKey`` of a cursor, in ``project_id``'s partition.

    Raises:
        InvalidInput: not a cursor of this listing.
    """
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        sort_key = base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidInput("invalid cursor") from None
    if not sort_key.startswith(prefix):
        raise InvalidInput("invalid cursor")
    return {"pk": {"S": project_id}, "sk": {"S": sort_key}}


def queue_review_items(items: list[ReviewItem]) -> int:
    """Queue review items, each with a conditional PutItem (an item already queued, same key, is
    left as it is); returns how many were new."""
    return sum(put_if_absent(review_to_item(r)) for r in items)


@sdk_errors_as_domain
class AdminRepository:
    """The admin API's reads and writes (module docstring).

    Args:
        projects: the project's partition its hot-memory commits go through and its project and
            report reads come from (a new :class:`ProjectRepository` by default).
    """

    def __init__(self, projects: ProjectRepository | None = None) -> None:
        self.projects = projects or ProjectRepository()

    get_project = delegate("projects", ProjectRepository.get_project)
    load_hot_memory = delegate("projects", ProjectRepository.load_hot_memory)
    get_report = delegate("projects", ProjectRepository.get_weekly_report)

    def flow_log_messages(self, project_id: str, message_ids: list[str]) -> dict[str, FlowLogEntry]:
        """The flow-log messages an evidence list cites, by id (:func:`.flow_log.flow_log_messages`:
        one Query of a few milliseconds' window each)."""
        return flow_log_messages(project_id, message_ids)

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
        audit: AuditRecord,
        decide: ReviewEntry | None = None,
    ) -> HotMemory:
        """Store a new version, its revision, the audit record (and a review decision) in ONE
        TransactWriteItems.

        Raises:
            VersionConflict: the hot memory changed since ``expected_version`` (current version).
            AlreadyDecided: the review item was decided meanwhile.
            ItemTooLarge: over the item byte budget.
        """

        def add_audit_and_decision(tx: TransactWrite, _new_version: int) -> None:
            _save_audit(tx, audit)
            if decide is not None:
                _decide(tx, hot.project_id, decide)

        def decided_meanwhile(codes: list[str | None]) -> None:
            # codes[0]: the audit record, codes[1]: the review item (when deciding)
            if decide is not None and len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                raise self._already_decided(hot.project_id, decide.item_id)

        return self.projects.write_hot_memory(
            hot, expected_version=expected_version, actor=actor, reason=reason, now=now, tokens=tokens,
            extra=add_audit_and_decision, on_conflict=decided_meanwhile,
            conflict_reason="someone else saved the hot memory first",
        )

    def list_revisions(self, project_id: str, *, limit: int, cursor: str | None) -> Page[RevisionSummary]:
        """Stored versions newest first (one Query; the lines are not read)."""
        items, next_cursor = _newest_first(
            HotMemoryRevisionItem, project_id, keys.HOT_REVISION_PREFIX, limit=limit, cursor=cursor,
            attributes_to_get=_REVISION_SUMMARY_ATTRIBUTES,
        )
        return Page[RevisionSummary](items=[revision_summary_from_item(i) for i in items], next_cursor=next_cursor)

    def get_revision(self, project_id: str, version: int) -> StoredRevision | None:
        """One stored version with its lines, or None."""
        try:
            item = HotMemoryRevisionItem.get(project_id, keys.hot_revision_sk(version), consistent_read=True)
        except DoesNotExist:
            return None
        return StoredRevision(summary=revision_summary_from_item(item), hot=hot_memory_from_revision(item))

    # --------------------------------------------------------------------- review queue
    def list_review(self, project_id: str, *, status: str | None) -> list[ReviewEntry]:
        """The review queue, oldest day first (Query on ``REVIEW#``, every page)."""
        items = ReviewQueueItem.query(
            project_id,
            ReviewQueueItem.sk.startswith(keys.REVIEW_PREFIX),
            filter_condition=(ReviewQueueItem.status == status) if status else None,
        )
        return [review_entry_from_item(i) for i in items]

    def put_review_items(self, items: list[ReviewItem]) -> int:
        """Queue review items (:func:`queue_review_items`); how many were new."""
        return queue_review_items(items)

    def get_review(self, project_id: str, item_id: str) -> ReviewEntry | None:
        """One review item by its route id ``{day}_{review_id}``, or None."""
        day, review_id = split_review_item_id(item_id)
        try:
            item = ReviewQueueItem.get(project_id, keys.review_sk(day, review_id), consistent_read=True)
        except DoesNotExist:
            return None
        return review_entry_from_item(item)

    def decide_review(self, project_id: str, decided: ReviewEntry, *, audit: AuditRecord) -> None:
        """Record a decision (condition: the item is still pending) and its audit record.

        Raises:
            AlreadyDecided: someone decided it first.
        """
        try:
            with transaction() as tx:
                _decide(tx, project_id, decided)
                _save_audit(tx, audit)
        except TransactWriteError as exc:
            if is_conflict(exc):
                raise self._already_decided(project_id, decided.item_id) from None
            raise

    def _already_decided(self, project_id: str, item_id: str) -> AlreadyDecided:
        current = self.get_review(project_id, item_id)
        status = current.status if current else "unknown"
        return AlreadyDecided(f"review item {item_id} was already {status}", status=status)

    # ---------------------------------------------------------------------------- audit
    def list_audit(self, project_id: str, *, limit: int, cursor: str | None) -> Page[AuditRecord]:
        """Admin changes newest first (one Query per page)."""
        items, next_cursor = _newest_first(AuditItem, project_id, keys.AUDIT_PREFIX, limit=limit, cursor=cursor)
        return Page[AuditRecord](items=[audit_from_item(i) for i in items], next_cursor=next_cursor)

    # -------------------------------------------------------------------------- reports
    def list_report_revisions(self, project_id: str, iso_week: str) -> list[ReportRevision]:
        """The replaced revisions of a week's report, newest first (one Query on
        ``REPORTREV#{iso_week}#``, every page; the current one is the ``REPORT#`` item)."""
        items = ReportRevisionItem.query(
            project_id, ReportRevisionItem.sk.startswith(keys.report_revision_prefix(iso_week)),
            scan_index_forward=False, consistent_read=True,
        )
        return [report_revision_from_item(i) for i in items]

    def correct_report(
        self, previous: WeeklyReport, corrected: WeeklyReport, *, replaced_by: str, audit: AuditRecord
    ) -> None:
        """Keep the previous text as ``REPORTREV#``, store the correction, write the audit record.

        Raises:
            VersionConflict: the report's revision changed since it was read (current revision).
        """
        old = report_revision_to_item(previous, replaced_at=corrected.created_at, replaced_by=replaced_by)
        try:
            with transaction() as tx:
                tx.update(
                    WeeklyReportItem(previous.project_id, keys.report_sk(previous.iso_week)),
                    actions=[
                        WeeklyReportItem.summary.set(corrected.summary),
                        WeeklyReportItem.revision.set(corrected.revision),
                        WeeklyReportItem.created_at.set(corrected.created_at),
                        WeeklyReportItem.created_by.set(corrected.created_by),
                        WeeklyReportItem.reason.set(corrected.reason)
                        if corrected.reason
                        else WeeklyReportItem.reason.remove(),
                    ],
                    condition=WeeklyReportItem.revision == previous.revision,
                )
                tx.save(old, condition=ReportRevisionItem.sk.does_not_exist())
                _save_audit(tx, audit)
        except TransactWriteError as exc:
            if not is_conflict(exc):
                raise
            current = self.get_report(previous.project_id, previous.iso_week)
            raise VersionConflict(
                "someone else corrected the report first",
                current_version=current.revision if current else None,
            ) from None


def _save_audit(tx: TransactWrite, audit: AuditRecord) -> None:
    tx.save(audit_to_item(audit), condition=AuditItem.sk.does_not_exist())


def _decide(tx: TransactWrite, project_id: str, decided: ReviewEntry) -> None:
    """Add the decision to a transaction (condition: the item is still pending)."""
    if decided.decided_by is None or decided.decided_at is None:
        raise ValueError("a decision needs decided_by and decided_at")
    tx.update(
        ReviewQueueItem(project_id, keys.review_sk(decided.day, decided.review_id)),
        actions=[
            ReviewQueueItem.status.set(decided.status),
            ReviewQueueItem.decided_by.set(decided.decided_by),
            ReviewQueueItem.decided_at.set(decided.decided_at),
            ReviewQueueItem.decision_reason.set(decided.decision_reason)
            if decided.decision_reason
            else ReviewQueueItem.decision_reason.remove(),
            ReviewQueueItem.approved_text.set(decided.approved_text)
            if decided.approved_text
            else ReviewQueueItem.approved_text.remove(),
        ],
        condition=ReviewQueueItem.status == "pending",
    )


def _newest_first(
    model: Any, project_id: str, prefix: str, *, limit: int, cursor: str | None, **query: Any
) -> tuple[list[Any], str | None]:
    """One page of the project's ``prefix`` items, newest first, after ``cursor`` (one Query);
    returns the items and the cursor of the next page (only when the page is full and DynamoDB
    says there is more)."""
    results = model.query(
        project_id,
        model.sk.startswith(prefix),
        scan_index_forward=False,
        limit=limit,
        last_evaluated_key=decode_cursor(project_id, cursor, prefix) if cursor else None,
        **query,
    )
    items = list(results)
    last = results.last_evaluated_key
    if len(items) < limit or not last:
        return items, None
    return items, encode_cursor(str(last["sk"]["S"]))


__all__ = ["AdminRepository", "decode_cursor", "encode_cursor", "queue_review_items"]
