"""PynamoDB models of the four tables declared in ``template.yaml``.

Key layout (every base-table key starts with the project id; case B08):

| table | pk | sk |
|---|---|---|
| MemoryTable | ``{project_id}`` | ``PROJECT`` / ``HOT`` / ``HOTREV#{version:010d}`` / ``REPORT#{YYYY-Www}`` / ``YEAR#{YYYY}`` / ``ACTIVE#{local date}`` |
| SessionsTable | ``{project_id}#{session_id}`` | ``SESSION`` / ``MSG#{message_id}`` / ``DIAG#{diagnosis_id}`` |
| FlowLogTable | ``{project_id}#{UTC date}`` | ``{UTC ISO time}#{message_id}`` |

Table names are bound at cold start by :func:`bind_tables` (they come from the
environment, i.e. from ``!Ref`` in the template).
"""

from __future__ import annotations

import json
import os
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
    a Chinese character that takes 3 in UTF-8, 12 for an emoji), which doubled the stored
    size of windows measured in UTF-8 and pushed a session item over its budget (case B14).
    Reading is unchanged: ``json.loads`` reads both forms.
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


# -------------------------------------------------------------- SessionsTable
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
    status = UnicodeAttribute(default="ok")
    truncated = NumberAttribute(default=0)
    tool_calls = Utf8JSONAttribute(default=list)
    context = Utf8JSONAttribute(null=True)
    reply_to = UnicodeAttribute(null=True)
    idempotency_hash = UnicodeAttribute(null=True)
    source = UnicodeAttribute(default="chat")


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
    patient_index = DiagnosisPatientIndex()


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
    at = UTCDateTimeAttribute()
    status = UnicodeAttribute(default="ok")
    expires_at = TTLAttribute(null=True)


MEMORY_MODELS: tuple[type[Model], ...] = (
    ProjectItem,
    HotMemoryItem,
    HotMemoryRevisionItem,
    WeeklyReportItem,
    ActivityItem,
)
SESSION_MODELS: tuple[type[Model], ...] = (SessionItem, MessageItem, DiagnosisItem)
FLOW_LOG_MODELS: tuple[type[Model], ...] = (FlowLogItem,)


_REGISTRY: dict[str, list[type[Model]]] = {
    "memory": list(MEMORY_MODELS),
    "sessions": list(SESSION_MODELS),
    "flow_log": list(FLOW_LOG_MODELS),
}
_BOUND: dict[str, str] = {}


def _bind(model: type[Model], table_name: str) -> None:
    model.Meta.table_name = table_name
    model.Meta.region = _region()
    model._connection = None


def register_models(table: str, *models: type[Model]) -> None:
    """Register more models living on one of the tables (``memory``, ``sessions``,
    ``flow_log``), e.g. the job and admin items, so that :func:`bind_tables` binds them too
    (and they are bound at once when the tables already are)."""
    _REGISTRY[table].extend(models)
    if table in _BOUND:
        for model in models:
            _bind(model, _BOUND[table])


def bind_tables(*, memory_table: str, sessions_table: str, flow_log_table: str) -> None:
    """Point every registered model at its table (names from the environment) and reset
    their connections.

    Called once at cold start (and by tests that create their own tables or switch between
    moto in-process and the local stack). The region comes from ``AWS_REGION``; the
    endpoint from botocore's ``AWS_ENDPOINT_URL`` (local runtime).
    """
    _BOUND.update(memory=memory_table, sessions=sessions_table, flow_log=flow_log_table)
    for table, models in _REGISTRY.items():
        for model in models:
            _bind(model, _BOUND[table])
