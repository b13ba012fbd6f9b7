"""PynamoDB models of the three tables declared in ``template.yaml``, and their binding.

The key layout is in :mod:`agent_memory.adapters.dynamo.keys`. Every model is listed once in
:data:`TABLE_MODELS` under the table it lives on; :func:`bind_tables` points all of them at the
table names of the environment (``!Ref`` in the template) at cold start. There is no other way a
model gets a table.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from pynamodb.attributes import (
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    TTLAttribute,
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model


class Utf8JSONAttribute(JSONAttribute):
    """JSON stored as compact UTF-8 text (``ensure_ascii=False``).

    PynamoDB's ``JSONAttribute`` escapes every non-ASCII character (``\\u60a3``: 6 bytes for
    a Chinese character that takes 3 in UTF-8, 12 for an emoji), which doubles the stored size
    of Chinese text, while the item budgets are measured in UTF-8 bytes. Reading is unchanged:
    ``json.loads`` reads both forms.
    """

    def serialize(self, value: Any) -> str | None:
        if value is None:
            return None
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


class _Base(Model):
    class Meta:
        table_name = "unbound"
        region = _region()

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)


# ---------------------------------------------------------------- MemoryTable
class ProjectItem(_Base):
    """``sk = PROJECT``: the tenant record (its absence means 404 unknown project)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    name = UnicodeAttribute()
    time_zone = UnicodeAttribute()
    kind = UnicodeAttribute(default="iit")
    created_at = UTCDateTimeAttribute()
    #: ``ClinicalDataSource`` as JSON (source, api_url, token_secret name); absent = none.
    clinical_data = Utf8JSONAttribute(null=True)
    #: Since when every diagnosis of the project is referenced by its patient's
    #: :class:`PatientRefsItem` (set at creation, or by the backfill of a project that had
    #: diagnoses before those items existed). Absent: a patient without the item may still have
    #: diagnoses (the reader queries them). Kept by every write of the project record.
    patient_refs_since = UTCDateTimeAttribute(null=True)


class MemberItem(_Base):
    """``sk = MEMBER#{user_id}``: one member of the project (access role, study role, name)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    user_id = UnicodeAttribute()
    project_role = UnicodeAttribute()
    study_role = UnicodeAttribute()
    display_name = UnicodeAttribute()
    added_at = UTCDateTimeAttribute()
    added_by = UnicodeAttribute()


class HotMemoryItem(_Base):
    """``sk = HOT``: the current hot memory (structured lines, rendered to Markdown on read)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    version = VersionAttribute()
    lines = Utf8JSONAttribute(default=list)
    updated_at = UTCDateTimeAttribute(null=True)
    updated_by = UnicodeAttribute(null=True)


class HotMemoryRevisionItem(_Base):
    """``sk = HOTREV#{version:010d}``: every stored hot-memory version (restorable)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    revision = NumberAttribute()
    lines = Utf8JSONAttribute(default=list)
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute()
    reason = UnicodeAttribute(null=True)
    tokens = NumberAttribute(default=0)


class WeeklyReportItem(_Base):
    """``sk = REPORT#{YYYY-Www}``: one history-book entry."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    iso_week = UnicodeAttribute()
    summary = UnicodeAttribute()
    revision = NumberAttribute(default=1)
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute(default="archiver")
    evidence = ListAttribute(of=UnicodeAttribute, default=list)


class ReminderItem(_Base):
    """``sk = REMINDER#{reminder_id}``: one reminder (owner, text, schedule, next firing, status)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    reminder = Utf8JSONAttribute()
    owner = UnicodeAttribute()
    status = UnicodeAttribute()


class WebhookItem(_Base):
    """``sk = WEBHOOK``: the project's reminder webhook (URL and the Secrets Manager secret holding
    its HMAC key); absent = no webhook."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    url = UnicodeAttribute()
    secret_name = UnicodeAttribute()


class ActivityIndex(GlobalSecondaryIndex["ActivityItem"]):
    """Who was active on a local day: ``activity_pk = ACTIVE#{date}``, ``activity_sk = project``."""

    class Meta:
        index_name = "ActivityIndex"
        projection = KeysOnlyProjection()

    activity_pk = UnicodeAttribute(hash_key=True)
    activity_sk = UnicodeAttribute(range_key=True)


class ActivityItem(_Base):
    """``sk = ACTIVE#{local date}``: the project's activity marker for one local day."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    activity_pk = UnicodeAttribute()
    activity_sk = UnicodeAttribute()
    last_at = UTCDateTimeAttribute()
    activity_index = ActivityIndex()


class ReportRevisionItem(_Base):
    """``sk = REPORTREV#{iso_week}#{revision:06d}``: the text an admin correction replaced."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    iso_week = UnicodeAttribute()
    revision = NumberAttribute()
    summary = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute()
    evidence = ListAttribute(of=UnicodeAttribute, default=list)
    replaced_at = UTCDateTimeAttribute()
    replaced_by = UnicodeAttribute()


class YearSummaryItem(_Base):
    """``sk = YEAR#{yyyy}``: yearly summary built from that year's weekly reports."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    year = NumberAttribute()
    summary = UnicodeAttribute()
    weeks = ListAttribute(of=UnicodeAttribute, default=list)
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute(default="pruner")


class ReviewQueueItem(_Base):
    """``sk = REVIEW#{local day}#{review_id}``: a distilled candidate held for admin review, with
    its evidence ids and the reason it was held; the ``decided_*`` fields are set by the admin's
    decision (the jobs create the item, only the admin API updates it)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    review_id = UnicodeAttribute()
    day = UnicodeAttribute()
    text = UnicodeAttribute()
    section = UnicodeAttribute()
    role_tag = UnicodeAttribute(null=True)
    evidence = ListAttribute(of=UnicodeAttribute, default=list)
    reason = UnicodeAttribute()
    detail = UnicodeAttribute(null=True)
    origin = UnicodeAttribute(default="rules")
    status = UnicodeAttribute(default="pending")
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute(default="distiller")
    decided_by = UnicodeAttribute(null=True)
    decided_at = UTCDateTimeAttribute(null=True)
    decision_reason = UnicodeAttribute(null=True)


class JobRunItem(_Base):
    """``sk = JOBRUN#{job}#{key}``: a job finished for that period (checked first by every job)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    job = UnicodeAttribute()
    key = UnicodeAttribute()
    status = UnicodeAttribute(default="done")
    completed_at = UTCDateTimeAttribute()
    counts = JSONAttribute(default=dict)
    hot_version = NumberAttribute(null=True)


class AlertSentItem(_Base):
    """``sk = ALERT#{dedupe key}``: this alert was sent (so a re-run never sends it twice)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    kind = UnicodeAttribute()
    created_at = UTCDateTimeAttribute()


class AuditItem(_Base):
    """``sk = AUDIT#{at}#{audit_id}``: immutable record of one admin change."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    audit_id = UnicodeAttribute()
    at = UTCDateTimeAttribute()
    actor = UnicodeAttribute()
    action = UnicodeAttribute()
    target = UnicodeAttribute()
    reason = UnicodeAttribute(null=True)
    details = Utf8JSONAttribute(default=dict)


# -------------------------------------------------------------- SessionsTable
class ErasureItem(_Base):
    """``sk = ERASURE#{kind}#{target_id}``: the audit record of an erasure (who, when, what kind,
    how many items; no content). Never erased; a session's record also refuses later writes to
    that session (the turn's transaction checks it does not exist)."""

    class Meta(_Base.Meta):
        table_name = "unbound-memory"

    kind = UnicodeAttribute()
    target_id = UnicodeAttribute()
    actor = UnicodeAttribute()
    requested_at = UTCDateTimeAttribute()
    status = UnicodeAttribute(default="running")
    finished_at = UTCDateTimeAttribute(null=True)
    mode = UnicodeAttribute(default="inline")
    sessions = ListAttribute(of=UnicodeAttribute, default=list)
    counts = JSONAttribute(default=dict)


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


class SessionItem(_Base):
    """``sk = SESSION``: metadata, the bounded window of recent messages, facts, summary."""

    class Meta(_Base.Meta):
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
    patient_pk = UnicodeAttribute(null=True)
    patient_sk = UnicodeAttribute(null=True)
    project_pk = UnicodeAttribute()
    project_sk = UnicodeAttribute()
    expires_at = TTLAttribute(null=True)  # SessionRetentionDays after the last write (0: none)
    patient_index = PatientIndex()
    project_index = ProjectSessionsIndex()


class MessageItem(_Base):
    """``sk = MSG#{message_id}``: every message of the session, kept forever.

    ``context`` (assistant messages) is the manifest of what the LLM was given for that
    turn: block names, token counts and references (hot-memory version, report weeks,
    message ids) from which the context endpoint rebuilds the text.
    """

    class Meta(_Base.Meta):
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


class FeedbackItem(_Base):
    """``sk = FEEDBACK#{message_id}#{user_id}``: one user's rating of one assistant message, in the
    message's session partition (a second rating by the same user replaces it)."""

    class Meta(_Base.Meta):
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


class DiagnosisItem(_Base):
    """``sk = DIAG#{diagnosis_id}``: a diagnosis report with the symptoms as they were when it
    was taken (``symptoms_snapshot``: a copy, later turns never change it).

    With a patient, ``patient_pk = {project}#{patient}`` and ``patient_sk =
    DIAG#{created_at}#{diagnosis_id}`` put it in the PatientIndex beside the patient's
    sessions (whose ``patient_sk`` starts with a digit, so the two never mix in a range).
    """

    class Meta(_Base.Meta):
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


class PatientRefsProjectIndex(GlobalSecondaryIndex["PatientRefsItem"]):
    """A project's diagnosis-references items, in the ProjectSessionsIndex under their own
    partition ``PATIENTS#{project}`` / ``{patient_id}`` (never mixed with sessions)."""

    class Meta:
        index_name = "ProjectSessionsIndex"
        projection = AllProjection()

    project_pk = UnicodeAttribute(hash_key=True)
    project_sk = UnicodeAttribute(range_key=True)


class PatientRefsItem(_Base):
    """pk ``{project}#PATIENT#{patient}``, sk ``DIAGREFS``: the references (ids, sessions, times,
    key symptoms) of the patient's newest diagnoses, oldest first (``PatientRefs``).

    Written in the transaction that stores a diagnosis, under ``version``; the chat turn reads
    it with its BatchGetItem on a patient's first turn. ``expires_at`` is no earlier than that of
    any diagnosis it references.
    """

    class Meta(_Base.Meta):
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


# --------------------------------------------------------------- FlowLogTable
class FlowLogItem(_Base):
    """The raw stream: every message verbatim. The chat role may only PUT these."""

    class Meta(_Base.Meta):
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


# --------------------------------------------------------------------- binding
#: Every model, once, under the table it lives on (the keyword names of :func:`bind_tables`).
TABLE_MODELS: dict[str, tuple[type[Model], ...]] = {
    "memory": (
        ProjectItem,
        MemberItem,
        HotMemoryItem,
        HotMemoryRevisionItem,
        WeeklyReportItem,
        ReportRevisionItem,
        YearSummaryItem,
        ActivityItem,
        ReviewQueueItem,
        JobRunItem,
        AlertSentItem,
        AuditItem,
        ErasureItem,
        ReminderItem,
        WebhookItem,
    ),
    "sessions": (SessionItem, MessageItem, DiagnosisItem, FeedbackItem, PatientRefsItem),
    "flow_log": (FlowLogItem,),
}


@dataclass(frozen=True, eq=False)
class TableBinding:
    """One call of :func:`bind_tables`: the table names and region the models point at.

    Compared by identity: a new call is a new binding even with the same names (the endpoint,
    read from the environment when a connection is made, may differ).
    """

    memory: str
    sessions: str
    flow_log: str
    region: str

    def models(self) -> list[tuple[type[Model], str]]:
        """Every model with the table name it is bound to."""
        names = {"memory": self.memory, "sessions": self.sessions, "flow_log": self.flow_log}
        return [(model, names[table]) for table, models in TABLE_MODELS.items() for model in models]


_current: list[TableBinding | None] = [None]


def bind_tables(*, memory_table: str, sessions_table: str, flow_log_table: str) -> TableBinding:
    """Point every model of :data:`TABLE_MODELS` at its table and reset its connection.

    Called once at cold start (and by tests and the local runtime when they switch tables or
    endpoints). The region comes from ``AWS_REGION``; the endpoint from botocore's
    ``AWS_ENDPOINT_URL`` when a model first connects.

    Returns:
        The new binding (also :func:`current_binding` from now on).
    """
    binding = TableBinding(memory=memory_table, sessions=sessions_table, flow_log=flow_log_table, region=_region())
    for model, table_name in binding.models():
        model.Meta.table_name = table_name
        model.Meta.region = binding.region
        model._connection = None
    _current[0] = binding
    return binding


def current_binding() -> TableBinding | None:
    """The binding of the last :func:`bind_tables` call (None before the first)."""
    return _current[0]


__all__ = [
    "TABLE_MODELS",
    "ActivityItem",
    "AlertSentItem",
    "AuditItem",
    "DiagnosisItem",
    "ErasureItem",
    "FeedbackItem",
    "ReminderItem",
    "WebhookItem",
    "FlowLogItem",
    "HotMemoryItem",
    "HotMemoryRevisionItem",
    "JobRunItem",
    "MemberItem",
    "MessageItem",
    "PatientRefsItem",
    "ProjectItem",
    "ReportRevisionItem",
    "ReviewQueueItem",
    "SessionItem",
    "TableBinding",
    "Utf8JSONAttribute",
    "WeeklyReportItem",
    "YearSummaryItem",
    "bind_tables",
    "current_binding",
]
