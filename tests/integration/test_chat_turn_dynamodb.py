"""The chat turn on the DynamoDB tables of template.yaml (moto in-process): the items one turn
writes and their keys, the session item's size as DynamoDB counts it, and the history Query read
page by page. The turn's logic is tested on the in-memory fakes in ``tests/unit/test_chat_turn.py``."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from agent_memory.adapters.dynamo.item_size import DYNAMODB_ITEM_LIMIT_BYTES, dynamodb_item_size
from agent_memory.adapters.dynamo.message_mappers import SESSION_ITEM_BUDGET_BYTES
from agent_memory.adapters.dynamo.sessions import SessionsRepository
from agent_memory.chat.turn import ChatConfig
from tests.fakes import stored_messages
from tests.unit.chat_support import (
    deps_with,
    llm_requests,
    seed_60_weeks_of_30kb,
    seed_project,
    seed_two_projects,
    send,
)

TABLES = ("MemoryTable", "SessionsTable", "FlowLogTable")


def scan(aws: dict[str, str], logical_id: str) -> list[dict[str, Any]]:
    """Every raw item of a table."""
    client = boto3.client("dynamodb", region_name=os.environ["AWS_REGION"])
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=aws[logical_id]):
        items.extend(page["Items"])
    return items


def snapshot(aws: dict[str, str]) -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    return {t: {(i["pk"]["S"], i["sk"]["S"]): i for i in scan(aws, t)} for t in TABLES}


def session_item(aws: dict[str, str], project_id: str, session_id: str) -> dict[str, Any]:
    client = boto3.client("dynamodb", region_name=os.environ["AWS_REGION"])
    return client.get_item(TableName=aws["SessionsTable"],
                           Key={"pk": {"S": f"{project_id}#{session_id}"}, "sk": {"S": "SESSION"}})["Item"]


# --------------------------------------------------------------------- what a turn writes
def test_one_turn_writes_exactly_these_items_with_these_keys(repo: Any, aws: dict[str, str]) -> None:
    # Given a seeded project
    seed_project(repo, "p1")
    deps = deps_with(repo)
    before = snapshot(aws)

    # When one turn runs (at 2026-03-10T02:00Z = 10:00 in Asia/Shanghai)
    result = send(deps, "P001 入组了吗？")

    # Then exactly these items were added, and nothing else was changed
    after = snapshot(aws)
    added = {t: set(after[t]) - set(before[t]) for t in TABLES}
    flow = [after["FlowLogTable"][k] for k in added["FlowLogTable"]]
    assert added == {
        "MemoryTable": {("p1", "ACTIVE#2026-03-10")},
        "SessionsTable": {("p1#s1", "SESSION"), ("p1#s1", f"MSG#{result.user_message_id}"),
                          ("p1#s1", f"MSG#{result.message_id}")},
        "FlowLogTable": {(i["pk"]["S"], i["sk"]["S"]) for i in flow},
    }
    assert all(after[t][k] == v for t in before for k, v in before[t].items())
    # and the flow log holds both messages verbatim, in the partition of their UTC date
    assert sorted((i["role"]["S"], i["message_id"]["S"], i["content"]["S"]) for i in flow) == sorted([
        ("user", result.user_message_id, "P001 入组了吗？"), ("assistant", result.message_id, result.reply)])
    assert {i["pk"]["S"] for i in flow} == {"p1#2026-03-10"}


def test_a_later_turn_of_the_same_local_day_rewrites_only_the_session_and_its_messages(
        repo: Any, aws: dict[str, str]) -> None:
    # Given a session whose first turn marked 2026-03-10 (local) and stored that on the session item
    seed_project(repo, "p1")
    deps = deps_with(repo)
    send(deps, "P001 入组了吗？")
    assert session_item(aws, "p1", "s1")["activity_date"] == {"S": "2026-03-10"}
    before = snapshot(aws)

    # When a second turn of that day runs
    result = send(deps, "P002 呢？")

    # Then the activity marker was not written again: only the session and the new messages changed
    after = snapshot(aws)
    changed = {t: {k for k in after[t] if before[t].get(k) != after[t][k]} for t in TABLES}
    assert changed["MemoryTable"] == set()
    assert changed["SessionsTable"] == {("p1#s1", "SESSION"), ("p1#s1", f"MSG#{result.user_message_id}"),
                                        ("p1#s1", f"MSG#{result.message_id}")}
    assert len(changed["FlowLogTable"]) == 2


def test_a_retry_of_an_answered_turn_is_answered_from_the_stored_turn(repo: Any, aws: dict[str, str]) -> None:
    # Given a turn answered under an Idempotency-Key whose HTTP idempotency record never completed
    seed_project(repo, "p1")
    deps = deps_with(repo)
    first = send(deps, "我们为什么暂停了筛选？", idempotency_hash="k-1")
    before = snapshot(aws)

    # When the retry reaches the turn, Then the first answer comes back and no item changes
    assert send(deps, "我们为什么暂停了筛选？", idempotency_hash="k-1") == first
    assert snapshot(aws) == before


# ------------------------------------------- the session item stays under its byte budget
def test_b14a_long_session_stays_under_item_limit(repo: Any, aws: dict[str, str]) -> None:
    # Given a session that receives 100 messages of 3,000 Chinese characters (200 messages)
    seed_project(repo, "p1")
    deps = deps_with(repo)
    base = "患者主诉头痛三天伴恶心呕吐，既往体健，否认药物过敏史。" * 111
    sent = [f"{i:03d}{base}"[:3000] for i in range(100)]
    assert all(len(s) == 3000 for s in sent)

    # When they are sent one turn after another
    results = [send(deps, s) for s in sent]

    # Then every turn succeeded and every message reads back whole, in order
    stored = stored_messages(SessionsRepository(), "p1", "s1")
    assert len(stored) == 200
    assert [m.content for m in stored if m.role == "user"] == sent
    assert [m.message_id for m in stored if m.role == "assistant"] == [r.message_id for r in results]
    # and the session item, measured as DynamoDB counts it, is under 400 KB and its budget
    size = dynamodb_item_size(session_item(aws, "p1", "s1"))
    assert size < SESSION_ITEM_BUDGET_BYTES < DYNAMODB_ITEM_LIMIT_BYTES
    assert repo.get_session("p1", "s1").message_count == 200


def test_b14a_messages_at_the_size_limit_keep_the_session_item_under_budget(repo: Any, aws: dict[str, str]) -> None:
    # Given messages just under the 32 KB message limit, all Chinese (10,900 characters)
    seed_project(repo, "p1")
    deps = deps_with(repo)
    content = "患" * 10_900
    assert len(content.encode("utf-8")) <= ChatConfig().max_message_bytes

    # When 14 of them are sent in one session
    for i in range(14):
        send(deps, f"{i:02d}{content}"[:10_900])

    # Then every turn succeeded and the stored session item stays under its byte budget
    assert len(stored_messages(SessionsRepository(), "p1", "s1")) == 28
    assert dynamodb_item_size(session_item(aws, "p1", "s1")) < SESSION_ITEM_BUDGET_BYTES


# ----------------------------------------------- the history Query is read page by page
@dataclass
class QueryCounter:
    calls: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def queries(monkeypatch: pytest.MonkeyPatch) -> QueryCounter:
    """Counts the Query requests PynamoDB sends (one per page)."""
    from pynamodb.connection.base import Connection

    counter = QueryCounter()
    original = Connection.dispatch

    def dispatch(self: Any, operation_name: str, operation_kwargs: dict[str, Any]) -> Any:
        if operation_name == "Query":
            counter.calls.append(operation_kwargs)
        return original(self, operation_name, operation_kwargs)

    monkeypatch.setattr(Connection, "dispatch", dispatch)
    return counter


def test_b15a_trend_question_loads_exactly_the_50_newest_weeks(repo: Any, queries: QueryCounter) -> None:
    # Given 60 weekly reports of ~30 KB (~1.8 MB)
    newest_first = seed_60_weeks_of_30kb(repo)

    # When the history is loaded with pages of 5
    reports = repo.load_history("p1", limit_weeks=50, page_size=5)

    # Then exactly the 50 newest ISO weeks come back, none missing, newest first
    assert [r.iso_week for r in reports] == newest_first[:50]
    assert all(len(r.summary) == 10_000 for r in reports)
    # and every page was read (10 pages of 5)
    assert len(queries.calls) == 10


def test_b15a_history_load_reads_past_dynamodbs_1_mb_page(repo: Any, queries: QueryCounter) -> None:
    # Given 60 weekly reports of ~30 KB: 50 of them are ~1.5 MB, more than one 1 MB page
    newest_first = seed_60_weeks_of_30kb(repo)

    # When the history is loaded without a page size
    reports = repo.load_history("p1", limit_weeks=50)

    # Then the 50 newest weeks come back, read over more than one page
    assert [r.iso_week for r in reports] == newest_first[:50]
    assert len(queries.calls) >= 2


# ------------------------------------------------- every key starts with the project id
def test_b08_every_table_key_carries_the_project_id(repo: Any, aws: dict[str, str]) -> None:
    # Given turns in P1/s-001 and P2/s-001 for the same patient id
    seed_two_projects(repo)
    deps = deps_with(repo)
    send(deps, "张三 胸痛 3 天", project_id="P1", session_id="s-001", patient_id="pt-1")
    send(deps, "总结 pt-1 的症状", project_id="P2", session_id="s-001", patient_id="pt-1")

    # When every table is read
    tables = snapshot(aws)

    # Then every partition key starts with its project id ...
    assert {pk for pk, _ in tables["MemoryTable"]} == {"P1", "P2"}
    assert {pk for pk, _ in tables["SessionsTable"]} == {"P1#s-001", "P2#s-001"}
    assert {pk.split("#")[0] for pk, _ in tables["FlowLogTable"]} == {"P1", "P2"}
    # ... and so does the patient index key
    patient_keys = {i["patient_pk"]["S"] for (_, sk), i in tables["SessionsTable"].items() if sk == "SESSION"}
    assert patient_keys == {"P1#pt-1", "P2#pt-1"}


# ------------------------------------ round trips of a history turn at any project age
@dataclass
class DynamoCalls:
    calls: list[str] = field(default_factory=list)


@pytest.fixture
def dynamo_calls(monkeypatch: pytest.MonkeyPatch) -> DynamoCalls:
    """Every DynamoDB API call botocore sends (one per round trip, pages included)."""
    from botocore.client import BaseClient

    counter = DynamoCalls()
    original = BaseClient._make_api_call

    def counting(client: Any, operation: str, params: Any) -> Any:
        if client.meta.service_model.service_name == "dynamodb":
            counter.calls.append(operation)
        return original(client, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", counting)
    return counter


def _seed_years_of_history(repo: Any, first_year: int, last_year: int) -> None:
    """Weekly reports of every ISO week of ``first_year``..``last_year`` and 2026-W01..W09 (before T0),
    and the summary of each of those complete years."""
    from datetime import timedelta

    from agent_memory.domain.models import WeeklyReport, YearlySummary
    from tests.unit.chat_support import T0

    seed_project(repo, "p1", weeks=9)
    for year in range(first_year, last_year + 1):
        weeks = 53 if year in (2015, 2020, 2026) else 52
        for w in range(1, weeks + 1):
            repo.projects.put_weekly_report(WeeklyReport(project_id="p1", iso_week=f"{year}-W{w:02d}",
                                                         summary=f"[进度]: {year} 第{w}周入组 3 人。", created_at=T0))
        repo.projects.put_yearly_summary(YearlySummary(
            project_id="p1", year=year, summary=f"{year}年总结：筛选暂停过一次。", created_at=T0 - timedelta(days=60)))


def test_a_history_turn_of_a_three_year_old_project_costs_three_round_trips(
    repo: Any, dynamo_calls: DynamoCalls
) -> None:
    # Given a project with 165 weekly reports (2023-W01 .. 2026-W09) and the summaries of 2023-2025
    _seed_years_of_history(repo, 2023, 2025)
    deps = deps_with(repo)
    send(deps, "你好")  # the session exists: a warm turn
    dynamo_calls.calls.clear()

    # When a history question is asked
    send(deps, "我们为什么暂停了筛选？")

    # Then the turn cost one BatchGetItem, one Query and one TransactWriteItems
    assert sorted(dynamo_calls.calls) == ["BatchGetItem", "Query", "TransactWriteItems"]
    # and the LLM saw the yearly summaries of the years older than the 50 weeks it got
    prompt = "\n".join(b.text for b in llm_requests(deps)[-1].system)
    assert "2023年总结" in prompt and "2024年总结" in prompt


def test_a_project_older_than_the_years_read_with_the_turn_still_gets_every_yearly_summary(
    repo: Any, dynamo_calls: DynamoCalls
) -> None:
    # Given a project with reports and summaries since 2012 (older than the 11 years the turn reads)
    _seed_years_of_history(repo, 2012, 2025)
    deps = deps_with(repo)
    send(deps, "你好")
    dynamo_calls.calls.clear()

    # When a history question is asked
    send(deps, "我们为什么暂停了筛选？")

    # Then one more Query read the older summaries, and the LLM saw the oldest one too
    assert sorted(dynamo_calls.calls) == ["BatchGetItem", "Query", "Query", "TransactWriteItems"]
    prompt = "\n".join(b.text for b in llm_requests(deps)[-1].system)
    assert "2012年总结" in prompt
# ------------------------------------------------------------------- round trips and access
class _Calls:
    """Counts the DynamoDB operations botocore sends while active (by operation name)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def __enter__(self) -> _Calls:
        from botocore.client import BaseClient

        self._orig = BaseClient._make_api_call
        counter = self

        def counting(client: Any, operation_name: str, api_params: Any) -> Any:
            counter.calls[operation_name] = counter.calls.get(operation_name, 0) + 1
            return counter._orig(client, operation_name, api_params)

        BaseClient._make_api_call = counting
        return self

    def __exit__(self, *exc: object) -> None:
        from botocore.client import BaseClient

        BaseClient._make_api_call = self._orig


def _chat_request(deps: Any, content: str, user: str) -> dict[str, Any]:
    """One request to the chat function's event handler (the route guard, then the turn)."""
    import json

    from agent_memory.adapters.dynamo.members import MemberRepository
    from agent_memory.http.routes.chat import ChatFunctionDeps, chat_app
    from infra.local.events import LocalLambdaContext, build_http_api_event

    app = chat_app(ChatFunctionDeps(chat=deps, members=MemberRepository(), idempotency_table="idempotency",
                                    api_gateway_timeout_s=30, response_reserve_s=3))
    event = build_http_api_event(
        "POST", "/v1/projects/p1/sessions/s1/messages", {"content-type": "application/json"}, "",
        json.dumps({"content": content}).encode(), "POST /v1/projects/{project_id}/sessions/{session_id}/messages",
        {"project_id": "p1", "session_id": "s1"}, {"sub": user},
    )
    context: Any = LocalLambdaContext("chat", 60, 1024)
    with _Calls() as counted:
        response: dict[str, Any] = app.resolve(event, context)
    return {"status": response["statusCode"], "calls": counted.calls}


def test_a_members_non_history_request_is_one_batch_read_and_one_transaction(repo: Any, aws: dict[str, str]) -> None:
    # Given a seeded project whose member u1 (a PI) has chatted before
    seed_project(repo, "p1")
    deps = deps_with(repo)
    send(deps, "你好")
    # When u1 asks, through the chat function (guard and turn), a question that needs no history
    answered = _chat_request(deps, "我上次跟你说的那个只要看结果的规矩，你记得吗？", "u1")
    # Then the membership came with the turn's one BatchGetItem: no GetItem, one TransactWriteItems
    assert answered == {"status": 200, "calls": {"BatchGetItem": 1, "TransactWriteItems": 1}}


def test_a_non_members_request_reads_once_and_writes_nothing(repo: Any, aws: dict[str, str]) -> None:
    seed_project(repo, "p1")
    deps = deps_with(repo)
    before = snapshot(aws)
    assert _chat_request(deps, "你好", "u-stranger") == {"status": 403, "calls": {"BatchGetItem": 1}}
    assert snapshot(aws) == before
