"""The session layer on the DynamoDB tables of template.yaml (moto in-process): the session item's
size as DynamoDB counts it, listings read from the indexes page by page (also of sessions no
container has seen), continuation tokens checked against the listing they were issued for, message
ranges read by key, and a stored report too deep to read. The logic is tested on the in-memory
fakes in ``tests/unit/test_sessions.py``."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import boto3
import pytest

from agent_memory.adapters.dynamo.item_size import DYNAMODB_ITEM_LIMIT_BYTES, dynamodb_item_size
from agent_memory.adapters.dynamo.message_mappers import SESSION_ITEM_BUDGET_BYTES
from agent_memory.adapters.dynamo.session_mappers import UNREADABLE_REPORT_KEY
from agent_memory.adapters.dynamo.sessions import SessionsRepository
from agent_memory.consultation import sessions
from agent_memory.domain.errors import InvalidContinuationToken
from agent_memory.domain.session_models import Diagnosis
from tests.fakes import stored_messages
from tests.unit.sessions_support import (
    CLINIC,
    ScriptedExtractor,
    chat_deps,
    nested,
    say,
    seed_clinic,
    sessions_deps,
    utc,
    write_sessions,
)


@pytest.fixture
def srepo(aws: dict[str, str]) -> SessionsRepository:
    repo = SessionsRepository()
    seed_clinic(repo)
    return repo


def raw_session_item(aws: dict[str, str], session_id: str, project_id: str = CLINIC) -> dict[str, Any]:
    client = boto3.client("dynamodb", region_name=os.environ["AWS_REGION"])
    return client.get_item(TableName=aws["SessionsTable"],
                           Key={"pk": {"S": f"{project_id}#{session_id}"}, "sk": {"S": "SESSION"}})["Item"]


# ------------------------------------------------------- the session item's size in DynamoDB
def test_b14a_session_item_stays_under_400kb_with_many_symptoms_and_long_messages(
    srepo: SessionsRepository, aws: dict[str, str]
) -> None:
    # Given 100 turns (200 messages) of 3,000 Chinese characters, each producing 40 new symptoms
    deps = chat_deps(srepo, extractor=ScriptedExtractor(per_message=40))
    text = ("头痛怕冷" * 750)[:3000]

    # When all of them are sent
    for _ in range(100):
        say(deps, text)

    # Then every turn succeeded, the session item is under budget, facts are capped
    item = raw_session_item(aws, "s1")
    assert dynamodb_item_size(item) <= SESSION_ITEM_BUDGET_BYTES < DYNAMODB_ITEM_LIMIT_BYTES
    session = srepo.get_session(CLINIC, "s1")
    assert session is not None and session.message_count == 200
    from agent_memory.consultation.session_memory import MAX_SYMPTOMS

    assert 0 < len(session.facts["symptoms"]) <= MAX_SYMPTOMS
    assert session.summary  # the dropped turns were summarised, within its byte budget
    from agent_memory.consultation.summary import SUMMARY_BUDGET_BYTES
    from agent_memory.domain.text import utf8_len

    assert utf8_len(session.summary) <= SUMMARY_BUDGET_BYTES


def test_b14a_messages_at_the_size_limit_with_facts_and_diagnoses_stay_under_budget(
    srepo: SessionsRepository, aws: dict[str, str]
) -> None:
    # Given a patient with 30 earlier diagnoses and messages just under the 32 KB limit
    sdeps = sessions_deps(srepo)
    earlier = write_sessions(srepo, "pt-big", 1)[0]
    for i in range(30):
        sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id=earlier, user_id="doc", report={"i": i},
                               diagnosis_id=f"d{i:02d}")
    deps = chat_deps(srepo, extractor=ScriptedExtractor(per_message=60))
    content = "患" * 10_900

    # When 14 such turns are sent in the patient's new session
    for i in range(14):
        say(deps, f"{i:02d}{content}"[:10_900], session_id="big", patient_id="pt-big")

    # Then the session item (window + capped facts + diagnosis refs + summary) stays under budget
    assert dynamodb_item_size(raw_session_item(aws, "big")) < SESSION_ITEM_BUDGET_BYTES
    session = srepo.get_session(CLINIC, "big")
    assert session is not None and session.message_count == 28
    assert len(session.facts["diagnoses"]) == 20


# ------------------------------------------------------------- listings, page by page
def _all_pages(
    repo: SessionsRepository, patient_id: str, limit: int, page_size: int | None = None
) -> tuple[list[str], int]:
    token: str | None = None
    seen: list[str] = []
    pages = 0
    while True:
        page = repo.list_patient_sessions(CLINIC, patient_id, limit=limit, next_token=token, page_size=page_size)
        pages += 1
        seen.extend(s.session_id for s in page.sessions)
        token = page.next_token
        if token is None:
            return seen, pages


def test_b15b_patient_listing_returns_all_80_sessions(srepo: SessionsRepository) -> None:
    # Given patient pt-1 with 80 sessions (and another patient's sessions beside them)
    ids = write_sessions(srepo, "pt-1", 80)
    write_sessions(srepo, "pt-2", 3)
    newest_first = list(reversed(ids))

    # When the listing is read in one page, in pages of 5, and with DynamoDB pages of 5
    one, _ = _all_pages(srepo, "pt-1", limit=100)
    paged, pages = _all_pages(srepo, "pt-1", limit=5)
    small_db_pages, _ = _all_pages(srepo, "pt-1", limit=7, page_size=5)

    # Then each holds all 80, newest first, in the same order, without duplicates
    assert one == newest_first
    assert paged == newest_first and pages == 16
    assert small_db_pages == newest_first
    assert len(set(paged)) == 80


def test_sessions_written_straight_to_dynamodb_are_listed_completely(
    srepo: SessionsRepository, aws: dict[str, str]
) -> None:
    # Given sessions put into DynamoDB by something else (no container ever saw them) ...
    client = boto3.client("dynamodb", region_name=os.environ["AWS_REGION"])
    for i in range(12):
        updated = f"2026-02-{i + 1:02d}T08:00:00.000000Z"
        stamp = f"2026-02-{i + 1:02d}T08:00:00.000000+0000"
        client.put_item(TableName=aws["SessionsTable"], Item={
            "pk": {"S": f"{CLINIC}#raw-{i}"}, "sk": {"S": "SESSION"}, "project_id": {"S": CLINIC},
            "session_id": {"S": f"raw-{i}"}, "patient_id": {"S": "pt-9"}, "type": {"S": "consultation"},
            "created_at": {"S": stamp}, "updated_at": {"S": stamp}, "version": {"N": "1"},
            "message_count": {"N": str(i)}, "diagnosis_count": {"N": "0"},
            "patient_pk": {"S": f"{CLINIC}#pt-9"}, "patient_sk": {"S": f"{updated}#raw-{i}"},
            "project_pk": {"S": CLINIC}, "project_sk": {"S": f"{updated}#raw-{i}"},
        })
    # ... and one the chat has seen (its container cache holds only that one)
    deps = chat_deps(srepo)
    say(deps, "头痛", session_id="chat-seen", patient_id="pt-9")

    # When the patient's sessions are listed in pages of 5
    page = sessions.list_patient_sessions(sessions_deps(srepo), project_id=CLINIC, patient_id="pt-9", limit=5,
                                          next_token=None)
    listed = [s.session_id for s in page.sessions]
    while page.next_token:
        page = sessions.list_patient_sessions(sessions_deps(srepo), project_id=CLINIC, patient_id="pt-9", limit=5,
                                              next_token=page.next_token)
        listed += [s.session_id for s in page.sessions]

    # Then all 13 are listed, newest first, with their counts
    assert listed[0] == "chat-seen"
    assert sorted(listed[1:]) == sorted(f"raw-{i}" for i in range(12))
    assert listed[1:] == [f"raw-{i}" for i in range(11, -1, -1)]


@pytest.mark.parametrize("mutate", ["garbage", "other_patient", "other_project", "diag_key", "extra_key"])
def test_tampered_continuation_token_is_rejected(srepo: SessionsRepository, mutate: str) -> None:
    # Given a genuine token of pt-1's listing
    write_sessions(srepo, "pt-1", 4)
    token = srepo.list_patient_sessions(CLINIC, "pt-1", limit=2).next_token
    assert token is not None
    data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    key = data["k"]
    if mutate == "other_patient":
        key["patient_pk"] = f"{CLINIC}#pt-2"
    elif mutate == "other_project":
        key["pk"] = "other#" + key["pk"].split("#", 1)[1]
    elif mutate == "diag_key":
        key["patient_sk"] = "DIAG#2026-01-01T00:00:00.000000Z#d1"
    elif mutate == "extra_key":
        key["x"] = "y"
    forged = "!!not-base64!!" if mutate == "garbage" else base64.urlsafe_b64encode(
        json.dumps(data).encode()).decode().rstrip("=")

    # When it is used, Then it is refused
    with pytest.raises(InvalidContinuationToken):
        srepo.list_patient_sessions(CLINIC, "pt-1", limit=2, next_token=forged)


# ------------------------------------------------------------------- message ranges
def test_messages_between_reads_the_range_the_window_no_longer_holds(srepo: SessionsRepository) -> None:
    # Given a session with 8 messages
    deps = chat_deps(srepo)
    for i in range(4):
        say(deps, f"第{i}句")
    ids = [m.message_id for m in stored_messages(srepo, CLINIC, "s1")]

    # When the messages strictly between the 2nd and the 7th are read, and the newest 2 before the 5th
    between = srepo.messages_between(CLINIC, "s1", after_id=ids[1], before_id=ids[6])
    newest = srepo.messages_between(CLINIC, "s1", after_id=None, before_id=ids[4], limit=2)

    # Then
    assert [m.message_id for m in between] == ids[2:6]
    assert [m.message_id for m in newest] == ids[2:4]


# -------------------------------------------------------- a stored report too deep to read
def test_a_too_deep_report_stored_earlier_reads_as_a_placeholder_instead_of_failing(srepo: SessionsRepository) -> None:
    # Given a diagnosis stored before reports were checked (straight through the repository)
    sdeps = sessions_deps(srepo)
    say(chat_deps(srepo), "头痛", session_id="legacy", patient_id="pt-l")
    session = srepo.get_session(CLINIC, "legacy")
    assert session is not None
    stored = Diagnosis(project_id=CLINIC, session_id="legacy", diagnosis_id="d-old", patient_id="pt-l",
                       created_at=utc(2026, 3, 10), report=nested(1000))
    srepo.add_diagnosis(stored, session.model_copy(update={"diagnosis_count": 1}), expected_version=session.version)

    # When the session's diagnoses and the diagnosis are read and serialised
    listed = [d.model_dump(mode="json") for d in sessions.list_diagnoses(sdeps, project_id=CLINIC, session_id="legacy")]
    one = sessions.get_diagnosis(sdeps, project_id=CLINIC, session_id="legacy", diagnosis_id="d-old")

    # Then both work, the report replaced by a placeholder saying why
    assert [d["diagnosis_id"] for d in listed] == ["d-old"]
    assert one.model_dump(mode="json")["report"] == {
        UNREADABLE_REPORT_KEY: "the report is nested more than 32 levels deep"}


# ------------------------------------------------------- the window as stored
def _window_messages() -> list[Any]:
    from datetime import UTC, datetime

    from agent_memory.domain.turns import MessageRecord, ToolCall

    at = datetime(2026, 12, 5, 8, 30, tzinfo=UTC)
    return [
        MessageRecord(message_id="m1", role="user", content="孩子咳嗽三天了", at=at, user_id="crc-li",
                      study_role="CRC"),
        MessageRecord(message_id="m2", role="assistant", content="请问有发烧吗？", at=at,
                      tool_calls=[ToolCall(id="t1", name="read_clinical_data", input={"record": "P001"},
                                           result="{}", is_error=True)], truncated=True),
        MessageRecord(message_id="m3", role="user", content="没有", at=at, status="failed",
                      idempotency_hash="h-3", source="transcript"),
    ]


def test_the_session_window_is_stored_without_default_fields_and_reads_back_whole(aws: dict[str, str]) -> None:
    from datetime import UTC, datetime

    from agent_memory.adapters.dynamo.message_mappers import session_from_item, session_to_item
    from agent_memory.domain.turns import SessionState

    # Given a session whose window holds messages with default and non-default fields
    now = datetime(2026, 12, 5, 8, 31, tzinfo=UTC)
    session = SessionState(project_id=CLINIC, session_id="w1", created_at=now, updated_at=now,
                           window=_window_messages(), message_count=3)
    # When it is stored and read back
    session_to_item(session).save()
    raw = json.loads(raw_session_item(aws, "w1")["window"]["S"])
    again = session_from_item(type(session_to_item(session)).get(f"{CLINIC}#w1", "SESSION"))
    # Then the stored window leaves out what equals the default (status ok, no tool calls, ...)
    assert raw[0] == {"message_id": "m1", "role": "user", "content": "孩子咳嗽三天了",
                      "at": "2026-12-05T08:30:00Z", "user_id": "crc-li", "study_role": "CRC"}
    assert set(raw[2]) == {"message_id", "role", "content", "at", "status", "idempotency_hash", "source"}
    # and every message reads back equal, non-default fields included
    assert again.window == session.window


def test_a_window_stored_with_every_field_still_reads(aws: dict[str, str]) -> None:
    from agent_memory.adapters.dynamo.conversation_tables import SessionItem
    from agent_memory.adapters.dynamo.message_mappers import session_from_item

    # Given a session item written before the window left out default fields
    client = boto3.client("dynamodb", region_name=os.environ["AWS_REGION"])
    full = [json.loads(m.model_dump_json()) for m in _window_messages()]
    assert "truncated" in full[0] and full[0]["tool_calls"] == []
    client.put_item(TableName=aws["SessionsTable"], Item={
        "pk": {"S": f"{CLINIC}#old"}, "sk": {"S": "SESSION"}, "project_id": {"S": CLINIC},
        "session_id": {"S": "old"}, "created_at": {"S": "2026-12-05T08:31:00.000000+0000"},
        "updated_at": {"S": "2026-12-05T08:31:00.000000+0000"}, "message_count": {"N": "3"},
        "diagnosis_count": {"N": "0"}, "type": {"S": "research"},
        "window": {"S": json.dumps(full, ensure_ascii=False)},
    })
    # When it is read, Then its messages are the same
    assert session_from_item(SessionItem.get(f"{CLINIC}#old", "SESSION")).window == _window_messages()
