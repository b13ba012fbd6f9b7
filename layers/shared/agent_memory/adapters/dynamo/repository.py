"""Repository over the PynamoDB models: domain models in, domain models out.

Round trips (DESIGN.md "DynamoDB access patterns"):
- :meth:`DynamoRepository.load_turn_context`: ONE BatchGetItem across MemoryTable and
  SessionsTable (project, hot memory, session item), strongly consistent.
- :meth:`DynamoRepository.load_history`: ONE Query (newest first), paginated to the end
  of ``limit`` items.
- :meth:`DynamoRepository.record_turn`: ONE TransactWriteItems.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from pynamodb.connection import Connection
from pynamodb.exceptions import DoesNotExist, PutError, TransactWriteError
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo.tables import (
    ActivityItem,
    FlowLogItem,
    HotMemoryItem,
    HotMemoryRevisionItem,
    MessageItem,
    ProjectItem,
    SessionItem,
    WeeklyReportItem,
)
from agent_memory.domain.errors import (
    ItemTooLarge,
    MessageNotFound,
    ProjectNotFound,
    VersionConflict,
)
from agent_memory.domain.models import (
    HotMemory,
    HotMemoryLine,
    MessageRecord,
    Project,
    SessionState,
    ToolCall,
    TurnContext,
    TurnWrite,
    WeeklyReport,
    YearlySummary,
)
from agent_memory.domain.text import DYNAMODB_ITEM_LIMIT_BYTES, dynamodb_item_size

#: Byte budget of the session item (window + facts + summary + metadata), kept well
#: under DynamoDB's 400 KB item limit so a turn can never hit it (case B14).
SESSION_ITEM_BUDGET_BYTES = 350_000
#: Byte budget of the hot-memory item and of each of its revision items.
HOT_ITEM_MAX_BYTES = DYNAMODB_ITEM_LIMIT_BYTES - 10_000
#: Byte budget of one message item (content + context manifest + tool calls).
MESSAGE_ITEM_BUDGET_BYTES = 380_000


def session_pk(project_id: str, session_id: str) -> str:
    """Partition key of a session: ``{project_id}#{session_id}``."""
    return f"{project_id}#{session_id}"


def flow_log_keys(project_id: str, at: datetime, message_id: str) -> tuple[str, str]:
    """Flow-log keys: ``({project}#{UTC date}, {UTC ISO time}#{message_id})``."""
    at_utc = at.astimezone(UTC)
    return f"{project_id}#{at_utc.date().isoformat()}", f"{_iso(at_utc)}#{message_id}"


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class DynamoRepository:
    """Data access for chat, jobs and admin routes (PynamoDB; tables bound by ``bind_tables``)."""

    # ------------------------------------------------------------------ reads
    def load_turn_context(self, project_id: str, session_id: str, *, now: datetime) -> TurnContext:
        """Project, hot memory and session in ONE strongly consistent BatchGetItem.

        Returns a new, unsaved session (``version == 0``) when the session does not exist.

        Raises:
            ProjectNotFound: no ``PROJECT`` item for ``project_id``.
        """
        memory_table = ProjectItem.Meta.table_name
        sessions_table = SessionItem.Meta.table_name
        request: dict[str, Any] = {
            memory_table: {
                "Keys": [
                    {"pk": {"S": project_id}, "sk": {"S": "PROJECT"}},
                    {"pk": {"S": project_id}, "sk": {"S": "HOT"}},
                ],
                "ConsistentRead": True,
            },
            sessions_table: {
                "Keys": [{"pk": {"S": session_pk(project_id, session_id)}, "sk": {"S": "SESSION"}}],
                "ConsistentRead": True,
            },
        }
        items = self._batch_get(request)
        project_raw = hot_raw = session_raw = None
        for item in items:
            sk = item["sk"]["S"]
            if sk == "PROJECT":
                project_raw = item
            elif sk == "HOT":
                hot_raw = item
            elif sk == "SESSION":
                session_raw = item
        if project_raw is None:
            raise ProjectNotFound(f"unknown project {project_id}")
        project = _project(ProjectItem.from_raw_data(project_raw))
        hot = (
            _hot_memory(HotMemoryItem.from_raw_data(hot_raw))
            if hot_raw
            else HotMemory(project_id=project_id, version=0)
        )
        if session_raw:
            session = _session(SessionItem.from_raw_data(session_raw))
        else:
            session = SessionState(
                project_id=project_id, session_id=session_id, created_at=now, updated_at=now, version=0
            )
        return TurnContext(project=project, hot_memory=hot, session=session)

    def _batch_get(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """BatchGetItem across tables; unprocessed keys are fetched again until none remain
        (the AWS contract of BatchGetItem)."""
        connection = self._connection()
        items: list[dict[str, Any]] = []
        pending = request
        while pending:
            response = connection.dispatch("BatchGetItem", {"RequestItems": pending})
            for table_items in response.get("Responses", {}).values():
                items.extend(table_items)
            pending = response.get("UnprocessedKeys") or {}
        return items

    @staticmethod
    def _connection() -> Connection:
        return ProjectItem._get_connection().connection

    def get_project(self, project_id: str) -> Project:
        """The project record. Raises ProjectNotFound."""
        try:
            return _project(ProjectItem.get(project_id, "PROJECT"))
        except DoesNotExist:
            raise ProjectNotFound(f"unknown project {project_id}") from None

    def load_history(self, project_id: str, *, limit_weeks: int, page_size: int | None = None) -> list[WeeklyReport]:
        """The ``limit_weeks`` most recent weekly reports, newest first.

        One Query on the project's partition (``sk`` begins with ``REPORT#``, descending),
        paginated until ``limit_weeks`` items are read or the partition ends (case B15a);
        ``page_size`` forces small pages in tests.
        """
        results = WeeklyReportItem.query(
            project_id,
            WeeklyReportItem.sk.startswith("REPORT#"),
            scan_index_forward=False,
            limit=limit_weeks,
            page_size=page_size or limit_weeks,
        )
        return [_report(item) for item in results]

    def get_reports(self, project_id: str, weeks: list[str]) -> list[WeeklyReport]:
        """Reports for the given ISO weeks (``YYYY-Www``), newest first; missing weeks skipped."""
        if not weeks:
            return []
        keys = [(project_id, f"REPORT#{w}") for w in weeks]
        found = [_report(item) for item in WeeklyReportItem.batch_get(keys)]
        return sorted(found, key=lambda r: r.iso_week, reverse=True)

    def get_session(self, project_id: str, session_id: str) -> SessionState | None:
        """The session item (strongly consistent) or None."""
        try:
            return _session(SessionItem.get(session_pk(project_id, session_id), "SESSION", consistent_read=True))
        except DoesNotExist:
            return None

    def get_message(self, project_id: str, session_id: str, message_id: str) -> tuple[MessageRecord, dict[str, Any] | None]:
        """A message and its context manifest. Raises MessageNotFound."""
        try:
            item = MessageItem.get(session_pk(project_id, session_id), f"MSG#{message_id}")
        except DoesNotExist:
            raise MessageNotFound(f"unknown message {message_id}") from None
        return _message(item), item.context

    def get_messages(self, project_id: str, session_id: str, message_ids: list[str]) -> dict[str, MessageRecord]:
        """Messages by id (BatchGetItem, paginated by PynamoDB)."""
        if not message_ids:
            return {}
        pk = session_pk(project_id, session_id)
        items = MessageItem.batch_get([(pk, f"MSG#{m}") for m in dict.fromkeys(message_ids)])
        return {item.message_id: _message(item) for item in items}

    def list_messages(self, project_id: str, session_id: str, *, page_size: int | None = None) -> list[MessageRecord]:
        """Every message of a session in time order (Query paginated to the end)."""
        items = MessageItem.query(
            session_pk(project_id, session_id), MessageItem.sk.startswith("MSG#"), page_size=page_size
        )
        return [_message(item) for item in items]

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]:
        """Every ``YEAR#{yyyy}`` summary of the project, oldest year first (one Query).

        Chat uses them for periods older than the loaded weeks (seed 001 section 5.1).
        """
        from agent_memory.adapters.dynamo.job_tables import YearSummaryItem, sync_job_tables

        sync_job_tables()
        return [
            YearlySummary(
                project_id=project_id,
                year=int(i.year),
                summary=i.summary,
                weeks=list(i.weeks or []),
                created_at=i.created_at,
                created_by=i.created_by,
            )
            for i in YearSummaryItem.query(project_id, YearSummaryItem.sk.startswith("YEAR#"))
        ]

    def load_hot_memory(self, project_id: str) -> HotMemory:
        """The current hot memory, strongly consistent (``version == 0`` when none is stored)."""
        try:
            return _hot_memory(HotMemoryItem.get(project_id, "HOT", consistent_read=True))
        except DoesNotExist:
            return HotMemory(project_id=project_id, version=0)

    def get_hot_memory_revision(self, project_id: str, version: int) -> HotMemory | None:
        """A stored hot-memory version (``HOTREV#``), or None if it was never stored."""
        try:
            item = HotMemoryRevisionItem.get(project_id, f"HOTREV#{version:010d}")
        except DoesNotExist:
            return None
        return HotMemory(
            project_id=project_id,
            version=int(item.revision),
            lines=[HotMemoryLine.model_validate(x) for x in item.lines or []],
            updated_at=item.created_at,
            updated_by=item.created_by,
        )

    # ----------------------------------------------------------------- writes
    def record_turn(self, write: TurnWrite) -> None:
        """Apply one turn in ONE TransactWriteItems (see :class:`TurnWrite`).

        Raises:
            VersionConflict: the session changed since it was read (optimistic lock), or a
                message / flow-log item of this turn already exists.
            ItemTooLarge: the session or a message item is over its byte budget.
        """
        s = write.session
        pk = session_pk(s.project_id, s.session_id)
        session_item = _session_item(s)
        # PynamoDB's VersionAttribute adds the optimistic-lock condition and the increment.
        if write.expected_version:
            session_item.version = write.expected_version
        size = dynamodb_item_size(session_item.serialize())
        if size > SESSION_ITEM_BUDGET_BYTES:
            raise ItemTooLarge(f"session item would be {size} bytes (budget {SESSION_ITEM_BUDGET_BYTES})")
        message_items: list[MessageItem] = []
        for m in write.new_messages:
            item = _message_item(pk, m, context=write.contexts.get(m.message_id), reply_to=write.reply_to.get(m.message_id))
            msize = dynamodb_item_size(item.serialize())
            if msize > MESSAGE_ITEM_BUDGET_BYTES:
                raise ItemTooLarge(f"message item would be {msize} bytes (budget {MESSAGE_ITEM_BUDGET_BYTES})")
            message_items.append(item)
        expires = (
            write.now + timedelta(days=write.flow_log_retention_days) if write.flow_log_retention_days > 0 else None
        )
        try:
            with TransactWrite(
                connection=self._connection(), client_request_token=write.client_request_token
            ) as tx:
                tx.save(session_item)
                for item in message_items:
                    tx.save(item, condition=MessageItem.sk.does_not_exist())
                for message_id in write.mark_ok:
                    tx.update(
                        MessageItem(pk, f"MSG#{message_id}"),
                        actions=[MessageItem.status.set("ok")],
                        condition=MessageItem.status == "failed",
                    )
                for m in write.flow_log:
                    fpk, fsk = flow_log_keys(s.project_id, m.at, m.message_id)
                    tx.save(
                        FlowLogItem(
                            fpk,
                            fsk,
                            project_id=s.project_id,
                            session_id=s.session_id,
                            message_id=m.message_id,
                            role=m.role,
                            content=m.content,
                            user_id=m.user_id,
                            at=m.at,
                            status=m.status,
                            expires_at=expires,
                        ),
                        condition=FlowLogItem.sk.does_not_exist(),
                    )
                for local_date in sorted(set(write.activity_local_dates)):
                    tx.save(ActivityItem(
                        s.project_id,
                        f"ACTIVE#{local_date}",
                        activity_pk=f"ACTIVE#{local_date}",
                        activity_sk=s.project_id,
                        last_at=write.now,
                    ))
        except TransactWriteError as exc:
            reasons = [r.code for r in (exc.cancellation_reasons or []) if r is not None]
            if "ConditionalCheckFailed" in reasons or "TransactionConflict" in reasons:
                raise VersionConflict("session changed concurrently", current_version=None) from None
            raise

    def put_project(self, project: Project) -> None:
        """Create or replace the project record."""
        ProjectItem(
            project.project_id,
            "PROJECT",
            name=project.name,
            time_zone=project.time_zone,
            kind=project.kind,
            created_at=project.created_at,
        ).save()

    def save_hot_memory(self, hot: HotMemory, *, expected_version: int, actor: str, reason: str | None, now: datetime, tokens: int) -> HotMemory:
        """Store a new hot-memory version and its revision item in one transaction.

        ``expected_version`` is the version the change was based on (0 = none yet).

        Raises:
            VersionConflict: someone saved first (carries the current version).
        """
        item, revision, new_version = self._hot_memory_items(
            hot, expected_version=expected_version, actor=actor, reason=reason, now=now, tokens=tokens
        )
        try:
            with TransactWrite(connection=self._connection()) as tx:
                tx.save(item)
                tx.save(revision, condition=HotMemoryRevisionItem.sk.does_not_exist())
        except TransactWriteError:
            current = self._current_hot_version(hot.project_id)
            raise VersionConflict("hot memory changed", current_version=current) from None
        return hot.model_copy(update={"version": new_version, "updated_at": now, "updated_by": actor})

    @staticmethod
    def _hot_memory_items(
        hot: HotMemory, *, expected_version: int, actor: str, reason: str | None, now: datetime, tokens: int
    ) -> tuple[HotMemoryItem, HotMemoryRevisionItem, int]:
        """The ``HOT`` item (its VersionAttribute conditions the write on ``expected_version``)
        and the ``HOTREV#{new version}`` revision item of a new hot-memory version, both
        checked against the item byte budget. Every writer of hot memory (chat seed, jobs,
        admin API) builds its transaction from these two items.

        Returns:
            (hot item, revision item, new version).

        Raises:
            ItemTooLarge: an item would exceed DynamoDB's 400 KB item limit (minus 10 KB).
        """
        new_version = expected_version + 1
        lines = [ln.model_dump(mode="json") for ln in hot.lines]
        item = HotMemoryItem(hot.project_id, "HOT", lines=lines, updated_at=now, updated_by=actor)
        if expected_version:
            item.version = expected_version
        revision = HotMemoryRevisionItem(
            hot.project_id,
            f"HOTREV#{new_version:010d}",
            revision=new_version,
            lines=lines,
            created_at=now,
            created_by=actor,
            reason=reason,
            tokens=tokens,
        )
        for candidate in (item, revision):
            size = dynamodb_item_size(candidate.serialize())
            if size > HOT_ITEM_MAX_BYTES:
                raise ItemTooLarge(f"hot memory item would be {size} bytes")
        return item, revision, new_version

    def _current_hot_version(self, project_id: str) -> int:
        try:
            return int(HotMemoryItem.get(project_id, "HOT", consistent_read=True).version or 0)
        except DoesNotExist:
            return 0

    def put_weekly_report(self, report: WeeklyReport, *, overwrite: bool = False) -> bool:
        """Store a weekly report; returns False (and writes nothing) if one exists and
        ``overwrite`` is False."""
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
            item.save(condition=None if overwrite else WeeklyReportItem.sk.does_not_exist())
        except PutError as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
                return False
            raise
        return True


# ---------------------------------------------------------------- mapping
def _project(item: ProjectItem) -> Project:
    return Project(
        project_id=item.pk,
        name=item.name,
        time_zone=item.time_zone,
        kind=item.kind,  # type: ignore[arg-type]
        created_at=item.created_at,
    )


def _hot_memory(item: HotMemoryItem) -> HotMemory:
    return HotMemory(
        project_id=item.pk,
        version=int(item.version or 0),
        lines=[HotMemoryLine.model_validate(x) for x in item.lines or []],
        updated_at=item.updated_at,
        updated_by=item.updated_by,
    )


def _report(item: WeeklyReportItem) -> WeeklyReport:
    return WeeklyReport(
        project_id=item.pk,
        iso_week=item.iso_week,
        summary=item.summary,
        revision=int(item.revision),
        created_at=item.created_at,
        created_by=item.created_by,
        evidence=list(item.evidence or []),
    )


def _session(item: SessionItem) -> SessionState:
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


def _session_item(s: SessionState) -> SessionItem:
    updated = _iso(s.updated_at)
    return SessionItem(
        session_pk(s.project_id, s.session_id),
        "SESSION",
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
        patient_pk=f"{s.project_id}#{s.patient_id}" if s.patient_id else None,
        patient_sk=f"{updated}#{s.session_id}" if s.patient_id else None,
        project_pk=s.project_id,
        project_sk=f"{updated}#{s.session_id}",
    )


def _message_item(pk: str, m: MessageRecord, *, context: dict[str, Any] | None, reply_to: str | None) -> MessageItem:
    return MessageItem(
        pk,
        f"MSG#{m.message_id}",
        message_id=m.message_id,
        role=m.role,
        content=m.content,
        at=m.at,
        user_id=m.user_id,
        status=m.status,
        truncated=1 if m.truncated else 0,
        tool_calls=[tc.model_dump(mode="json") for tc in m.tool_calls],
        context=context,
        reply_to=reply_to,
        idempotency_hash=m.idempotency_hash,
        source=m.source,
    )


def _message(item: MessageItem) -> MessageRecord:
    return MessageRecord(
        message_id=item.message_id,
        role=item.role,  # type: ignore[arg-type]
        content=item.content,
        at=item.at,
        user_id=item.user_id,
        status=item.status,  # type: ignore[arg-type]
        truncated=bool(item.truncated),
        tool_calls=[ToolCall.model_validate(x) for x in item.tool_calls or []],
        idempotency_hash=item.idempotency_hash,
        source=item.source,  # type: ignore[arg-type]
    )


__all__ = ["DynamoRepository", "TurnWrite", "session_pk", "flow_log_keys", "Model"]
