"""Session retention on the template's tables (moto in-process): with ``SESSION_RETENTION_DAYS``
every sessions-table item a turn writes carries ``expires_at`` (the table's TTL attribute) that
many days after the write; with 0 none does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from agent_memory.adapters.dynamo.sessions import SessionsRepository
from agent_memory.conversation.append import Append, append_messages
from agent_memory.domain.models import Project
from agent_memory.domain.session_models import Diagnosis
from agent_memory.domain.turns import MessageRecord, SessionState

NOW = datetime(2026, 3, 10, 8, 0, tzinfo=UTC)


def _items(table: str) -> list[dict[str, Any]]:
    return boto3.client("dynamodb").scan(TableName=table)["Items"]


@pytest.mark.parametrize("days", [30, 0])
def test_turn_and_diagnosis_items_expire_after_the_retention(aws: dict[str, str], days: int) -> None:
    # Given a repository with the retention in days,
    repo = SessionsRepository(session_retention_days=days)
    repo.projects.put_project(Project(project_id="p1", name="p1", time_zone="UTC", created_at=NOW - timedelta(days=1)))
    session = SessionState(project_id="p1", session_id="s1", patient_id="pt1", created_at=NOW, updated_at=NOW,
                           version=0)
    message = MessageRecord(message_id="m1773129600000abcd0001", role="user", content="hello", at=NOW, user_id="u")
    # when a turn and a diagnosis are written,
    written = append_messages(repo, session, Append(new=[message], flow=[message]), time_zone="UTC",
                              now=lambda: NOW, keep_user_turns=12, flow_log_retention_days=0).written
    repo.add_diagnosis(Diagnosis(project_id="p1", session_id="s1", diagnosis_id="d1", patient_id="pt1",
                                 created_at=NOW, report={"r": 1}), written, expected_version=written.version)
    # then each sessions-table item expires `days` after its write (none without a retention)
    items = _items(aws["SessionsTable"])
    assert {i["sk"]["S"] for i in items} == {"SESSION", "MSG#m1773129600000abcd0001", "DIAG#d1"}
    expected = str(int((NOW + timedelta(days=days)).timestamp()))
    assert [i.get("expires_at", {}).get("N") for i in items] == [expected if days else None] * 3
