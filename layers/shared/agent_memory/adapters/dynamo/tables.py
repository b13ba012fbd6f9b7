"""PynamoDB models of the three tables declared in ``template.yaml``, and their binding.

The key layout is in :mod:`agent_memory.adapters.dynamo.keys`. This module holds the project's
partition every store reads (project, members, hot memory and its revisions, weekly reports,
yearly summaries, activity markers); :mod:`.conversation_tables` (SessionsTable, FlowLogTable)
and :mod:`.record_tables` (the MemoryTable's records of the admin, jobs, governance and
reminders) hold the rest, so that a function imports only the models it uses (the API
function's cold start: docs/architecture.md, "Cold start").

Every model is registered once (:func:`register`) under the table it lives on, in
:data:`TABLE_MODELS`; :func:`bind_tables` points every registered model at the table names of
the environment (``!Ref`` in the template) at cold start, and a model registered after that (its
module imported later) is bound as it registers. There is no other way a model gets a table.
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
    UnicodeAttribute,
    UTCDateTimeAttribute,
    VersionAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex, KeysOnlyProjection
from pynamodb.models import Model

from agent_memory.adapters.dynamo.pynamodb_internals import forget_connection


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


class BaseItem(Model):
    """Every item: ``pk`` / ``sk``; each model has its own ``Meta`` (its table is bound by
    :func:`bind_tables`)."""

    class Meta:
        table_name = "unbound"
        region = _region()

    pk = UnicodeAttribute(hash_key=True)
    sk = UnicodeAttribute(range_key=True)


# ---------------------------------------------------------------- MemoryTable
class ProjectItem(BaseItem):
    """``sk = PROJECT``: the tenant record (its absence means 404 unknown project)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    name = UnicodeAttribute()
    time_zone = UnicodeAttribute()
    kind = UnicodeAttribute(default="iit")
    created_at = UTCDateTimeAttribute()
    #: ``ClinicalDataSource`` as JSON (source, api_url, token_secret name); absent = none.
    clinical_data = Utf8JSONAttribute(null=True)
    #: ``Project.identifiers`` (``redact`` / ``reject``); absent (items written before it) = redact.
    identifiers = UnicodeAttribute(null=True)
    #: Since when every diagnosis of the project is referenced by its patient's
    #: :class:`PatientRefsItem` (set at creation, or by the backfill of a project that had
    #: diagnoses before those items existed). Absent: a patient without the item may still have
    #: diagnoses (the reader queries them). Kept by every write of the project record.
    patient_refs_since = UTCDateTimeAttribute(null=True)


class MemberIndex(GlobalSecondaryIndex["MemberItem"]):
    """A user's memberships across projects: ``member_pk = USER#{user_id}``, ``member_sk = project``
    (only member items carry these attributes: a sparse index; ``GET /v1/me`` reads it)."""

    class Meta:
        index_name = "MemberIndex"
        projection = AllProjection()

    member_pk = UnicodeAttribute(hash_key=True)
    member_sk = UnicodeAttribute(range_key=True)


class MemberItem(BaseItem):
    """``sk = MEMBER#{user_id}``: one member of the project (access role, study role, name), in the
    :class:`MemberIndex` under the user (``member_pk`` / ``member_sk``, written with the item)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    user_id = UnicodeAttribute()
    project_role = UnicodeAttribute()
    study_role = UnicodeAttribute()
    display_name = UnicodeAttribute()
    added_at = UTCDateTimeAttribute()
    added_by = UnicodeAttribute()
    wecom_userid = UnicodeAttribute(null=True)
    member_pk = UnicodeAttribute(null=True)
    member_sk = UnicodeAttribute(null=True)
    member_index = MemberIndex()


class WeComUserItem(BaseItem):
    """``sk = WECOMUSER#{lower-cased WeCom user id}``: the member who has that WeCom user id (the
    inbound WeCom message's sender is looked up here); written with the ``MEMBER#`` item in one
    transaction, so at most one member of a project has a WeCom id."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    user_id = UnicodeAttribute()
    wecom_userid = UnicodeAttribute()


class HotMemoryItem(BaseItem):
    """``sk = HOT``: the current hot memory (structured lines, rendered to Markdown on read)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    version = VersionAttribute()
    lines = Utf8JSONAttribute(default=list)
    updated_at = UTCDateTimeAttribute(null=True)
    updated_by = UnicodeAttribute(null=True)
    #: message ids behind distilled lines an admin removed (``HotMemory.dismissed_evidence``)
    dismissed_evidence = ListAttribute(of=UnicodeAttribute, default=list)
    #: the distilled lines an admin removed (``HotMemory.dismissed_lines``)
    dismissed_lines = Utf8JSONAttribute(default=list)


class HotMemoryRevisionItem(BaseItem):
    """``sk = HOTREV#{version:010d}``: every stored hot-memory version (restorable)."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    revision = NumberAttribute()
    lines = Utf8JSONAttribute(default=list)
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute()
    reason = UnicodeAttribute(null=True)
    tokens = NumberAttribute(default=0)


class WeeklyReportItem(BaseItem):
    """``sk = REPORT#{YYYY-Www}``: one history-book entry."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    iso_week = UnicodeAttribute()
    summary = UnicodeAttribute()
    revision = NumberAttribute(default=1)
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute(default="archiver")
    evidence = ListAttribute(of=UnicodeAttribute, default=list)
    reason = UnicodeAttribute(null=True)  # the correction's reason (a corrected revision)


class ActivityIndex(GlobalSecondaryIndex["ActivityItem"]):
    """Who was active on a local day: ``activity_pk = ACTIVE#{date}``, ``activity_sk = project``."""

    class Meta:
        index_name = "ActivityIndex"
        projection = KeysOnlyProjection()

    activity_pk = UnicodeAttribute(hash_key=True)
    activity_sk = UnicodeAttribute(range_key=True)


class ActivityItem(BaseItem):
    """``sk = ACTIVE#{local date}``: the project's activity marker for one local day."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    activity_pk = UnicodeAttribute()
    activity_sk = UnicodeAttribute()
    #: When a session's first turn of that day last marked it (a session marks a day once).
    last_at = UTCDateTimeAttribute()
    activity_index = ActivityIndex()


class YearSummaryItem(BaseItem):
    """``sk = YEAR#{yyyy}``: yearly summary built from that year's weekly reports."""

    class Meta(BaseItem.Meta):
        table_name = "unbound-memory"

    year = NumberAttribute()
    summary = UnicodeAttribute()
    weeks = ListAttribute(of=UnicodeAttribute, default=list)
    created_at = UTCDateTimeAttribute()
    created_by = UnicodeAttribute(default="pruner")


# --------------------------------------------------------------------- binding
#: Every registered model, once, under the table it lives on (the keyword names of
#: :func:`bind_tables`): this module's from the start, the other modules' once imported.
TABLE_MODELS: dict[str, list[type[Model]]] = {"memory": [], "sessions": [], "flow_log": []}


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

    def table_name(self, table: str) -> str:
        """The name bound to ``table`` (a key of :data:`TABLE_MODELS`)."""
        return {"memory": self.memory, "sessions": self.sessions, "flow_log": self.flow_log}[table]

    def models(self) -> list[tuple[type[Model], str]]:
        """Every model registered so far with the table name it is bound to."""
        return [(model, self.table_name(table)) for table, models in TABLE_MODELS.items() for model in models]


_current: list[TableBinding | None] = [None]


def _bind(model: type[Model], table_name: str, region: str) -> None:
    model.Meta.table_name = table_name
    model.Meta.region = region
    forget_connection(model)


def register(table: str, *models: type[Model]) -> None:
    """List ``models`` under ``table`` (a key of :data:`TABLE_MODELS`); when :func:`bind_tables`
    was called already, bind them to that binding now.

    Raises:
        ValueError: an unknown table, or a model registered already.
    """
    if table not in TABLE_MODELS:
        raise ValueError(f"unknown table {table!r}")
    for model in models:
        if any(model in listed for listed in TABLE_MODELS.values()):
            raise ValueError(f"{model.__name__} is registered already")
        TABLE_MODELS[table].append(model)
        binding = _current[0]
        if binding is not None:
            _bind(model, binding.table_name(table), binding.region)


def bind_tables(*, memory_table: str, sessions_table: str, flow_log_table: str) -> TableBinding:
    """Point every registered model at its table and reset its connection; models registered
    later are bound to the same tables as they register.

    Called once at cold start (and by tests and the local runtime when they switch tables or
    endpoints). The region comes from ``AWS_REGION``; the endpoint from botocore's
    ``AWS_ENDPOINT_URL`` when a model first connects.

    Returns:
        The new binding (also :func:`current_binding` from now on).
    """
    binding = TableBinding(memory=memory_table, sessions=sessions_table, flow_log=flow_log_table, region=_region())
    for model, table_name in binding.models():
        _bind(model, table_name, binding.region)
    _current[0] = binding
    return binding


def current_binding() -> TableBinding | None:
    """The binding of the last :func:`bind_tables` call (None before the first)."""
    return _current[0]


register(
    "memory",
    ProjectItem,
    MemberItem,
    WeComUserItem,
    HotMemoryItem,
    HotMemoryRevisionItem,
    WeeklyReportItem,
    YearSummaryItem,
    ActivityItem,
)

__all__ = [
    "TABLE_MODELS",
    "ActivityItem",
    "BaseItem",
    "HotMemoryItem",
    "HotMemoryRevisionItem",
    "MemberItem",
    "ProjectItem",
    "TableBinding",
    "Utf8JSONAttribute",
    "WeComUserItem",
    "WeeklyReportItem",
    "YearSummaryItem",
    "bind_tables",
    "current_binding",
    "register",
]
