"""PynamoDB models of the SessionsTable (sessions with their indexes, messages, diagnoses,
feedback) and of the FlowLogTable, registered with :func:`.tables.register` (bound like every
model by :func:`.tables.bind_tables`). Key layout: :mod:`agent_memory.adapters.dynamo.keys`.
"""

from __future__ import annotations

from pynamodb.attributes import (
    ListAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from agent_memory.adapters.dynamo.tables import BaseItem, Utf8JSONAttribute, register


class PatientIndex(GlobalSecondaryIndex["SessionItem"]):
    """A patient's sessions, newest first: ``{project}#{patient}`` / ``{updated_at}#{session}``."""

    class Meta:
        index_name = "PatientIndex"
        projection = AllProjection()

    patient_pk = UnicodeAttribute(hash_key=True)
    patient_sk = UnicodeAttribute(range_key=True)


class ProjectSessionsIndex(GlobalSecondaryIndex["SessionItem"]):
    """A project's sessions, newest first: ``{project}`` / ``{updated_at}#{session}``."""

    class Meta:
        index_name = "ProjectSessionsIndex"
        projection = AllProjection()

    project_pk = UnicodeAttribute(hash_key=True)
    project_sk = UnicodeAttribute(range_key=True)


class SessionItem(BaseItem):
    """``sk = SESSION``: metadata, the bounded window of recent messages, facts, summary."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-sessions"

    project_id = UnicodeAttribute()
    session_id = UnicodeAttribute()
    patient_id = UnicodeAttribute(null=True)
    type = UnicodeAttribute(default="research")
    name = UnicodeAttribute(null=True)
    created_by = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    updated_at = UTCDateTimeAttribute()
    version = VersionAttribute()
    message_count = NumberAttribute(default=0)
    diagnosis_count = NumberAttribute(default=0)
    window = Utf8JSONAttribute(default=list)
    facts = Utf8JSONAttribute(default=dict)
    summary = UnicodeAttribute(default="")
    activity_date = UnicodeAttribute(null=True)  # SessionState.activity_date
    patient_pk = UnicodeAttribute(null=True)
    patient_sk = UnicodeAttribute(null=True)
    project_pk = UnicodeAttribute()
    project_sk = UnicodeAttribute()
    expires_at = TTLAttribute(null=True)  # SessionRetentionDays after the last write (0: none)
    patient_index = PatientIndex()
    project_index = ProjectSessionsIndex()


class MessageItem(BaseItem):
    """``sk = MSG#{message_id}``: every message of the session, kept forever.

    ``context`` (assistant messages) is the manifest of what the LLM was given for that
    turn: block names, token counts and references (hot-memory version, report weeks,
    message ids) from which the context endpoint rebuilds the text.
    """

    class Meta(BaseItem.Meta):
        table_name = "unbound-sessions"

    message_id = UnicodeAttribute()
    role = UnicodeAttribute()
    content = UnicodeAttribute()
    at = UTCDateTimeAttribute()
    user_id = UnicodeAttribute(null=True)
    study_role = UnicodeAttribute(null=True)
    status = UnicodeAttribute(default="ok")
    truncated = NumberAttribute(default=0)
    tool_calls = Utf8JSONAttribute(default=list)
    context = Utf8JSONAttribute(null=True)
    reply_to = UnicodeAttribute(null=True)
    idempotency_hash = UnicodeAttribute(null=True)
    source = UnicodeAttribute(default="chat")
    expires_at = TTLAttribute(null=True)  # SessionRetentionDays after it was written (0: none)


class FeedbackProjectIndex(GlobalSecondaryIndex["FeedbackItem"]):
    """A project's feedback in time order, in the ProjectSessionsIndex under its own partition
    ``FEEDBACK#{project}`` / ``{UTC time}#{message_id}#{user_id}`` (never mixed with sessions)."""

    class Meta:
        index_name = "ProjectSessionsIndex"
        projection = AllProjection()

    project_pk = UnicodeAttribute(hash_key=True)
    project_sk = UnicodeAttribute(range_key=True)


class FeedbackItem(BaseItem):
    """``sk = FEEDBACK#{message_id}#{user_id}``: one user's rating of one assistant message, in the
    message's session partition (a second rating by the same user replaces it)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-sessions"

    project_id = UnicodeAttribute()
    session_id = UnicodeAttribute()
    message_id = UnicodeAttribute()
    user_id = UnicodeAttribute()
    rating = UnicodeAttribute()
    reason = UnicodeAttribute(null=True)
    tags = ListAttribute(of=UnicodeAttribute, default=list)
    study_role = UnicodeAttribute(null=True)
    at = UTCDateTimeAttribute()
    project_pk = UnicodeAttribute()
    project_sk = UnicodeAttribute()
    project_index = FeedbackProjectIndex()


class DiagnosisPatientIndex(GlobalSecondaryIndex["DiagnosisItem"]):
    """The PatientIndex read as diagnosis items (``patient_sk`` begins with ``DIAG#``)."""

    class Meta:
        index_name = "PatientIndex"
        projection = AllProjection()

    patient_pk = UnicodeAttribute(hash_key=True)
    patient_sk = UnicodeAttribute(range_key=True)


class DiagnosisItem(BaseItem):
    """``sk = DIAG#{diagnosis_id}``: a diagnosis report with the symptoms as they were when it
    was taken (``symptoms_snapshot``: a copy, later turns never change it).

    With a patient, ``patient_pk = {project}#{patient}`` and ``patient_sk =
    DIAG#{created_at}#{diagnosis_id}`` put it in the PatientIndex beside the patient's
    sessions (whose ``patient_sk`` starts with a digit, so the two never mix in a range).
    """

    class Meta(BaseItem.Meta):
        table_name = "unbound-sessions"

    project_id = UnicodeAttribute()
    session_id = UnicodeAttribute()
    diagnosis_id = UnicodeAttribute()
    patient_id = UnicodeAttribute(null=True)
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute(null=True)
    report = Utf8JSONAttribute(default=dict)
    symptoms_snapshot = Utf8JSONAttribute(default=list)
    patient_pk = UnicodeAttribute(null=True)
    patient_sk = UnicodeAttribute(null=True)
    expires_at = TTLAttribute(null=True)  # SessionRetentionDays after it was written (0: none)
    patient_index = DiagnosisPatientIndex()


class FlowLogItem(BaseItem):
    """The raw stream: every message verbatim. The chat role may only PUT these."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-flowlog"

    project_id = UnicodeAttribute()
    session_id = UnicodeAttribute()
    message_id = UnicodeAttribute()
    role = UnicodeAttribute()
    content = UnicodeAttribute()
    user_id = UnicodeAttribute(null=True)
    study_role = UnicodeAttribute(null=True)
    at = UTCDateTimeAttribute()
    status = UnicodeAttribute(default="ok")
    expires_at = TTLAttribute(null=True)
    # Feedback events (source "feedback"): the rating (the rater's study role is ``study_role``).
    source = UnicodeAttribute(null=True)
    rating = UnicodeAttribute(null=True)


class PatientRefsProjectIndex(GlobalSecondaryIndex["PatientRefsItem"]):
    """A project's diagnosis-references items, in the ProjectSessionsIndex under their own
    partition ``PATIENTS#{project}`` / ``{patient_id}`` (never mixed with sessions)."""

    class Meta:
        index_name = "ProjectSessionsIndex"
        projection = AllProjection()

    project_pk = UnicodeAttribute(hash_key=True)
    project_sk = UnicodeAttribute(range_key=True)


class PatientRefsItem(BaseItem):
    """pk ``{project}#PATIENT#{patient}``, sk ``DIAGREFS``: the references (ids, sessions, times,
    key symptoms) of the patient's newest diagnoses, oldest first (``PatientRefs``).

    Written in the transaction that stores a diagnosis, under ``version``; the chat turn reads
    it with its BatchGetItem on a patient's first turn. ``expires_at`` is no earlier than that of
    any diagnosis it references.
    """

    class Meta(BaseItem.Meta):
        table_name = "unbound-sessions"

    project_id = UnicodeAttribute()
    patient_id = UnicodeAttribute()
    refs = Utf8JSONAttribute(default=list)
    version = VersionAttribute()
    updated_at = UTCDateTimeAttribute()
    project_pk = UnicodeAttribute()
    project_sk = UnicodeAttribute()
    expires_at = TTLAttribute(null=True)
    project_index = PatientRefsProjectIndex()


register("sessions", SessionItem, MessageItem, DiagnosisItem, FeedbackItem, PatientRefsItem)
register("flow_log", FlowLogItem)

__all__ = ["DiagnosisItem", "FeedbackItem", "FlowLogItem", "MessageItem", "PatientRefsItem", "SessionItem"]
