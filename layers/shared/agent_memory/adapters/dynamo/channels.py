"""A project's WeCom channel record in the MemoryTable: pk ``{project}``, sk ``CHANNEL#wecom``
(port ``WeComChannelStore``). One strongly consistent GetItem to read it (a channel just removed
stops at once), one PutItem / DeleteItem to write it."""

from __future__ import annotations

from pynamodb.exceptions import DeleteError, DoesNotExist

from agent_memory.adapters.dynamo import keys
from agent_memory.adapters.dynamo.access import sdk_errors_as_domain
from agent_memory.adapters.dynamo.fields import item_fields, read_fields
from agent_memory.adapters.dynamo.record_tables import WeComChannelItem
from agent_memory.domain.wecom import WeComChannel

WECOM_SK = keys.channel_sk("wecom")


@sdk_errors_as_domain
class WeComChannelRepository:
    """Implements ``agent_memory.ports.WeComChannelStore``."""

    def get_channel(self, project_id: str) -> WeComChannel | None:
        """The record, or None (one strongly consistent GetItem)."""
        try:
            item = WeComChannelItem.get(project_id, WECOM_SK, consistent_read=True)
        except DoesNotExist:
            return None
        return WeComChannel(**read_fields(item, WeComChannel, project_id=item.pk, agent_id=int(item.agent_id)))

    def put_channel(self, channel: WeComChannel) -> None:
        """Create or replace the record (one PutItem)."""
        WeComChannelItem(channel.project_id, WECOM_SK, **item_fields(channel, WeComChannelItem)).save()

    def delete_channel(self, project_id: str) -> bool:
        """Delete the record on condition that it exists; False when there was none."""
        try:
            WeComChannelItem(project_id, WECOM_SK).delete(condition=WeComChannelItem.sk.exists())
        except DeleteError as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
                return False
            raise
        return True


__all__ = ["WECOM_SK", "WeComChannelRepository"]
