"""Reads of single flow-log messages by id (the evidence an admin reads, ``hot_memory.evidence``).

A message id carries the millisecond it was written (``domain.ids.message_time``), and the
flow-log item of a message is keyed by that instant (``{project}#{UTC date}`` /
``{UTC time}#{message_id}``). So each message costs ONE Query of its own date's partition with
``sk BETWEEN`` a window of a few milliseconds around that instant (the id's milliseconds are
truncated, the item's time has microseconds); never a Scan. Feedback events (``source``
feedback) are keyed by the rating's time and never match a message's window and id together.
"""

from __future__ import annotations

from datetime import timedelta

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem
from agent_memory.adapters.dynamo.job_mappers import flow_log_entry_from_item
from agent_memory.domain.ids import message_time
from agent_memory.domain.jobs import FlowLogEntry

#: The window around the id's millisecond a message's flow-log time falls in.
_BEFORE, _AFTER = timedelta(milliseconds=1), timedelta(milliseconds=2)


def flow_log_messages(project_id: str, message_ids: list[str]) -> dict[str, FlowLogEntry]:
    """The kept flow-log messages of ``message_ids`` in ``project_id``, by id (one Query each; an
    id without a time, or not found, is left out)."""
    found: dict[str, FlowLogEntry] = {}
    for message_id in dict.fromkeys(message_ids):
        at = message_time(message_id)
        if at is None:
            continue
        lo, hi = keys.flow_log_sort_key_bound(at - _BEFORE), keys.flow_log_sort_key_bound(at + _AFTER)
        for day in keys.utc_dates_overlapping(at - _BEFORE, at + _AFTER):
            for item in FlowLogItem.query(keys.flow_log_pk(project_id, day), FlowLogItem.sk.between(lo, hi)):
                if item.message_id == message_id and item.source != "feedback":
                    found[message_id] = flow_log_entry_from_item(item)
    return found


__all__ = ["flow_log_messages"]
