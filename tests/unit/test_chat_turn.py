"""The chat turn end to end against moto: routing of memory layers, what one turn writes,
LLM failures, size limits, pagination, tenancy and concurrent writers
(agent_memory.chat.turn.handle_message; DESIGN "Prompt assembly", "DynamoDB access patterns";
cases B08, B14, B15)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from agent_memory.adapters.clinical.demo import DemoClinicalData
from agent_memory.adapters.dynamo.repository import SESSION_ITEM_BUDGET_BYTES
from agent_memory.adapters.llm.offline import OfflineLLM
from agent_memory.chat.prompt import PromptBudget
from agent_memory.chat.turn import ChatConfig, ChatResult, handle_message
from agent_memory.domain.errors import (
    InvalidInput,
    LLMUnavailable,
    PayloadTooLarge,
    ProjectNotFound,
    VersionConflict,
)
from agent_memory.domain.llm import LLMRequest, LLMResponse
from agent_memory.domain.models import WeeklyReport
from agent_memory.domain.text import DYNAMODB_ITEM_LIMIT_BYTES, dynamodb_item_size
from tests.unit.chat_support import T0, Clock, FailingLLM, RecordingLLM, hot_line, make_deps, seed_project

CLINICAL = {"p1": {"target_enrolment": 60, "subjects": {
    "P001": {"status": "enrolled", "enrolment_date": "2026-02-05", "visits": []},
    "P005": {"status": "enrolled", "enrolment_date": "2026-03-05", "open_queries": 2,
             "visits": [{"visit": "V2", "missing_fields": ["服药日记卡", "ECOG"]}]},
}}}


# ------------------------------------------------------------------------------ helpers
def send(deps: Any, content: str, *, project_id: str = "p1", session_id: str = "s1",
         patient_id: str | None = None, idempotency_hash: str | None = None) -> ChatResult:
    return handle_message(deps, project_id=project_id, session_id=session_id, user_id="u1", content=content,
                          patient_id=patient_id, deadline=None, idempotency_hash=idempotency_hash)


def scan(aws: dict[str, str], logical_id: str) -> list[dict[str, Any]]:
    """Every raw item of a table (tests may read the flow log; the chat code may not)."""
    client = boto3.client("dynamodb", region_name=os.environ["AWS_REGION"])
    items: list[dict[str, Any]] = []
    for page in client.get_paginator("scan").paginate(TableName=aws[logical_id]):
        items.extend(page["Items"])
    return items


def snapshot(aws: dict[str, str]) -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    return {t: {(i["pk"]["S"], i["sk"]["S"]): i for i in scan(aws, t)}
            for t in ("MemoryTable", "SessionsTable", "FlowLogTable")}


def new_keys(before: dict[str, Any], after: dict[str, Any]) -> dict[str, set[tuple[str, str]]]:
    return {t: set(after[t]) - set(before[t]) for t in after}


def system_blocks(request: LLMRequest) -> dict[str, str]:
    return {b.name: b.text for b in request.system}


def request_text(request: LLMRequest) -> str:
    """Everything a request carries to the model, as one string."""
    return "\n".join(b.text for b in request.system) + json.dumps(request.messages, ensure_ascii=False)


def session_item(aws: dict[str, str], project_id: str, session_id: str) -> dict[str, Any]:
    client = boto3.client("dynamodb", region_name=os.environ["AWS_REGION"])
    return client.get_item(TableName=aws["SessionsTable"],
                           Key={"pk": {"S": f"{project_id}#{session_id}"}, "sk": {"S": "SESSION"}})["Item"]


def deps_with(repo: Any, llm: Any = None, **config: Any) -> Any:
    deps = make_deps(repo, llm or RecordingLLM(), **config)
    deps.clinical = DemoClinicalData(CLINICAL)
    return deps


# ----------------------------------------------------------------------- memory routing
def test_data_question_sends_no_history_block(repo: Any) -> None:
    # Given a project with three weekly reports
    seed_project(repo, "p1")
    deps = deps_with(repo)

    # When a current-data question is asked
    result = send(deps, "P001 入组了吗？")

    # Then no request carries a history block, and none was reported
    assert deps.llm.requests
    assert all("history" not in system_blocks(r) for r in deps.llm.requests)
    assert [c.history_weeks for c in result.calls] == [0]
    assert result.calls[0].layers["history"] == 0


def test_data_question_reads_clinical_data_and_answers_with_the_enrolment_date(repo: Any) -> None:
    # Given P001 enrolled on 2026-02-05 in the clinical data
    seed_project(repo, "p1")
    deps = deps_with(repo)

    # When asked whether P001 is enrolled
    result = send(deps, "P001 入组了吗？")

    # Then the answer comes from the read_clinical_data tool
    assert "2026-02-05" in result.reply
    assert result.intents == ["QUERY_DATA"]
    stored = repo.list_messages("p1", "s1")
    assert [(tc.name, tc.input) for tc in stored[1].tool_calls] == [("read_clinical_data", {"subject_id": "P001"})]
    # and the tool result was fed back to the model in the second request
    assert deps.llm.requests[1].messages[-1]["content"][0]["type"] == "tool_result"


def test_history_question_sends_the_history_block(repo: Any) -> None:
    # Given a project with three weekly reports
    seed_project(repo, "p1")
    deps = deps_with(repo)

    # When a question about the project's past is asked
    result = send(deps, "我们为什么暂停了筛选？")

    # Then the request carries the history book with the three weeks
    history = system_blocks(deps.llm.requests[0])["history"]
    assert all(f"## 2026-W0{w}" in history for w in (1, 2, 3))
    assert [c.history_weeks for c in result.calls] == [3]


def test_qc_with_a_history_question_runs_qc_without_history(repo: Any) -> None:
    # Given a project with reports and P005's current data
    seed_project(repo, "p1")
    deps = deps_with(repo)

    # When one message asks for a QC of P005 AND about last month's history
    result = send(deps, "对 P005 做质控，并告诉我上个月为什么调整了随访计划")

    # Then two LLM contexts ran: the QC one with no history block at all (not even empty) ...
    qc = [r for r in deps.llm.requests if r.metadata["intents"] == ["QC_TASK"]]
    hist = [r for r in deps.llm.requests if r.metadata["intents"] == ["QUERY_HISTORY"]]
    assert qc and hist and len(qc) + len(hist) == len(deps.llm.requests)
    for r in qc:
        assert "history" not in system_blocks(r)
        assert "<history_book weeks=" not in request_text(r)
    # (hot memory is in both)
    assert all("严禁在未授权情况下删除数据" in system_blocks(r)["hot_memory"] for r in deps.llm.requests)
    # ... and the history one with it
    assert all("## 2026-W03" in system_blocks(r)["history"] for r in hist)
    # and the response reports both calls
    assert [(c.intents, c.history_weeks) for c in result.calls] == [(["QC_TASK"], 0), (["QUERY_HISTORY"], 3)]
    assert result.calls[0].layers["history"] == 0
    assert "P005 质控：缺失字段 2 个" in result.reply


# --------------------------------------------------------------------- what a turn writes
def test_turn_writes_two_messages_two_flow_log_items_the_session_and_the_activity_marker(
        repo: Any, aws: dict[str, str]) -> None:
    # Given a seeded project
    seed_project(repo, "p1")
    deps = deps_with(repo)
    before = snapshot(aws)

    # When one turn runs (at 2026-03-10T02:00Z = 10:00 in Asia/Shanghai)
    result = send(deps, "P001 入组了吗？")

    # Then exactly these items were added, and nothing else was changed
    after = snapshot(aws)
    flow = [after["FlowLogTable"][k] for k in new_keys(before, after)["FlowLogTable"]]
    assert new_keys(before, after) == {
        "MemoryTable": {("p1", "ACTIVE#2026-03-10")},
        "SessionsTable": {("p1#s1", "SESSION"), ("p1#s1", f"MSG#{result.user_message_id}"),
                          ("p1#s1", f"MSG#{result.message_id}")},
        "FlowLogTable": {(i["pk"]["S"], i["sk"]["S"]) for i in flow},
    }
    assert all(after[t][k] == v for t in before for k, v in before[t].items())
    # and the flow log holds both messages verbatim
    assert sorted((i["role"]["S"], i["message_id"]["S"], i["content"]["S"]) for i in flow) == sorted([
        ("user", result.user_message_id, "P001 入组了吗？"), ("assistant", result.message_id, result.reply)])
    assert {i["pk"]["S"] for i in flow} == {"p1#2026-03-10"}


def test_activity_marker_is_the_projects_local_date(repo: Any, aws: dict[str, str]) -> None:
    # Given a message at 2026-03-09T23:30Z, which is 2026-03-10 07:30 in Asia/Shanghai
    seed_project(repo, "p1")
    deps = deps_with(repo)
    deps.now = Clock(datetime(2026, 3, 9, 23, 29, 59, tzinfo=UTC))

    # When the turn runs
    send(deps, "P001 入组了吗？")

    # Then the activity marker is for the local date 2026-03-10, not the UTC date
    markers = [i["sk"]["S"] for i in scan(aws, "MemoryTable") if i["sk"]["S"].startswith("ACTIVE#")]
    assert markers == ["ACTIVE#2026-03-10"]


def test_activity_markers_cover_the_local_day_of_every_message_written(repo: Any, aws: dict[str, str]) -> None:
    # Given a user message at 23:59:59 local time whose reply lands after local midnight
    seed_project(repo, "p1")
    deps = deps_with(repo)
    deps.now = Clock(datetime(2026, 3, 10, 15, 59, 58, tzinfo=UTC))  # user message at 2026-03-10 23:59:59 +08:00

    # When the turn runs
    result = send(deps, "P001 入组了吗？")

    # Then the day of the user message is marked active (the daily jobs for 2026-03-10 find it),
    # and so is the day of the reply
    messages = {m.message_id: m for m in repo.list_messages("p1", "s1")}
    assert messages[result.user_message_id].at == datetime(2026, 3, 10, 15, 59, 59, tzinfo=UTC)
    markers = sorted(i["sk"]["S"] for i in scan(aws, "MemoryTable") if i["sk"]["S"].startswith("ACTIVE#"))
    assert markers == ["ACTIVE#2026-03-10", "ACTIVE#2026-03-11"]


# --------------------------------------------------------------------------- LLM failure
def test_llm_failure_records_the_user_message_once_as_failed(repo: Any, aws: dict[str, str]) -> None:
    # Given an LLM that is overloaded for the next call
    seed_project(repo, "p1")
    deps = deps_with(repo, RecordingLLM(inner=FailingLLM(failures=1)))

    # When a turn runs
    with pytest.raises(LLMUnavailable):
        send(deps, "P001 入组了吗？", idempotency_hash="h-1")

    # Then the user message is stored once, status failed, with no assistant message
    stored = repo.list_messages("p1", "s1")
    assert [(m.role, m.content, m.status, m.idempotency_hash) for m in stored] == [
        ("user", "P001 入组了吗？", "failed", "h-1")]
    # and the flow log has it once
    flow = scan(aws, "FlowLogTable")
    assert [(i["message_id"]["S"], i["role"]["S"], i["status"]["S"]) for i in flow] == [
        (stored[0].message_id, "user", "failed")]
    assert repo.get_session("p1", "s1").message_count == 1


def test_retry_with_the_same_idempotency_key_reuses_the_failed_user_message(repo: Any, aws: dict[str, str]) -> None:
    # Given a turn that failed with Idempotency-Key hash h-1
    seed_project(repo, "p1")
    llm = RecordingLLM(inner=FailingLLM(failures=1))
    deps = deps_with(repo, llm)
    with pytest.raises(LLMUnavailable):
        send(deps, "P001 入组了吗？", idempotency_hash="h-1")
    failed_id = repo.list_messages("p1", "s1")[0].message_id

    # When the client retries with the same key and the LLM answers
    result = send(deps, "P001 入组了吗？", idempotency_hash="h-1")

    # Then the same user message is answered (now ok), plus one assistant message
    assert result.user_message_id == failed_id
    stored = repo.list_messages("p1", "s1")
    assert [(m.message_id, m.role, m.status) for m in stored] == [
        (failed_id, "user", "ok"), (result.message_id, "assistant", "ok")]
    # and the flow log still has the user message once, and the reply once
    flow = sorted((i["role"]["S"], i["message_id"]["S"]) for i in scan(aws, "FlowLogTable"))
    assert flow == [("assistant", result.message_id), ("user", failed_id)]
    # and the retried question is sent once, not twice
    assert request_text(llm.requests[-1]).count("P001 入组了吗？") == 1
    assert repo.get_session("p1", "s1").message_count == 2


# ------------------------------------------------------------------------- input limits
def test_b14c_oversize_message_rejected_and_nothing_written(repo: Any, aws: dict[str, str]) -> None:
    # Given a message of 140,000 Chinese characters (420,000 UTF-8 bytes)
    seed_project(repo, "p1")
    deps = deps_with(repo)
    before = snapshot(aws)

    # When it is sent
    with pytest.raises(PayloadTooLarge) as err:
        send(deps, "患" * 140_000)

    # Then it is rejected with the limit and the actual size in bytes
    assert err.value.limit_bytes == 32_768
    assert err.value.actual_bytes == 420_000
    assert "420000" in err.value.reason and "32768" in err.value.reason
    # and nothing was written anywhere, and the LLM was not called
    assert snapshot(aws) == before
    assert deps.llm.requests == []


@pytest.mark.parametrize("content", ["", "   ", "\n\t", "\u3000\u3000"])
def test_empty_message_rejected_and_nothing_written(repo: Any, aws: dict[str, str], content: str) -> None:
    # Given a seeded project
    seed_project(repo, "p1")
    deps = deps_with(repo)
    before = snapshot(aws)

    # When an empty or whitespace-only message (ASCII or full-width spaces) is sent
    with pytest.raises(InvalidInput):
        send(deps, content)

    # Then nothing was written
    assert snapshot(aws) == before


def test_unknown_project_rejected_and_nothing_written(repo: Any, aws: dict[str, str]) -> None:
    # Given a seeded project p1 only
    seed_project(repo, "p1")
    deps = deps_with(repo)
    before = snapshot(aws)

    # When a message is sent to project nope
    with pytest.raises(ProjectNotFound):
        send(deps, "P001 入组了吗？", project_id="nope")

    # Then nothing was written and the LLM was not called
    assert snapshot(aws) == before
    assert deps.llm.requests == []


# ----------------------------------------------------------------------- B14 item sizes
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
    stored = repo.list_messages("p1", "s1")
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
    assert len(repo.list_messages("p1", "s1")) == 28
    assert dynamodb_item_size(session_item(aws, "p1", "s1")) < SESSION_ITEM_BUDGET_BYTES


# ------------------------------------------------------------------- B15 history paging
def seed_60_weeks_of_30kb(repo: Any) -> list[str]:
    """60 reports of ~30 KB (2025-W01 .. 2026-W08); returns the ISO weeks newest first."""
    seed_project(repo, "p1", weeks=0)
    weeks = [f"2025-W{w:02d}" for w in range(1, 53)] + [f"2026-W{w:02d}" for w in range(1, 9)]
    for n, week in enumerate(weeks):
        lines = [f"[进度] {week} 第{k}项：本周入组 {n % 4} 例，随访按计划进行，数据核查完成。" + "记录" * 100
                 for k in range(50)]
        summary = "\n".join(lines)[:10_000]
        repo.put_weekly_report(WeeklyReport(project_id="p1", iso_week=week, summary=summary,
                                            created_at=T0 - timedelta(days=7 * (60 - n))))
    return list(reversed(weeks))


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


def history_weeks_sent(request: LLMRequest) -> list[str]:
    return [ln[3:] for ln in system_blocks(request)["history"].splitlines() if ln.startswith("## ")]


def test_b15a_trend_question_prompt_keeps_the_newest_weeks_within_history_tokens(repo: Any) -> None:
    # Given 60 reports of ~10,000 tokens each and the default 120,000-token history budget
    newest_first = seed_60_weeks_of_30kb(repo)
    deps = deps_with(repo)

    # When a trend question is asked
    result = send(deps, "回顾过去一年每周的入组趋势")

    # Then the prompt holds the newest weeks that fit (newest kept when trimming) ...
    sent = history_weeks_sent(deps.llm.requests[0])
    assert 0 < len(sent) < 50
    assert sent == list(reversed(newest_first[: len(sent)]))
    assert result.calls[0].layers["history"] <= PromptBudget().history_tokens
    # ... and history_weeks reports how many were sent
    assert result.calls[0].history_weeks == len(sent)


def test_b15a_trend_question_with_room_sends_all_50_newest_weeks(repo: Any) -> None:
    # Given 60 reports and a history budget large enough for 50 of them
    newest_first = seed_60_weeks_of_30kb(repo)
    deps = deps_with(repo, budget=PromptBudget(history_tokens=1_000_000))

    # When a trend question is asked
    result = send(deps, "回顾过去一年每周的入组趋势")

    # Then exactly the 50 newest weeks are in the prompt, oldest first, and reported
    assert history_weeks_sent(deps.llm.requests[0]) == list(reversed(newest_first[:50]))
    assert result.calls[0].history_weeks == 50


# ------------------------------------------------------------------------- B08 tenancy
def seed_two_projects(repo: Any) -> None:
    seed_project(repo, "P1", hot_lines=[hot_line("h1", "System Rules", "以后别提供剂量建议")],
                 report_text="[进度] P1专属周报：胸痛门诊入组 3 例。")
    seed_project(repo, "P2", hot_lines=[hot_line("h2", "User Preferences", "汇报时只看数据", tag="PI")],
                 report_text="[进度] P2 周报：本周入组 1 例。")


def test_b08_same_session_id_in_two_projects_never_mix(repo: Any) -> None:
    # Given P1 and P2 both with session s-001 and patient pt-1; P1's session holds a symptom
    # message and P1's hot memory a dose rule; one container (one deps) serves both
    seed_two_projects(repo)
    deps = deps_with(repo)
    send(deps, "张三 胸痛 3 天", project_id="P1", session_id="s-001", patient_id="pt-1")
    first_p2 = len(deps.llm.requests)

    # When P2/s-001 asks about pt-1 (and about its own history)
    send(deps, "总结 pt-1 的症状", project_id="P2", session_id="s-001", patient_id="pt-1")
    send(deps, "我们之前讨论过 pt-1 的情况吗？", project_id="P2", session_id="s-001", patient_id="pt-1")

    # Then nothing from P1 appears in any request sent for P2
    p2_requests = deps.llm.requests[first_p2:]
    assert p2_requests
    for r in p2_requests:
        text = request_text(r)
        for p1_text in ("张三", "胸痛", "以后别提供剂量建议", "P1专属周报"):
            assert p1_text not in text
        assert "汇报时只看数据" in system_blocks(r)["hot_memory"]
    # and P2's session window holds only its own messages
    window = repo.get_session("P2", "s-001").window
    assert [m.content for m in window if m.role == "user"] == ["总结 pt-1 的症状", "我们之前讨论过 pt-1 的情况吗？"]
    assert [m.content for m in repo.list_messages("P2", "s-001") if m.role == "user"] == [
        "总结 pt-1 的症状", "我们之前讨论过 pt-1 的情况吗？"]


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


# ------------------------------------------------------------------------- concurrency
def test_two_containers_alternating_on_one_session_never_see_stale_turns(repo: Any) -> None:
    # Given two containers (each its own ChatDeps and SessionCache) on the same session
    seed_project(repo, "p1")
    a, b = deps_with(repo), deps_with(repo)
    b.now = a.now  # one clock for both
    texts = [f"第{k}条留言：好的，收到。" for k in range(6)]

    # When they alternately send six messages
    for k, text in enumerate(texts):
        deps = a if k % 2 == 0 else b
        first = len(deps.llm.requests)
        send(deps, text)

        # Then every prompt includes the other container's previous turn (never stale)
        if k:
            assert texts[k - 1] in json.dumps(deps.llm.requests[first].messages, ensure_ascii=False)

    # and the session counts every message of both
    assert repo.get_session("p1", "s1").message_count == 12
    assert len(repo.list_messages("p1", "s1")) == 12


class CountingStore:
    """The repository, counting the VersionConflicts its record_turn raises."""

    def __init__(self, repo: Any) -> None:
        self.repo = repo
        self.conflicts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.repo, name)

    def record_turn(self, write: Any) -> None:
        try:
            self.repo.record_turn(write)
        except VersionConflict:
            self.conflicts += 1
            raise


@dataclass
class InterleavingLLM:
    """On its first call, lets another container complete a whole turn first (between this
    turn's read and its write)."""

    other: Any
    calls: int = 0
    inner: Any = field(default_factory=OfflineLLM)
    provider: str = "offline"

    def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        if self.calls == 1:
            send(self.other, "B 的消息：好的，收到。")
        return self.inner.complete(request)


def test_version_conflict_on_record_turn_is_reapplied_and_nothing_is_lost(repo: Any) -> None:
    # Given container A whose turn is overtaken by a turn of container B on the same session
    seed_project(repo, "p1")
    b = deps_with(repo)
    llm = InterleavingLLM(other=b)
    a = deps_with(repo, llm)
    b.now = a.now
    store = CountingStore(repo)
    a.store = store

    # When A sends its message
    result = send(a, "A 的消息：好的，收到。")

    # Then A's first write hit the version condition and was re-applied without calling the LLM again
    assert store.conflicts == 1
    assert llm.calls == 1
    # and both turns are stored, in the window and as messages
    state = repo.get_session("p1", "s1")
    assert [m.content for m in state.window if m.role == "user"] == ["B 的消息：好的，收到。", "A 的消息：好的，收到。"]
    assert state.window[-1].message_id == result.message_id
    assert state.message_count == 4
    assert len(repo.list_messages("p1", "s1")) == 4
