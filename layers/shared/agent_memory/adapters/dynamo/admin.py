"""Data access of the admin API (issue 5): hot-memory edits, revisions, review queue, audit, reports.

Round trips per call (all on the project's MemoryTable partition, so every key carries the project):
- a hot-memory write: 1 GetItem (project) + 1 GetItem (``HOT``, strongly consistent) + ONE
  TransactWriteItems: ``HOT`` (condition on the version read), ``HOTREV#{new version}`` (must not
  exist), ``AUDIT#...`` and, for an approval, the ``REVIEW#`` item (condition: still pending);
- a report correction: 1 GetItem + ONE TransactWriteItems: ``REPORT#`` (condition on the revision
  read), ``REPORTREV#`` (the previous text; must not exist), ``AUDIT#...``;
- listings: one Query per page (``HOTREV#`` / ``AUDIT#`` newest first, ``REVIEW#`` every page).

Cursors are the sort key of the last item returned (base64url); the partition key always comes
from the route's project, never from the cursor.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo.admin_tables import (
    AuditItem,
    ReportRevisionItem,
    ReviewDecisionItem,
    sync_admin_tables,
)
from agent_memory.adapters.dynamo.repository import DynamoRepository, _report
from agent_memory.adapters.dynamo.tables import HotMemoryRevisionItem, WeeklyReportItem
from agent_memory.domain.errors import AlreadyDecided, InvalidInput, VersionConflict
from agent_memory.domain.models import HotMemory, HotMemoryLine, WeeklyReport
from agent_memory.domain.records import (
    AuditRecord,
    Page,
    ReviewEntry,
    RevisionSummary,
    StoredRevision,
    review_item_id,
    split_review_item_id,
)

#: Hot-memory and revision items stay this far under DynamoDB's 400 KB item limit.


def _iso(at: Any) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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


class AdminRepository(DynamoRepository):
    """:class:`DynamoRepository` plus the admin API's reads and writes (module docstring)."""

    # ------------------------------------------------------------------ hot memory
    def commit_hot_memory(
        self,
        hot: HotMemory,
        *,
        expected_version: int,
        actor: str,
        reason: str | None,
        now: Any,
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
        sync_admin_tables()
        item, revision, new_version = self._hot_memory_items(
            hot, expected_version=expected_version, actor=actor, reason=reason, now=now, tokens=tokens
        )
        try:
            with TransactWrite(connection=self._connection()) as tx:
                tx.save(item)
                tx.save(revision, condition=HotMemoryRevisionItem.sk.does_not_exist())
                tx.save(_audit_item(audit), condition=AuditItem.sk.does_not_exist())
                if decide is not None:
                    self._decide(tx, hot.project_id, decide)
        except TransactWriteError as exc:
            reasons = [getattr(r, "code", None) for r in (exc.cancellation_reasons or [])]
            if decide is not None and len(reasons) > 3 and reasons[3] == "ConditionalCheckFailed":
                current = self.get_review(hot.project_id, decide.item_id)
                status = current.status if current else "unknown"
                raise AlreadyDecided(f"review item {decide.item_id} was already {status}", status=status) from None
            raise VersionConflict(
                "someone else saved the hot memory first",
                current_version=self._current_hot_version(hot.project_id),
            ) from None
        return hot.model_copy(update={"version": new_version, "updated_at": now, "updated_by": actor})

    def list_revisions(self, project_id: str, *, limit: int, cursor: str | None) -> Page[RevisionSummary]:
        """Stored versions newest first (one Query; the lines are not read)."""
        sync_admin_tables()
        start = decode_cursor(project_id, cursor, "HOTREV#") if cursor else None
        results = HotMemoryRevisionItem.query(
            project_id,
            HotMemoryRevisionItem.sk.startswith("HOTREV#"),
            scan_index_forward=False,
            limit=limit,
            last_evaluated_key=start,
            attributes_to_get=["pk", "sk", "revision", "created_at", "created_by", "reason", "tokens"],
        )
        items = [
            RevisionSummary(
                version=int(i.revision),
                created_at=i.created_at,
                created_by=i.created_by,
                reason=i.reason,
                tokens=int(i.tokens or 0),
            )
            for i in results
        ]
        return Page[RevisionSummary](items=items, next_cursor=_next(results, len(items), limit))

    def get_revision(self, project_id: str, version: int) -> StoredRevision | None:
        """One stored version with its lines, or None."""
        try:
            item = HotMemoryRevisionItem.get(project_id, f"HOTREV#{version:010d}", consistent_read=True)
        except DoesNotExist:
            return None
        hot = HotMemory(
            project_id=project_id,
            version=int(item.revision),
            lines=[HotMemoryLine.model_validate(x) for x in item.lines or []],
            updated_at=item.created_at,
            updated_by=item.created_by,
        )
        summary = RevisionSummary(
            version=int(item.revision),
            created_at=item.created_at,
            created_by=item.created_by,
            reason=item.reason,
            tokens=int(item.tokens or 0),
        )
        return StoredRevision(summary=summary, hot=hot)

    # ---------------------------------------------------------------- review queue
    def list_review(self, project_id: str, *, status: str | None) -> list[ReviewEntry]:
        """The review queue, oldest day first (Query on ``REVIEW#``, every page)."""
        sync_admin_tables()
        items = ReviewDecisionItem.query(
            project_id,
            ReviewDecisionItem.sk.startswith("REVIEW#"),
            filter_condition=(ReviewDecisionItem.status == status) if status else None,
        )
        return [_review(project_id, i) for i in items]

    def get_review(self, project_id: str, item_id: str) -> ReviewEntry | None:
        """One review item by its route id ``{day}_{review_id}``, or None."""
        sync_admin_tables()
        day, review_id = split_review_item_id(item_id)
        try:
            item = ReviewDecisionItem.get(project_id, f"REVIEW#{day}#{review_id}", consistent_read=True)
        except DoesNotExist:
            return None
        return _review(project_id, item)

    def decide_review(self, project_id: str, decided: ReviewEntry, *, audit: AuditRecord) -> None:
        """Record a decision (condition: the item is still pending) and its audit record.

        Raises:
            AlreadyDecided: someone decided it first.
        """
        sync_admin_tables()
        try:
            with TransactWrite(connection=self._connection()) as tx:
                self._decide(tx, project_id, decided)
                tx.save(_audit_item(audit), condition=AuditItem.sk.does_not_exist())
        except TransactWriteError:
            current = self.get_review(project_id, decided.item_id)
            status = current.status if current else "unknown"
            raise AlreadyDecided(f"review item {decided.item_id} was already {status}", status=status) from None

    @staticmethod
    def _decide(tx: TransactWrite, project_id: str, decided: ReviewEntry) -> None:
        if decided.decided_by is None or decided.decided_at is None:
            raise ValueError("a decision needs decided_by and decided_at")
        key = ReviewDecisionItem(project_id, f"REVIEW#{decided.day}#{decided.review_id}")
        tx.update(
            key,
            actions=[
                ReviewDecisionItem.status.set(decided.status),
                ReviewDecisionItem.decided_by.set(decided.decided_by),
                ReviewDecisionItem.decided_at.set(decided.decided_at),
                ReviewDecisionItem.decision_reason.set(decided.decision_reason)
                if decided.decision_reason
                else ReviewDecisionItem.decision_reason.remove(),
            ],
            condition=ReviewDecisionItem.status == "pending",
        )

    # ----------------------------------------------------------------------- audit
    def list_audit(self, project_id: str, *, limit: int, cursor: str | None) -> Page[AuditRecord]:
        """Admin changes newest first (one Query per page)."""
        sync_admin_tables()
        start = decode_cursor(project_id, cursor, "AUDIT#") if cursor else None
        results = AuditItem.query(
            project_id,
            AuditItem.sk.startswith("AUDIT#"),
            scan_index_forward=False,
            limit=limit,
            last_evaluated_key=start,
        )
        items = [
            AuditRecord(
                project_id=project_id,
                audit_id=i.audit_id,
                at=i.at,
                actor=i.actor,
                action=i.action,  # type: ignore[arg-type]
                target=i.target,
                reason=i.reason,
                details=dict(i.details or {}),
            )
            for i in results
        ]
        return Page[AuditRecord](items=items, next_cursor=_next(results, len(items), limit))

    # --------------------------------------------------------------------- reports
    def get_report(self, project_id: str, iso_week: str) -> WeeklyReport | None:
        """The report of one ISO week (strongly consistent) or None."""
        try:
            return _report(WeeklyReportItem.get(project_id, f"REPORT#{iso_week}", consistent_read=True))
        except DoesNotExist:
            return None

    def correct_report(
        self, previous: WeeklyReport, corrected: WeeklyReport, *, replaced_by: str, audit: AuditRecord
    ) -> None:
        """Keep the previous text as ``REPORTREV#``, store the correction, write the audit record.

        Raises:
            VersionConflict: the report's revision changed since it was read (current revision).
        """
        sync_admin_tables()
        pk = previous.project_id
        old = ReportRevisionItem(
            pk,
            f"REPORTREV#{previous.iso_week}#{previous.revision:06d}",
            iso_week=previous.iso_week,
            revision=previous.revision,
            summary=previous.summary,
            created_at=previous.created_at,
            created_by=previous.created_by,
            evidence=list(previous.evidence),
            replaced_at=corrected.created_at,
            replaced_by=replaced_by,
        )
        try:
            with TransactWrite(connection=self._connection()) as tx:
                tx.update(
                    WeeklyReportItem(pk, f"REPORT#{previous.iso_week}"),
                    actions=[
                        WeeklyReportItem.summary.set(corrected.summary),
                        WeeklyReportItem.revision.set(corrected.revision),
                        WeeklyReportItem.created_at.set(corrected.created_at),
                        WeeklyReportItem.created_by.set(corrected.created_by),
                    ],
                    condition=WeeklyReportItem.revision == previous.revision,
                )
                tx.save(old, condition=ReportRevisionItem.sk.does_not_exist())
                tx.save(_audit_item(audit), condition=AuditItem.sk.does_not_exist())
        except TransactWriteError:
            current = self.get_report(pk, previous.iso_week)
            raise VersionConflict(
                "someone else corrected the report first",
                current_version=current.revision if current else None,
            ) from None


def _next(results: Any, returned: int, limit: int) -> str | None:
    """The cursor after a page: only when the page is full and DynamoDB says there is more."""
    if returned < limit:
        return None
    last = results.last_evaluated_key
    if not last:
        return None
    return encode_cursor(str(last["sk"]["S"]))


def _audit_item(audit: AuditRecord) -> AuditItem:
    return AuditItem(
        audit.project_id,
        f"AUDIT#{_iso(audit.at)}#{audit.audit_id}",
        audit_id=audit.audit_id,
        at=audit.at,
        actor=audit.actor,
        action=audit.action,
        target=audit.target,
        reason=audit.reason,
        details=audit.details,
    )


def _review(project_id: str, i: ReviewDecisionItem) -> ReviewEntry:
    return ReviewEntry(
        item_id=review_item_id(i.day, i.review_id),
        review_id=i.review_id,
        day=i.day,
        text=i.text,
        section=i.section,
        role_tag=i.role_tag,
        evidence=list(i.evidence or []),
        reason=i.reason,
        detail=i.detail,
        origin=i.origin,
        status=i.status,  # type: ignore[arg-type]
        created_at=i.created_at,
        created_by=i.created_by,
        decided_by=i.decided_by,
        decided_at=i.decided_at,
        decision_reason=i.decision_reason,
    )


__all__ = ["AdminRepository", "decode_cursor", "encode_cursor"]
