"""Rating an assistant message and listing the project's ratings.

Rules: one rating per user per assistant message (a second rating replaces it); an unknown message
is 404 and a user message 422 (only answers are rated); a reason over
:data:`~agent_memory.domain.feedback.FEEDBACK_REASON_MAX_CHARS` characters is 422; nothing is
written on any of these. The rating is stored with the message and as a feedback event in the
flow log, in one transaction (the chat never reads it; the jobs do).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel

from agent_memory.domain.errors import InvalidInput
from agent_memory.domain.feedback import (
    FEEDBACK_MAX_TAGS,
    FEEDBACK_REASON_MAX_CHARS,
    FEEDBACK_TAG_MAX_CHARS,
    Feedback,
    Rating,
)
from agent_memory.domain.text import content_problem
from agent_memory.observability import MetricUnit, metrics, single_metric
from agent_memory.ports import FeedbackStore

#: Metric of every rating, dimension ``rating`` (up / down).
FEEDBACK_METRIC = "AnswerFeedback"


def check_feedback(reason: str | None, tags: Sequence[str] | None) -> tuple[str | None, list[str]]:
    """The reason (stripped; None when empty) and tags (stripped, de-duplicated, in order).

    Raises:
        InvalidInput: reason over FEEDBACK_REASON_MAX_CHARS characters or with control characters;
            more than FEEDBACK_MAX_TAGS tags or a tag over FEEDBACK_TAG_MAX_CHARS characters (422).
    """
    text = (reason or "").strip() or None
    if text is not None:
        if len(text) > FEEDBACK_REASON_MAX_CHARS:
            raise InvalidInput(f"reason is {len(text)} characters; the limit is {FEEDBACK_REASON_MAX_CHARS}")
        problem = content_problem(text)
        if problem is not None:
            raise InvalidInput(f"reason {problem}")
    cleaned = list(dict.fromkeys(t.strip() for t in tags or [] if t.strip()))
    if len(cleaned) > FEEDBACK_MAX_TAGS:
        raise InvalidInput(f"at most {FEEDBACK_MAX_TAGS} tags")
    if any(len(t) > FEEDBACK_TAG_MAX_CHARS or content_problem(t) for t in cleaned):
        raise InvalidInput(f"a tag must be 1-{FEEDBACK_TAG_MAX_CHARS} visible characters")
    return text, cleaned


def rate_message(
    store: FeedbackStore,
    *,
    project_id: str,
    session_id: str,
    message_id: str,
    user_id: str,
    rating: Rating,
    reason: str | None,
    tags: Sequence[str] | None,
    now: datetime,
    study_role: str | None = None,
    flow_log_retention_days: int = 0,
) -> Feedback:
    """Store ``user_id``'s rating of assistant message ``message_id`` (replacing an earlier one).
    ``study_role``: the rater's study role; None = the project's membership item says (or unknown).

    Returns:
        The stored Feedback.

    Raises:
        MessageNotFound: no such message in that session (404).
        InvalidInput: the message is a user message, or the reason / tags are invalid (422).
    """
    text, clean_tags = check_feedback(reason, tags)
    message = store.get_message(project_id, session_id, message_id)
    if message.role != "assistant":
        raise InvalidInput("only an assistant message can be rated")
    if study_role is None:
        study_role = store.study_role_of(project_id, user_id)
    feedback = Feedback(
        project_id=project_id, session_id=session_id, message_id=message_id, user_id=user_id,
        rating=rating, reason=text, tags=clean_tags, study_role=study_role, at=now,
    )
    expires = now + timedelta(days=flow_log_retention_days) if flow_log_retention_days > 0 else None
    store.put_feedback(feedback, expires_at=expires)
    with single_metric(name=FEEDBACK_METRIC, unit=MetricUnit.Count, value=1, namespace=metrics.namespace) as metric:
        metric.add_dimension(name="rating", value=rating)
    return feedback


class FeedbackList(BaseModel):
    """``GET .../feedback``: the ratings (oldest first) and their counts per rating."""

    project_id: str
    counts: dict[str, int]
    feedback: list[Feedback]


def list_feedback(
    store: FeedbackStore,
    project_id: str,
    *,
    rating: Rating | None,
    start: datetime | None,
    end: datetime | None,
) -> FeedbackList:
    """The project's ratings with ``start <= at < end`` (open ends allowed), of one ``rating`` or all.

    Raises:
        InvalidInput: ``start`` is not before ``end`` (422).
    """
    if start is not None and end is not None and start >= end:
        raise InvalidInput("from must be before to")
    found = [f for f in store.list_feedback(project_id, start, end) if rating is None or f.rating == rating]
    counts = Counter(f.rating for f in found)
    return FeedbackList(
        project_id=project_id, counts={"up": counts.get("up", 0), "down": counts.get("down", 0)}, feedback=found
    )


__all__ = ["FEEDBACK_METRIC", "FeedbackList", "check_feedback", "list_feedback", "rate_message"]
