"""The export's reads (port ``ExportReader``): every item of a project as plain JSON values, table by
table (docs/architecture.md, "Data governance"). Low-level Queries, every page; nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import Binary, TypeDeserializer

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import query_items, sdk_errors_as_domain
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem, SessionItem
from agent_memory.adapters.dynamo.tables import ProjectItem

_DESERIALIZER = TypeDeserializer()


def project_session_ids(project_id: str) -> list[str]:
    """Every session id of the project (ProjectSessionsIndex, every page)."""
    return [raw["session_id"]["S"] for raw in query_items(SessionItem.Meta.table_name, {
        "IndexName": "ProjectSessionsIndex", "KeyConditionExpression": "project_pk = :p",
        "ExpressionAttributeValues": {":p": {"S": project_id}}, "ProjectionExpression": "session_id",
    })]


@sdk_errors_as_domain
class ExportRepository:
    """Reads of a project's export (module docstring)."""

    def memory_items(self, project_id: str) -> Iterator[dict[str, Any]]:
        """Every item of the project's MemoryTable partition as plain JSON values (Query, every page)."""
        yield from _plain_all(ProjectItem.Meta.table_name, {
            "KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": project_id}},
        })

    def project_session_ids(self, project_id: str) -> list[str]:
        """Every session id of the project (:func:`project_session_ids`)."""
        return project_session_ids(project_id)

    def session_items(self, project_id: str, session_id: str) -> Iterator[dict[str, Any]]:
        """Every item of a session's partition as plain JSON values (session, messages, diagnoses)."""
        yield from _plain_all(SessionItem.Meta.table_name, {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.session_pk(project_id, session_id)}},
        })

    def flow_log_items(self, project_id: str, utc_days: Iterable[str]) -> Iterator[dict[str, Any]]:
        """Every flow-log item of the project on the given UTC days as plain JSON values (one
        Query per day)."""
        for day in sorted(set(utc_days)):
            yield from _plain_all(FlowLogItem.Meta.table_name, {
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": f"{project_id}#{day}"}},
            })


def _plain(value: Any) -> Any:
    """A deserialised DynamoDB value as JSON: integral numbers as int, others as float, sets as
    sorted lists."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, Binary):
        return bytes(value.value).hex()
    return value


def _plain_all(table: str, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for raw in query_items(table, request):
        yield {name: _plain(_DESERIALIZER.deserialize(value)) for name, value in raw.items()}


__all__ = ["ExportRepository", "project_session_ids"]
