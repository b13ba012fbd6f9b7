"""Answer feedback in DynamoDB (keys in :mod:`agent_memory.adapters.dynamo.keys`).

- the rating: SessionsTable, the rated message's partition ``{project}#{session}``, sk
  ``FEEDBACK#{message_id}#{user_id}`` (one per rater: a second rating overwrites it), and in the
  ProjectSessionsIndex under ``FEEDBACK#{project}`` / ``{UTC time}#{message_id}#{user_id}`` (the
  admin listing: one Query, never a Scan);
- the feedback event: FlowLogTable, ``{project}#{UTC date}`` / ``{UTC time}#{message_id}.fb.{user}``
  (written with the rating in ONE TransactWriteItems; only the jobs read it).
"""

from __future__ import annotations

from datetime import datetime

from pynamodb.exceptions import DoesNotExist

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import sdk_errors_as_domain, transaction
from agent_memory.adapters.dynamo.conversation_tables import FeedbackItem, FlowLogItem, MessageItem
from agent_memory.adapters.dynamo.fields import item_fields, read_fields
from agent_memory.adapters.dynamo.members import study_role_of
from agent_memory.adapters.dynamo.message_mappers import message_from_item
from agent_memory.domain.errors import MessageNotFound
from agent_memory.domain.feedback import FEEDBACK_SOURCE, Feedback
from agent_memory.domain.turns import MessageRecord


def feedback_index_pk(project_id: str) -> str:
    """ProjectSessionsIndex partition of a project's feedback (sessions use ``{project}``)."""
    return f"FEEDBACK#{project_id}"


#: Sort-key prefix of the rating items in a session's partition (``FEEDBACK#{message_id}#{user_id}``).
FEEDBACK_PREFIX = "FEEDBACK#"


def feedback_event_id(message_id: str, user_id: str) -> str:
    """The id part of a rating's flow-log event key (``{message_id}.fb.{user_id}``)."""
    return f"{message_id}.fb.{user_id}"


def _item(fb: Feedback) -> FeedbackItem:
    return FeedbackItem(
        keys.session_pk(fb.project_id, fb.session_id), f"{FEEDBACK_PREFIX}{fb.message_id}#{fb.user_id}",
        **item_fields(fb, FeedbackItem,
        tags=list(fb.tags),
        project_pk=feedback_index_pk(fb.project_id),
        project_sk=f"{keys.sort_time(fb.at)}#{fb.message_id}#{fb.user_id}",
    ))


def _event(fb: Feedback, expires_at: datetime | None) -> FlowLogItem:
    pk, sk = keys.flow_log_keys(fb.project_id, fb.at, feedback_event_id(fb.message_id, fb.user_id))
    return FlowLogItem(
        pk, sk,
        project_id=fb.project_id,
        session_id=fb.session_id,
        message_id=fb.message_id,
        role="user",  # a statement of the rater: the distiller reads it like the rater's messages
        content=fb.reason or "",
        user_id=fb.user_id,
        at=fb.at,
        status="ok",
        expires_at=expires_at,
        source=FEEDBACK_SOURCE,
        rating=fb.rating,
        study_role=fb.study_role,
    )


def _from_item(item: FeedbackItem) -> Feedback:
    return Feedback(**read_fields(item, Feedback,
        tags=list(item.tags or []),
    ))


@sdk_errors_as_domain
class FeedbackRepository:
    """The feedback store (port ``FeedbackStore``)."""

    def get_message(self, project_id: str, session_id: str, message_id: str) -> MessageRecord:
        """The rated message (GetItem). Raises MessageNotFound."""
        try:
            item = MessageItem.get(keys.session_pk(project_id, session_id), keys.message_sk(message_id))
        except DoesNotExist:
            raise MessageNotFound(f"unknown message {message_id}") from None
        return message_from_item(item)

    def study_role_of(self, project_id: str, user_id: str) -> str | None:
        """The member's study role, or None (:func:`.members.study_role_of`: one GetItem)."""
        return study_role_of(project_id, user_id)

    def put_feedback(self, feedback: Feedback, *, expires_at: datetime | None) -> None:
        """The rating (replacing the rater's earlier one) and its flow-log event, in ONE
        TransactWriteItems; a replaced rating's flow-log event is deleted in it (one GetItem reads
        the earlier rating), so the flow log holds one event per rating and an erasure of the
        session, which finds the event from the rating item, leaves none behind."""
        item = _item(feedback)
        try:
            earlier: FeedbackItem | None = FeedbackItem.get(item.pk, item.sk, consistent_read=True)
        except DoesNotExist:
            earlier = None
        with transaction() as tx:
            tx.save(item)
            if earlier is not None and earlier.at != feedback.at:
                pk, sk = keys.flow_log_keys(feedback.project_id, earlier.at, feedback_event_id(earlier.message_id,
                                                                                             earlier.user_id))
                tx.delete(FlowLogItem(pk, sk))
            tx.save(_event(feedback, expires_at), condition=FlowLogItem.sk.does_not_exist())

    def list_feedback(self, project_id: str, start: datetime | None, end: datetime | None) -> list[Feedback]:
        """The project's ratings with ``start <= at < end`` (open ends allowed), oldest first: one
        Query of the index partition, paginated to the end."""
        lo = keys.sort_time(start) if start else "0"
        hi = keys.sort_time(end) if end else "9"
        items = FeedbackItem.project_index.query(
            feedback_index_pk(project_id), FeedbackItem.project_sk.between(lo, hi)
        )
        return [
            _from_item(i) for i in items
            if (start is None or i.at >= start) and (end is None or i.at < end)
        ]


__all__ = ["FEEDBACK_PREFIX", "FeedbackRepository", "feedback_event_id", "feedback_index_pk"]
