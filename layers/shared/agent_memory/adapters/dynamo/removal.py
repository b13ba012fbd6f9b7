"""The project removal's store (port ``RemovalStore``; docs/architecture.md, "Data governance"): the
removal record, the project's size, and the deletes of its partition, flow-log days and reminders.

The removal record lives in the MemoryTable's platform partition (``_platform`` /
``REMOVED#{project}#{time}``), outside the removed project's partition, so it outlives the project.
The sessions of the project go through the erasure's path (``ErasureStore``) and the patients'
diagnosis references items through :mod:`.patient_refs_upkeep`.
"""

from __future__ import annotations

from datetime import date

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import connection, delete_keys, query_items, query_pages, sdk_errors_as_domain
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem, SessionItem
from agent_memory.adapters.dynamo.erasure import session_size
from agent_memory.adapters.dynamo.export import project_session_ids
from agent_memory.adapters.dynamo.reminders import ReminderRepository
from agent_memory.adapters.dynamo.tables import ProjectItem
from agent_memory.domain.governance import PLATFORM_PK, RemovalRecord
from agent_memory.domain.reminders import Reminder

#: Sort-key prefix of a removal record in the platform partition: ``REMOVED#{project}#{time}``.
_REMOVED_PREFIX = "REMOVED#"


@sdk_errors_as_domain
class RemovalRepository:
    """The removal record and the removal's reads and deletes (module docstring).

    Args:
        reminders: the reminder items (``ReminderRepository`` by default).
    """

    def __init__(self, reminders: ReminderRepository | None = None) -> None:
        self.reminders = reminders or ReminderRepository()

    # ------------------------------------------------------------------ the removal record
    def get_removal(self, project_id: str) -> RemovalRecord | None:
        """The latest removal record of the project (platform partition, strongly consistent) or None."""
        page = connection().dispatch("Query", {
            "TableName": ProjectItem.Meta.table_name,
            "KeyConditionExpression": "pk = :pk AND begins_with(sk, :s)",
            "ExpressionAttributeValues": {":pk": {"S": PLATFORM_PK}, ":s": {"S": f"{_REMOVED_PREFIX}{project_id}#"}},
            "ScanIndexForward": False, "Limit": 1, "ConsistentRead": True,
        })
        items = page.get("Items") or []
        return RemovalRecord.model_validate_json(items[0]["record"]["S"]) if items else None

    def save_removal(self, record: RemovalRecord) -> None:
        """Write (or overwrite with its progress) the removal record ``REMOVED#{project}#{requested time}``."""
        connection().dispatch("PutItem", {"TableName": ProjectItem.Meta.table_name, "Item": {
            "pk": {"S": PLATFORM_PK},
            "sk": {"S": f"{_REMOVED_PREFIX}{record.project_id}#{keys.sort_time(record.requested_at)}"},
            "record": {"S": record.model_dump_json()},
        }})

    # ------------------------------------------------------------------ what the project holds
    def project_session_ids(self, project_id: str) -> list[str]:
        """Every session id of the project (ProjectSessionsIndex, every page)."""
        return project_session_ids(project_id)

    def project_size(self, project_id: str, *, stop_after: int) -> int:
        """Items of the project: its MemoryTable partition (Query COUNT), its patients' diagnosis
        references items (Query COUNT) plus each session's counters; stops counting once above
        ``stop_after``."""
        total = _count(ProjectItem.Meta.table_name, {
            "KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": project_id}},
        })
        total += _count(SessionItem.Meta.table_name, {
            "IndexName": "ProjectSessionsIndex", "KeyConditionExpression": "project_pk = :p",
            "ExpressionAttributeValues": {":p": {"S": keys.patient_refs_listing(project_id)}},
        })
        for session_id in project_session_ids(project_id):
            if total > stop_after:
                break
            total += session_size(project_id, session_id) or 1
        return total

    def project_reminders(self, project_id: str) -> list[Reminder]:
        """Every reminder of the project (any status), for deleting their schedules."""
        return self.reminders.list_reminders(project_id)

    # ------------------------------------------------------------------ deletes
    def delete_project_item(self, project_id: str) -> int:
        """Delete the ``PROJECT`` item (the project becomes unknown); 1 if it existed."""
        old = connection().dispatch("DeleteItem", {
            "TableName": ProjectItem.Meta.table_name,
            "Key": {"pk": {"S": project_id}, "sk": {"S": keys.PROJECT_SK}}, "ReturnValues": "ALL_OLD",
        })
        return 1 if old.get("Attributes") else 0

    def delete_flow_log_day(self, project_id: str, day: date) -> int:
        """Delete every flow-log item of the project on UTC ``day``; how many."""
        item_keys = [{"pk": raw["pk"], "sk": raw["sk"]} for raw in query_items(FlowLogItem.Meta.table_name, {
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.flow_log_pk(project_id, day)}},
            "ProjectionExpression": "pk, sk",
        })]
        return delete_keys(FlowLogItem.Meta.table_name, item_keys) if item_keys else 0

    def delete_memory_batch(self, project_id: str, *, limit: int) -> int:
        """Delete up to ``limit`` items of the project's MemoryTable partition; how many (0: none left)."""
        page = connection().dispatch("Query", {
            "TableName": ProjectItem.Meta.table_name, "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": project_id}}, "ProjectionExpression": "pk, sk",
            "Limit": limit, "ConsistentRead": True,
        })
        item_keys = [{"pk": raw["pk"], "sk": raw["sk"]} for raw in page.get("Items", [])]
        return delete_keys(ProjectItem.Meta.table_name, item_keys) if item_keys else 0


def _count(table: str, request: dict[str, object]) -> int:
    """How many items a Query of ``table`` matches (``Select: COUNT``, every page)."""
    return sum(int(page.get("Count", 0)) for page in query_pages(table, {**request, "Select": "COUNT"}))


__all__ = ["RemovalRepository"]
