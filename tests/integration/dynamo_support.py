"""Raw DynamoDB writes of the integration tests: flow-log messages and activity markers keyed as
the chat turn writes them (for jobs that read what chat wrote)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem
from agent_memory.adapters.dynamo.keys import flow_log_keys
from agent_memory.adapters.dynamo.tables import ActivityItem


def mark_active(project_id: str, local_day: str) -> None:
    """The project's activity marker of one local day."""
    ActivityItem(project_id, f"ACTIVE#{local_day}", activity_pk=f"ACTIVE#{local_day}", activity_sk=project_id,
                 last_at=datetime(2026, 3, 10, tzinfo=UTC)).save()


def say(project_id: str, message_id: str, content: str, at: datetime, role: str = "user",
        study_role: str | None = "PI") -> None:
    """A flow-log message and its activity marker (Asia/Shanghai day), keyed as the chat turn writes them
    (a user message with the speaker's study role, by default the PI's)."""
    pk, sk = flow_log_keys(project_id, at, message_id)
    FlowLogItem(pk, sk, project_id=project_id, session_id="s1", message_id=message_id, role=role,
                content=content, user_id="u-pi" if role == "user" else None,
                study_role=study_role if role == "user" else None, at=at).save()
    mark_active(project_id, at.astimezone(ZoneInfo("Asia/Shanghai")).date().isoformat())
