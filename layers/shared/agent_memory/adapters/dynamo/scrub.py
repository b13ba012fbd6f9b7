"""The identifier scrub's store (port ``ScrubStore``; docs/architecture.md, "Identifiers").

Where a project's texts are (:data:`TEXT_ATTRIBUTES`): the FlowLogTable partitions
``{project}#{UTC day}`` (``content``); each session's SessionsTable partition (the session item's
window, summary, facts and name; each message's content, tool calls and context manifest; each
diagnosis's report and snapshot; each rating's reason and tags); the project's MemoryTable
partition (hot memory and its revisions, weekly reports and their revisions, yearly summaries,
review items). Read with low-level Queries (raw items, every page).

A rewrite is ONE ``TransactWriteItems``: an UpdateItem of the attribute conditional on its value
as read (and, for a versioned item, on its version, which it increments: a chat turn or a
hot-memory commit that read the old text then fails its own condition and reads again), and an
UpdateItem adding the counts to the run's record ``SCRUB#{run_key}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import CONFLICT_CODES, connection, query_items, sdk_errors_as_domain
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem, SessionItem
from agent_memory.adapters.dynamo.export import project_session_ids
from agent_memory.adapters.dynamo.projects import ProjectRepository
from agent_memory.adapters.dynamo.tables import ProjectItem
from agent_memory.domain.models import Project
from agent_memory.domain.scrub import ScrubRecord, StoredText, TextArea

#: Sort-key prefix of the scrub runs' records in the project's MemoryTable partition.
SCRUB_PREFIX = "SCRUB#"

#: (table, sort-key prefix or exact key, area, text attributes, versioned): every stored text.
TEXT_ATTRIBUTES: tuple[tuple[str, str, TextArea, tuple[str, ...], bool], ...] = (
    ("flow_log", "", "flow_log", ("content",), False),
    ("sessions", keys.SESSION_SK, "session", ("window", "summary", "facts", "name"), True),
    ("sessions", keys.MESSAGE_PREFIX, "message", ("content", "tool_calls", "context"), False),
    ("sessions", keys.DIAGNOSIS_PREFIX, "diagnosis", ("report", "symptoms_snapshot"), False),
    ("sessions", "FEEDBACK#", "feedback", ("reason", "tags"), False),
    ("memory", keys.HOT_SK, "hot_memory", ("lines",), True),
    ("memory", keys.HOT_REVISION_PREFIX, "hot_memory_revision", ("lines",), False),
    ("memory", keys.REPORT_PREFIX, "weekly_report", ("summary",), False),
    ("memory", "REPORTREV#", "report_revision", ("summary",), False),
    ("memory", keys.YEAR_PREFIX, "yearly_summary", ("summary",), False),
    ("memory", keys.REVIEW_PREFIX, "review_item", ("text", "detail"), False),
)


def scrub_sk(run_key: str) -> str:
    """``SCRUB#{run_key}``: the audit record of one scrub run."""
    return f"{SCRUB_PREFIX}{run_key}"


def _table(table: str) -> str:
    return {"memory": ProjectItem, "sessions": SessionItem, "flow_log": FlowLogItem}[table].Meta.table_name


def _spec(table: str, sk: str) -> tuple[TextArea, tuple[str, ...], bool] | None:
    for spec_table, prefix, area, attributes, versioned in TEXT_ATTRIBUTES:
        if spec_table == table and (sk == prefix or (prefix.endswith("#") and sk.startswith(prefix)) or not prefix):
            return area, attributes, versioned
    return None


def _plain(raw: dict[str, Any]) -> Any:
    """A raw string or list-of-strings attribute as Python (None: another type)."""
    if "S" in raw:
        return raw["S"]
    if "L" in raw and all("S" in v for v in raw["L"]):
        return [v["S"] for v in raw["L"]]
    return None


def _raw(value: Any) -> dict[str, Any]:
    return {"L": [{"S": v} for v in value]} if isinstance(value, list) else {"S": str(value)}


def _texts(table: str, raw: dict[str, Any]) -> Iterator[StoredText]:
    """The text attributes of one raw item (none when its kind holds no text)."""
    key = {"pk": raw["pk"]["S"], "sk": raw["sk"]["S"]}
    spec = _spec(table, key["sk"])
    if spec is None:
        return
    area, attributes, versioned = spec
    version = int(raw["version"]["N"]) if versioned and "version" in raw else None
    for attribute in attributes:
        value = _plain(raw[attribute]) if attribute in raw else None
        if value:
            yield StoredText(area=area, table=table, key=key, attribute=attribute, value=value, version=version)


def _record(raw: dict[str, Any]) -> ScrubRecord:
    def counts(name: str) -> dict[str, int]:
        return {k: int(v["N"]) for k, v in sorted(raw.get(name, {}).get("M", {}).items())}

    return ScrubRecord(
        project_id=raw["pk"]["S"], run_key=raw["run_key"]["S"], actor=raw["actor"]["S"],
        requested_at=datetime.fromisoformat(raw["requested_at"]["S"]), status=raw["status"]["S"],
        finished_at=datetime.fromisoformat(raw["finished_at"]["S"]) if "finished_at" in raw else None,
        withheld=counts("withheld"), items=counts("items"),
    )


@sdk_errors_as_domain
class ScrubRepository:
    """The scrub's reads and conditional rewrites (module docstring)."""

    def get_project(self, project_id: str) -> Project:
        """The project record (its creation day bounds the flow-log days). Raises ProjectNotFound."""
        return ProjectRepository().get_project(project_id)

    def get_scrub(self, project_id: str, run_key: str) -> ScrubRecord | None:
        """The run's record (strongly consistent), or None."""
        raw = connection().dispatch("GetItem", {
            "TableName": _table("memory"), "ConsistentRead": True,
            "Key": {"pk": {"S": project_id}, "sk": {"S": scrub_sk(run_key)}},
        }).get("Item")
        return _record(raw) if raw else None

    def start_scrub(self, record: ScrubRecord) -> ScrubRecord:
        """Store ``record`` (counts empty) unless its run has one; return the stored one."""
        item = {
            "pk": {"S": record.project_id}, "sk": {"S": scrub_sk(record.run_key)}, "run_key": {"S": record.run_key},
            "actor": {"S": record.actor}, "requested_at": {"S": record.requested_at.isoformat()},
            "status": {"S": record.status}, "withheld": {"M": {}}, "items": {"M": {}},
        }
        try:
            connection().dispatch("PutItem", {"TableName": _table("memory"), "Item": item,
                                              "ConditionExpression": "attribute_not_exists(sk)"})
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
        stored = self.get_scrub(record.project_id, record.run_key)
        return stored or record

    def finish_scrub(self, record: ScrubRecord, *, at: datetime) -> ScrubRecord:
        """Mark the run done; returns the record as stored (its counts summed over every try)."""
        connection().dispatch("UpdateItem", {
            "TableName": _table("memory"),
            "Key": {"pk": {"S": record.project_id}, "sk": {"S": scrub_sk(record.run_key)}},
            "UpdateExpression": "SET #s = :done, finished_at = :at",
            "ExpressionAttributeNames": {"#s": "status"},
            "ExpressionAttributeValues": {":done": {"S": "done"}, ":at": {"S": at.isoformat()}},
        })
        return self.get_scrub(record.project_id, record.run_key) or record

    def stored_texts(self, project_id: str, *, since: date, until: date) -> Iterator[StoredText]:
        """Every text attribute of the project (see the module docstring): the flow log of each
        UTC day ``since`` .. ``until`` (one Query each), each session's partition, the MemoryTable
        partition."""
        day = since
        while day <= until:
            for raw in query_items(_table("flow_log"), _partition(keys.flow_log_pk(project_id, day))):
                yield from _texts("flow_log", raw)
            day += timedelta(days=1)
        for session_id in sorted(project_session_ids(project_id)):
            for raw in query_items(_table("sessions"), _partition(keys.session_pk(project_id, session_id))):
                yield from _texts("sessions", raw)
        for raw in query_items(_table("memory"), _partition(project_id)):
            yield from _texts("memory", raw)

    def reread(self, text: StoredText) -> StoredText | None:
        """The attribute as stored now (strongly consistent GetItem); None when the item is gone."""
        raw = connection().dispatch("GetItem", {
            "TableName": _table(text.table), "ConsistentRead": True,
            "Key": {"pk": {"S": text.key["pk"]}, "sk": {"S": text.key["sk"]}},
        }).get("Item")
        if not raw:
            return None
        return next((t for t in _texts(text.table, raw) if t.attribute == text.attribute), None)

    def rewrite(self, record: ScrubRecord, text: StoredText, value: Any, withheld: dict[str, int]) -> bool:
        """``value`` over ``text`` and the counts on the record in ONE transaction (module
        docstring); False when the attribute (or the item's version) changed since it was read."""
        try:
            connection().dispatch("TransactWriteItems", {"TransactItems": [
                {"Update": _rewrite_text(text, value)}, {"Update": _add_counts(record, text.area, withheld)},
            ]})
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            if any(r.get("Code") in CONFLICT_CODES for r in reasons):
                return False
            raise
        return True


def _partition(pk: str) -> dict[str, Any]:
    return {"KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ConsistentRead": True}


def _rewrite_text(text: StoredText, value: Any) -> dict[str, Any]:
    expression, condition = "SET #a = :new", "#a = :old"
    names = {"#a": text.attribute}
    values: dict[str, Any] = {":new": _raw(value), ":old": _raw(text.value)}
    if text.version is not None:
        expression, condition = expression + ", #v = #v + :one", condition + " AND #v = :version"
        names["#v"] = "version"
        values.update({":one": {"N": "1"}, ":version": {"N": str(text.version)}})
    return {
        "TableName": _table(text.table), "Key": {"pk": {"S": text.key["pk"]}, "sk": {"S": text.key["sk"]}},
        "UpdateExpression": expression, "ConditionExpression": condition,
        "ExpressionAttributeNames": names, "ExpressionAttributeValues": values,
    }


def _add_counts(record: ScrubRecord, area: str, withheld: dict[str, int]) -> dict[str, Any]:
    names = {"#w": "withheld", "#i": "items", "#area": area}
    values: dict[str, Any] = {":zero": {"N": "0"}, ":one": {"N": "1"}}
    sets = ["#i.#area = if_not_exists(#i.#area, :zero) + :one"]
    for n, (kind, count) in enumerate(sorted(withheld.items())):
        names[f"#k{n}"] = kind
        values[f":n{n}"] = {"N": str(count)}
        sets.append(f"#w.#k{n} = if_not_exists(#w.#k{n}, :zero) + :n{n}")
    return {
        "TableName": _table("memory"),
        "Key": {"pk": {"S": record.project_id}, "sk": {"S": scrub_sk(record.run_key)}},
        "UpdateExpression": "SET " + ", ".join(sets), "ConditionExpression": "attribute_exists(sk)",
        "ExpressionAttributeNames": names, "ExpressionAttributeValues": values,
    }


__all__ = ["SCRUB_PREFIX", "TEXT_ATTRIBUTES", "ScrubRepository", "scrub_sk"]
