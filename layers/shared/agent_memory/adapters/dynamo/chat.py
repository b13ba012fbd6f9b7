"""The chat turn's store: the session item and its messages (the turn's read and write, reads of
messages by id, by range), over the project's partition (a :class:`ProjectRepository` it holds:
the project record, hot memory, the history book).

Round trips of one turn (``docs/architecture.md``, "Request path"):
- :meth:`ChatRepository.load_turn_context`: ONE strongly consistent BatchGetItem across the
  MemoryTable and the SessionsTable (project, hot memory, the recent years' summaries, the asker's
  membership, session item and, on a patient's first turn, the patient's diagnosis references,
  :mod:`.patient_refs`);
- :meth:`ChatRepository.record_turn`: ONE TransactWriteItems (session item under its version
  condition, message items, flow-log items, activity markers);
- the history book only for history intents (:meth:`ProjectRepository.load_history`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, NoReturn

from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.transactions import TransactWrite

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import (
    batch_get,
    cancellation_codes,
    is_conflict,
    sdk_errors_as_domain,
    transaction,
)
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem, MessageItem, SessionItem
from agent_memory.adapters.dynamo.delegation import delegate
from agent_memory.adapters.dynamo.item_size import check_size
from agent_memory.adapters.dynamo.mappers import activity_to_item, member_from_item
from agent_memory.adapters.dynamo.message_mappers import (
    MESSAGE_ITEM_BUDGET_BYTES,
    SESSION_ITEM_BUDGET_BYTES,
    flow_log_to_item,
    message_from_item,
    message_to_item,
    session_from_item,
    session_to_item,
)
from agent_memory.adapters.dynamo.patient_refs import patient_refs_among, patient_refs_keys
from agent_memory.adapters.dynamo.projects import (
    ProjectRepository,
    project_and_hot_memory,
    project_keys,
    yearly_summaries_among,
    yearly_summary_keys,
)
from agent_memory.adapters.dynamo.record_tables import ErasureItem
from agent_memory.adapters.dynamo.tables import MemberItem, ProjectItem
from agent_memory.domain.errors import MessageNotFound, SessionErased, VersionConflict
from agent_memory.domain.turns import MessageRecord, SessionState, TurnContext, TurnWrite


@sdk_errors_as_domain
class ChatRepository:
    """The session reads and the turn write of the chat path (module docstring).

    Args:
        session_retention_days: items written to the sessions table expire this many days after
            the write (``expires_at``, the table's TTL); 0 = kept until erased.
        projects: the project's partition (a new :class:`ProjectRepository` by default).
    """

    def __init__(self, session_retention_days: int = 0, projects: ProjectRepository | None = None) -> None:
        self.session_retention_days = session_retention_days
        self.projects = projects or ProjectRepository()

    def session_expiry(self, at: datetime) -> datetime | None:
        """``expires_at`` of a sessions-table item written at ``at`` (None: kept)."""
        days = self.session_retention_days
        return at + timedelta(days=days) if days > 0 else None

    get_project = delegate("projects", ProjectRepository.get_project)
    load_history = delegate("projects", ProjectRepository.load_history)
    load_yearly_summaries = delegate("projects", ProjectRepository.load_yearly_summaries)
    get_hot_memory_revision = delegate("projects", ProjectRepository.get_hot_memory_revision)
    get_reports = delegate("projects", ProjectRepository.get_reports)

    # --------------------------------------------------------------------------- reads
    def load_turn_context(
        self, project_id: str, session_id: str, *, now: datetime, user_id: str | None = None,
        patient_id: str | None = None,
    ) -> TurnContext:
        """Project, hot memory, session, (``user_id`` given) the asker's ``MEMBER#`` item and
        (``patient_id`` given) the patient's diagnosis references in ONE strongly consistent
        BatchGetItem.

        Returns a new, unsaved session (``version == 0``) when the session does not exist,
        ``asker = None`` when ``user_id`` is not a member (who may use the project is the route
        guard's decision, made on this), and ``patient_diagnoses`` as
        :func:`.patient_refs.patient_refs_among` finds them (None: not asked, or unknown for a
        patient of a project not yet backfilled; the caller queries them).

        Raises:
            ProjectNotFound: no ``PROJECT`` item for ``project_id``.
        """
        memory_keys = project_keys(project_id)
        memory_keys["Keys"] += yearly_summary_keys(project_id, now)
        if user_id is not None:
            memory_keys["Keys"].append({"pk": {"S": project_id}, "sk": {"S": keys.member_sk(user_id)}})
        session_keys = [{"pk": {"S": keys.session_pk(project_id, session_id)}, "sk": {"S": keys.SESSION_SK}}]
        if patient_id is not None:
            session_keys += patient_refs_keys(project_id, patient_id)
        raw_items = batch_get({
            ProjectItem.Meta.table_name: memory_keys,
            SessionItem.Meta.table_name: {"Keys": session_keys, "ConsistentRead": True},
        })
        session_raw = next((raw for raw in raw_items if raw["sk"]["S"] == keys.SESSION_SK), None)
        member_raw = next((raw for raw in raw_items if raw["sk"]["S"].startswith(keys.MEMBER_PREFIX)), None)
        asker = member_from_item(MemberItem.from_raw_data(member_raw)) if member_raw is not None else None
        project, hot = project_and_hot_memory(project_id, raw_items)
        if session_raw is not None:
            session = session_from_item(SessionItem.from_raw_data(session_raw))
        else:
            session = SessionState(
                project_id=project_id, session_id=session_id, created_at=now, updated_at=now, version=0
            )
        patient_refs = patient_refs_among(project_id, patient_id, raw_items) if patient_id is not None else None
        return TurnContext(
            project=project, hot_memory=hot, session=session, asker=asker,
            yearly_summaries=yearly_summaries_among(project_id, now, raw_items),
            patient_diagnoses=patient_refs.refs if patient_refs is not None else None,
        )

    def get_session(self, project_id: str, session_id: str) -> SessionState | None:
        """The session item (strongly consistent) or None."""
        try:
            item = SessionItem.get(keys.session_pk(project_id, session_id), keys.SESSION_SK, consistent_read=True)
        except DoesNotExist:
            return None
        return session_from_item(item)

    def get_message(
        self, project_id: str, session_id: str, message_id: str
    ) -> tuple[MessageRecord, dict[str, Any] | None]:
        """A message and its context manifest. Raises MessageNotFound."""
        try:
            item = MessageItem.get(keys.session_pk(project_id, session_id), keys.message_sk(message_id))
        except DoesNotExist:
            raise MessageNotFound(f"unknown message {message_id}") from None
        return message_from_item(item), item.context

    def get_messages(self, project_id: str, session_id: str, message_ids: list[str]) -> dict[str, MessageRecord]:
        """Messages by id (BatchGetItem, paginated by PynamoDB)."""
        if not message_ids:
            return {}
        pk = keys.session_pk(project_id, session_id)
        items = MessageItem.batch_get([(pk, keys.message_sk(m)) for m in dict.fromkeys(message_ids)])
        return {item.message_id: message_from_item(item) for item in items}

    def messages_between(
        self, project_id: str, session_id: str, *, after_id: str | None, before_id: str, limit: int = 50,
    ) -> list[MessageRecord]:
        """The newest ``limit`` messages with ``after_id < id < before_id`` (ids sort by time),
        oldest first. One Query (descending, paginated to ``limit``)."""
        low = keys.message_sk(after_id) if after_id else keys.MESSAGE_PREFIX
        items = MessageItem.query(
            keys.session_pk(project_id, session_id),
            MessageItem.sk.between(low, keys.message_sk(before_id)),
            scan_index_forward=False,
            limit=limit + 2,
        )
        out = [message_from_item(i) for i in items if i.message_id not in (after_id, before_id)]
        return list(reversed(out[:limit]))

    # --------------------------------------------------------------------------- write
    def record_turn(self, write: TurnWrite) -> None:
        """Apply one turn in ONE TransactWriteItems (see :class:`TurnWrite`).

        Raises:
            VersionConflict: the session changed since it was read (optimistic lock), or a
                message / flow-log item of this turn already exists.
            SessionErased: the session was erased (404; the transaction wrote nothing).
            ItemTooLarge: the session or a message item is over its byte budget.
        """
        s = write.session
        session_item, message_items = self._turn_items(write)
        flow_expires = write.now + timedelta(days=write.flow_log_retention_days) \
            if write.flow_log_retention_days > 0 else None
        pk = keys.session_pk(s.project_id, s.session_id)
        try:
            with transaction(write.client_request_token) as tx:
                # First item (code 0): the session was not erased. An erasure writes its record
                # before deleting anything, so a turn racing it either lands before the record
                # (and the erasure finds its items) or fails here (docs/architecture.md, "Data governance").
                check_not_erased(tx, s.project_id, s.session_id)
                tx.save(session_item)
                for item in message_items:
                    tx.save(item, condition=MessageItem.sk.does_not_exist())
                for message_id in write.mark_ok:
                    tx.update(
                        MessageItem(pk, keys.message_sk(message_id)),
                        actions=[MessageItem.status.set("ok")],
                        condition=MessageItem.status == "failed",
                    )
                for m in write.flow_log:
                    tx.save(
                        flow_log_to_item(s.project_id, s.session_id, m, expires_at=flow_expires),
                        condition=FlowLogItem.sk.does_not_exist(),
                    )
                for local_date in sorted(set(write.activity_local_dates)):
                    tx.save(activity_to_item(s.project_id, local_date, at=write.now))
        except TransactWriteError as exc:
            raise_session_write_error(exc, s.session_id)

    def _turn_items(self, write: TurnWrite) -> tuple[SessionItem, list[MessageItem]]:
        """The session item (under the version read: PynamoDB's VersionAttribute adds the
        optimistic-lock condition and the increment) and the new message items, each checked
        against its byte budget.

        Raises:
            ItemTooLarge: an item is over its budget.
        """
        s = write.session
        session_item = session_to_item(s)
        if write.expected_version:
            session_item.version = write.expected_version
        session_item.expires_at = self.session_expiry(write.now)
        check_size(session_item, SESSION_ITEM_BUDGET_BYTES, "session")
        message_items: list[MessageItem] = []
        for m in write.new_messages:
            item = message_to_item(s.project_id, s.session_id, m, context=write.contexts.get(m.message_id),
                                   reply_to=write.reply_to.get(m.message_id))
            item.expires_at = self.session_expiry(write.now)
            check_size(item, MESSAGE_ITEM_BUDGET_BYTES, "message")
            message_items.append(item)
        return session_item, message_items


def check_not_erased(tx: TransactWrite, project_id: str, session_id: str) -> None:
    """Add to ``tx`` the condition that the session has no erasure record (a write to an erased
    session fails; docs/architecture.md, "Data governance"). Added first, its cancellation code
    is the transaction's first."""
    tx.condition_check(ErasureItem, project_id, keys.erasure_sk("session", session_id),
                       condition=ErasureItem.sk.does_not_exist())


def raise_session_write_error(exc: TransactWriteError, session_id: str, *, exists_at: int | None = None,
                              exists: Exception | None = None) -> NoReturn:
    """The domain error of a cancelled session write whose first item is :func:`check_not_erased`.

    Raises:
        SessionErased: the session was erased (code 0).
        (``exists``): the item at ``exists_at`` already exists (its condition failed).
        VersionConflict: another condition failed or a concurrent transaction won.
        TransactWriteError: anything else (as it was).
    """
    codes = cancellation_codes(exc)
    if codes and codes[0] == "ConditionalCheckFailed":
        raise SessionErased(f"session {session_id} was erased") from None
    if exists is not None and exists_at is not None and len(codes) > exists_at \
            and codes[exists_at] == "ConditionalCheckFailed":
        raise exists from None
    if is_conflict(exc):
        raise VersionConflict("session changed concurrently", current_version=None) from None
    raise exc


__all__ = ["ChatRepository", "check_not_erased", "raise_session_write_error"]
