"""The chat turn on the in-memory fakes (``agent_memory.chat.turn.handle_message``): which memory
layers each intent routes into the prompt, what one turn writes, LLM failures and retries, input
limits, the history trimmed to its token budget, tenancy and concurrent writers; the tool loop with
current models (thinking blocks sent back unchanged, pause_turn, refusal, an empty reply, max_tokens,
the step cap) and every call's usage. What DynamoDB
stores (keys, item sizes, paging) is tested in ``tests/integration/test_chat_turn_dynamodb.py``."""

from __future__ import annotations

import json
import time
from datetime import UTC, date, datetime

import pytest

from agent_memory.adapters.llm.offline import OfflineLLM
from agent_memory.chat import turn as turn_module
from agent_memory.chat.agent import REFUSAL_REPLY, STEP_CAP_REPLY
from agent_memory.chat.context_view import turn_context
from agent_memory.chat.intents import Classification
from agent_memory.chat.prompt import PromptBudget
from agent_memory.chat.turn import PRE_CHAT_DEADLINE_SHARE, TokenUsage, handle_message, pre_chat_deadline
from agent_memory.domain.errors import (
    InvalidInput,
    LLMAuthError,
    LLMBadResponse,
    LLMEmptyReply,
    LLMError,
    LLMModelNotFound,
    LLMUnavailable,
    PayloadTooLarge,
    ProjectNotFound,
    VersionConflict,
)
from agent_memory.domain.jobs import FlowLogEntry
from agent_memory.domain.llm import LLMRequest, LLMResponse, Usage
from agent_memory.domain.turns import SessionState
from tests.fakes import (
    InMemoryStore,
    Recorder,
    ScriptedLLM,
    empty_reply,
    new_keys,
    pause_turn_reply,
    redacted_thinking_block,
    refusal_reply,
    reply,
    sort_time,
    stored_messages,
    text_block,
    text_reply,
    thinking_block,
    tool_use_block,
)
from tests.unit.chat_support import (
    chat_llm,
    deps_with,
    llm_requests,
    overloaded,
    seed_60_weeks_of_30kb,
    seed_project,
    seed_two_projects,
    send,
    system_blocks,
    ticking_clock,
)

#: Wider than any time a test writes: the whole flow log of a project.
EVER = (datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))


# ------------------------------------------------------------------------------ helpers
def request_text(request: LLMRequest) -> str:
    """Everything a request carries to the model, as one string."""
    return "\n".join(b.text for b in request.system) + json.dumps(request.messages, ensure_ascii=False)


def stored_session(store: InMemoryStore, project_id: str = "p1", session_id: str = "s1") -> SessionState:
    """The stored session (it must exist)."""
    session = store.get_session(project_id, session_id)
    assert session is not None
    return session


def flow_log(store: InMemoryStore, project_id: str = "p1") -> list[FlowLogEntry]:
    return store.read_flow_log(project_id, *EVER)


def activity_dates(store: InMemoryStore) -> list[str]:
    return sorted(day for _, day in store.tables.activity)


# ----------------------------------------------------------------------- memory routing
def test_data_question_sends_no_history_block(store: InMemoryStore) -> None:
    # Given a project with three weekly reports
    seed_project(store, "p1")
    deps = deps_with(store)

    # When a current-data question is asked
    result = send(deps, "P001 入组了吗？")

    # Then no request carries a history block, and none was reported
    assert llm_requests(deps)
    assert all("history" not in system_blocks(r) for r in llm_requests(deps))
    assert [c.history_weeks for c in result.calls] == [0]
    assert result.calls[0].layers["history"] == 0


def test_data_question_reads_clinical_data_and_answers_with_the_enrolment_date(store: InMemoryStore) -> None:
    # Given P001 enrolled on 2026-02-05 in the clinical data
    seed_project(store, "p1")
    deps = deps_with(store)

    # When asked whether P001 is enrolled
    result = send(deps, "P001 入组了吗？")

    # Then the answer comes from the read_clinical_data tool
    assert "2026-02-05" in result.reply
    assert result.intents == ["QUERY_DATA"]
    stored = stored_messages(store, "p1", "s1")
    assert [(tc.name, tc.input) for tc in stored[1].tool_calls] == [("read_clinical_data", {"subject_id": "P001"})]
    # and the tool result was fed back to the model in the second request
    assert llm_requests(deps)[1].messages[-1]["content"][0]["type"] == "tool_result"


def test_history_question_sends_the_history_block(store: InMemoryStore) -> None:
    # Given a project with three weekly reports
    seed_project(store, "p1")
    deps = deps_with(store)

    # When a question about the project's past is asked
    result = send(deps, "我们为什么暂停了筛选？")

    # Then the request carries the history book with the three weeks
    history = system_blocks(llm_requests(deps)[0])["history"]
    assert all(f"## 2026-W0{w}" in history for w in (1, 2, 3))
    assert [c.history_weeks for c in result.calls] == [3]


def test_qc_with_a_history_question_runs_qc_without_history(store: InMemoryStore) -> None:
    # Given a project with reports and P005's current data
    seed_project(store, "p1")
    deps = deps_with(store)

    # When one message asks for a QC of P005 AND about the project's past (no period named)
    result = send(deps, "对 P005 做质控，并告诉我之前为什么调整了随访计划")

    # Then two LLM contexts ran: the QC one with no history block at all (not even empty) ...
    qc = [r for r in llm_requests(deps) if r.metadata["intents"] == ["QC_TASK"]]
    hist = [r for r in llm_requests(deps) if r.metadata["intents"] == ["QUERY_HISTORY"]]
    assert qc and hist and len(qc) + len(hist) == len(llm_requests(deps))
    for r in qc:
        assert "history" not in system_blocks(r)
        assert "<history_book weeks=" not in request_text(r)
    # (hot memory is in both)
    assert all("严禁在未授权情况下删除数据" in system_blocks(r)["hot_memory"] for r in llm_requests(deps))
    # ... and the history one with it
    assert all("## 2026-W03" in system_blocks(r)["history"] for r in hist)
    # and the response reports both calls
    assert [(c.intents, c.history_weeks) for c in result.calls] == [(["QC_TASK"], 0), (["QUERY_HISTORY"], 3)]
    assert result.calls[0].layers["history"] == 0
    assert "P005 质控：缺失字段 2 个" in result.reply


# --------------------------------------------------------------------- what a turn writes
def test_turn_writes_two_messages_two_flow_log_items_the_session_and_the_activity_marker(
        store: InMemoryStore) -> None:
    # Given a seeded project
    seed_project(store, "p1")
    deps = deps_with(store)
    before = store.snapshot()

    # When one turn runs (at 2026-03-10T02:00Z = 10:00 in Asia/Shanghai)
    result = send(deps, "P001 入组了吗？")

    # Then exactly these rows were added, and nothing else was changed
    after = store.snapshot()
    flow = flow_log(store)
    assert new_keys(before, after) == {
        "activity": {("p1", "2026-03-10")},
        "sessions": {("p1", "s1")},
        "messages": {("p1", "s1", result.user_message_id), ("p1", "s1", result.message_id)},
        "flow_log": {("p1", sort_time(e.at), e.message_id) for e in flow},
    }
    assert all(after[t][k] == v for t in before for k, v in before[t].items())
    # and the flow log holds both messages verbatim, written on the UTC date 2026-03-10
    assert sorted((e.role, e.message_id, e.content) for e in flow) == sorted([
        ("user", result.user_message_id, "P001 入组了吗？"), ("assistant", result.message_id, result.reply)])
    assert {e.at.astimezone(UTC).date() for e in flow} == {date(2026, 3, 10)}


def test_activity_marker_is_the_projects_local_date(store: InMemoryStore) -> None:
    # Given a message at 2026-03-09T23:30Z, which is 2026-03-10 07:30 in Asia/Shanghai
    seed_project(store, "p1")
    deps = deps_with(store)
    deps.now = ticking_clock(datetime(2026, 3, 9, 23, 29, 59, tzinfo=UTC))

    # When the turn runs
    send(deps, "P001 入组了吗？")

    # Then the activity marker is for the local date 2026-03-10, not the UTC date
    assert activity_dates(store) == ["2026-03-10"]


def test_activity_markers_cover_the_local_day_of_every_message_written(store: InMemoryStore) -> None:
    # Given a user message at 23:59:59 local time whose reply lands after local midnight
    seed_project(store, "p1")
    deps = deps_with(store)
    # The user message is stamped 2026-03-10 23:59:59 +08:00.
    deps.now = ticking_clock(datetime(2026, 3, 10, 15, 59, 58, tzinfo=UTC))

    # When the turn runs
    result = send(deps, "P001 入组了吗？")

    # Then the day of the user message is marked active (the daily jobs for 2026-03-10 find it),
    # and so is the day of the reply
    messages = {m.message_id: m for m in stored_messages(store, "p1", "s1")}
    assert messages[result.user_message_id].at == datetime(2026, 3, 10, 15, 59, 59, tzinfo=UTC)
    assert activity_dates(store) == ["2026-03-10", "2026-03-11"]


def test_a_session_marks_each_local_day_once(store: InMemoryStore) -> None:
    # Given a session whose first turn of 2026-03-10 (local) marked the project active that day
    seed_project(store, "p1")
    deps = deps_with(store)
    deps.now = ticking_clock(datetime(2026, 3, 10, 2, 0, tzinfo=UTC))
    send(deps, "P001 入组了吗？")
    assert activity_dates(store) == ["2026-03-10"]
    assert stored_session(store).activity_date == "2026-03-10"
    # and the marker was since removed behind the session's back (to see whether a turn writes it)
    store.tables.activity.clear()

    # When a second turn of the same local day runs
    send(deps, "P002 呢？")

    # Then it writes no marker (one per session and day is enough)
    assert activity_dates(store) == []
    # When the session goes on the next local day (2026-03-11 08:00 in Asia/Shanghai)
    deps.now = ticking_clock(datetime(2026, 3, 11, 0, 0, tzinfo=UTC))
    send(deps, "P003 呢？")

    # Then that day is marked, and the session remembers it
    assert activity_dates(store) == ["2026-03-11"]
    assert stored_session(store).activity_date == "2026-03-11"
    # and another session of the project marks the same day for itself
    store.tables.activity.clear()
    send(deps, "P004 呢？", session_id="s2")
    assert activity_dates(store) == ["2026-03-11"]


# --------------------------------------------------------------------------- LLM failure
def test_llm_failure_records_the_user_message_once_as_failed(store: InMemoryStore) -> None:
    # Given an LLM that is overloaded for the next call
    seed_project(store, "p1")
    deps = deps_with(store, chat_llm(overloaded()))

    # When a turn runs
    with pytest.raises(LLMUnavailable):
        send(deps, "P001 入组了吗？", idempotency_hash="h-1")

    # Then the user message is stored once, status failed, with no assistant message
    stored = stored_messages(store, "p1", "s1")
    assert [(m.role, m.content, m.status, m.idempotency_hash) for m in stored] == [
        ("user", "P001 入组了吗？", "failed", "h-1")]
    # and the flow log has it once
    assert [(e.message_id, e.role, e.status) for e in flow_log(store)] == [
        (stored[0].message_id, "user", "failed")]
    assert stored_session(store).message_count == 1


def test_retry_with_the_same_idempotency_key_reuses_the_failed_user_message(store: InMemoryStore) -> None:
    # Given a turn that failed with Idempotency-Key hash h-1
    seed_project(store, "p1")
    llm = chat_llm(overloaded())
    deps = deps_with(store, llm)
    with pytest.raises(LLMUnavailable):
        send(deps, "P001 入组了吗？", idempotency_hash="h-1")
    failed_id = stored_messages(store, "p1", "s1")[0].message_id

    # When the client retries with the same key and the LLM answers
    result = send(deps, "P001 入组了吗？", idempotency_hash="h-1")

    # Then the same user message is answered (now ok), plus one assistant message
    assert result.user_message_id == failed_id
    stored = stored_messages(store, "p1", "s1")
    assert [(m.message_id, m.role, m.status) for m in stored] == [
        (failed_id, "user", "ok"), (result.message_id, "assistant", "ok")]
    # and the flow log still has the user message once, and the reply once
    flow = sorted((e.role, e.message_id) for e in flow_log(store))
    assert flow == [("assistant", result.message_id), ("user", failed_id)]
    # and the retried question is sent once, not twice
    assert request_text(llm.requests[-1]).count("P001 入组了吗？") == 1
    assert stored_session(store).message_count == 2


def test_a_retry_of_an_answered_turn_gets_the_first_answer_and_writes_nothing(store: InMemoryStore) -> None:
    # Given a turn answered under Idempotency-Key hash h-2 whose idempotency record never completed
    # (the process died after the turn's transaction), so the retry reaches the turn again
    seed_project(store, "p1")
    llm = chat_llm()
    deps = deps_with(store, llm)
    first = send(deps, "我们为什么暂停了筛选？", idempotency_hash="h-2")
    before = store.snapshot()
    requests_before = len(llm.requests)

    # When the client retries with the same key and the same message
    again = send(deps, "我们为什么暂停了筛选？", idempotency_hash="h-2")

    # Then it gets the first answer, field by field, and nothing is written or asked of the model
    assert again == first
    assert again.calls and again.calls[0].history_weeks == first.calls[0].history_weeks > 0
    assert store.snapshot() == before
    assert len(llm.requests) == requests_before
    # and the same key with another message is refused (as the HTTP layer refuses a changed body)
    with pytest.raises(InvalidInput, match="another message"):
        send(deps, "P001 入组了吗？", idempotency_hash="h-2")
    assert store.snapshot() == before
    # while another key is a new turn
    assert send(deps, "我们为什么暂停了筛选？", idempotency_hash="h-3").message_id != first.message_id


# ------------------------------------------------------------------------- input limits
def test_b14c_oversize_message_rejected_and_nothing_written(store: InMemoryStore) -> None:
    # Given a message of 140,000 Chinese characters (420,000 UTF-8 bytes)
    seed_project(store, "p1")
    deps = deps_with(store)
    before = store.snapshot()

    # When it is sent
    with pytest.raises(PayloadTooLarge) as err:
        send(deps, "患" * 140_000)

    # Then it is rejected with the limit and the actual size in bytes
    assert err.value.limit_bytes == 32_768
    assert err.value.actual_bytes == 420_000
    assert "420000" in err.value.reason and "32768" in err.value.reason
    # and nothing was written anywhere, and the LLM was not called
    assert store.snapshot() == before
    assert llm_requests(deps) == []


@pytest.mark.parametrize("content", ["", "   ", "\n\t", "\u3000\u3000"])
def test_empty_message_rejected_and_nothing_written(store: InMemoryStore, content: str) -> None:
    # Given a seeded project
    seed_project(store, "p1")
    deps = deps_with(store)
    before = store.snapshot()

    # When an empty or whitespace-only message (ASCII or full-width spaces) is sent
    with pytest.raises(InvalidInput):
        send(deps, content)

    # Then nothing was written
    assert store.snapshot() == before


def test_a_turn_for_an_unknown_project_is_not_found_and_nothing_written(store: InMemoryStore) -> None:
    # Given a seeded project p1 only (who may send a turn is the route guard's decision: a
    # non-member never reaches the turn, tests/unit/test_route_guard.py)
    seed_project(store, "p1")
    deps = deps_with(store)
    before = store.snapshot()

    # When a turn runs for project nope, Then it is not found
    with pytest.raises(ProjectNotFound):
        send(deps, "P001 入组了吗？", project_id="nope")

    # Then nothing was written and the LLM was not called
    assert store.snapshot() == before
    assert llm_requests(deps) == []


# ------------------------------------- history: the newest weeks that fit the token budget
def history_weeks_sent(request: LLMRequest) -> list[str]:
    return [ln[3:] for ln in system_blocks(request)["history"].splitlines() if ln.startswith("## ")]


def test_b15a_trend_question_prompt_keeps_the_newest_weeks_within_history_tokens(store: InMemoryStore) -> None:
    # Given 60 reports of ~10,000 tokens each and the default 120,000-token history budget
    newest_first = seed_60_weeks_of_30kb(store)
    deps = deps_with(store)

    # When a trend question is asked
    result = send(deps, "回顾一下每周的入组趋势")

    # Then the prompt holds the newest weeks that fit (newest kept when trimming) ...
    sent = history_weeks_sent(llm_requests(deps)[0])
    assert 0 < len(sent) < 50
    assert sent == list(reversed(newest_first[: len(sent)]))
    assert result.calls[0].layers["history"] <= PromptBudget().history_tokens
    # ... and history_weeks reports how many were sent
    assert result.calls[0].history_weeks == len(sent)


def test_b15a_trend_question_with_room_sends_all_50_newest_weeks(store: InMemoryStore) -> None:
    # Given 60 reports and a history budget large enough for 50 of them
    newest_first = seed_60_weeks_of_30kb(store)
    deps = deps_with(store, budget=PromptBudget(history_tokens=1_000_000))

    # When a trend question is asked
    result = send(deps, "回顾一下每周的入组趋势")

    # Then exactly the 50 newest weeks are in the prompt, oldest first, and reported
    assert history_weeks_sent(llm_requests(deps)[0]) == list(reversed(newest_first[:50]))
    assert result.calls[0].history_weeks == 50


# --------------------------------------------- tenancy: one project never sees another's data
def test_b08_same_session_id_in_two_projects_never_mix(store: InMemoryStore) -> None:
    # Given P1 and P2 both with session s-001 and patient pt-1; P1's session holds a symptom
    # message and P1's hot memory a dose rule; one container (one deps) serves both
    seed_two_projects(store)
    deps = deps_with(store)
    send(deps, "张三 胸痛 3 天", project_id="P1", session_id="s-001", patient_id="pt-1")
    first_p2 = len(llm_requests(deps))

    # When P2/s-001 asks about pt-1 (and about its own history)
    send(deps, "总结 pt-1 的症状", project_id="P2", session_id="s-001", patient_id="pt-1")
    send(deps, "我们之前讨论过 pt-1 的情况吗？", project_id="P2", session_id="s-001", patient_id="pt-1")

    # Then nothing from P1 appears in any request sent for P2
    p2_requests = llm_requests(deps)[first_p2:]
    assert p2_requests
    for r in p2_requests:
        text = request_text(r)
        for p1_text in ("张三", "胸痛", "以后别提供剂量建议", "P1专属周报"):
            assert p1_text not in text
        assert "汇报时只看数据" in system_blocks(r)["hot_memory"]
    # and P2's session window holds only its own messages
    window = stored_session(store, "P2", "s-001").window
    assert [m.content for m in window if m.role == "user"] == ["总结 pt-1 的症状", "我们之前讨论过 pt-1 的情况吗？"]
    assert [m.content for m in stored_messages(store, "P2", "s-001") if m.role == "user"] == [
        "总结 pt-1 的症状", "我们之前讨论过 pt-1 的情况吗？"]


# ------------------------------------------------------------------------- concurrency
def test_two_containers_alternating_on_one_session_never_see_stale_turns(store: InMemoryStore) -> None:
    # Given two containers (each its own ChatDeps and SessionCache) on the same session
    seed_project(store, "p1")
    a, b = deps_with(store), deps_with(store)
    b.now = a.now  # one clock for both
    texts = [f"第{k}条留言：好的，收到。" for k in range(6)]

    # When they alternately send six messages
    for k, text in enumerate(texts):
        deps = a if k % 2 == 0 else b
        first = len(llm_requests(deps))
        send(deps, text)

        # Then every prompt includes the other container's previous turn (never stale)
        if k:
            assert texts[k - 1] in json.dumps(llm_requests(deps)[first].messages, ensure_ascii=False)

    # and the session counts every message of both
    assert stored_session(store).message_count == 12
    assert len(stored_messages(store, "p1", "s1")) == 12


def test_version_conflict_on_record_turn_is_reapplied_and_nothing_is_lost(store: InMemoryStore) -> None:
    # Given container A whose turn is overtaken by a turn of container B on the same session:
    # A's LLM call, between A's read and A's write, lets B complete a whole turn first
    seed_project(store, "p1")
    b = deps_with(store)

    def b_answers_first(request: LLMRequest) -> LLMResponse:
        send(b, "B 的消息：好的，收到。")
        return OfflineLLM().complete(request)

    llm = chat_llm(b_answers_first)
    a = deps_with(store, llm)
    b.now = a.now
    recorder = Recorder(store)
    a.store = recorder

    # When A sends its message
    result = send(a, "A 的消息：好的，收到。")

    # Then A's first write hit the version condition and was re-applied without calling the LLM again
    assert recorder.errors("record_turn", VersionConflict) == 1
    assert recorder.count("record_turn") == 2
    assert len(llm.requests) == 1
    # and both turns are stored, in the window and as messages
    state = store.get_session("p1", "s1")
    assert state is not None
    assert [m.content for m in state.window if m.role == "user"] == ["B 的消息：好的，收到。", "A 的消息：好的，收到。"]
    assert state.window[-1].message_id == result.message_id
    assert state.message_count == 4
    assert len(stored_messages(store, "p1", "s1")) == 4


# ------------------------------------------------------------ the tool loop (current models)
P001_TOOL = tool_use_block("read_clinical_data", {"subject_id": "P001"}, "toolu_p001")


def test_thinking_blocks_go_back_exactly_as_received_with_the_same_system_and_tools(store: InMemoryStore) -> None:
    # Given a model that thinks before calling the tool (a thinking block with its signature, a
    # redacted one, a key this code has never seen) and then answers
    seed_project(store, "p1")
    first = reply(
        {**thinking_block("", "EqQBCkgIARABGAIiQL-sig-1"), "future_field": {"kept": True}},
        redacted_thinking_block("EmwKAhgBEgy3va3pzix-opaque"),
        text_block("我先查一下。"),
        P001_TOOL,
        stop_reason="tool_use", usage=Usage(1200, 80, 0, 0),
    )
    second = reply(thinking_block("", "EqQBCkgIARABGAIiQL-sig-2"), text_block("P001 已入组（2026-02-05）。"),
                   usage=Usage(60, 40, 0, 1200))
    llm = ScriptedLLM(first, second)
    deps = deps_with(store, llm)

    # When the data question runs through the loop
    result = send(deps, "P001 入组了吗？")

    # Then the second request repeats the first one's messages and adds the assistant content byte for
    # byte (every block, every key, in order), then the tool result
    r1, r2 = llm.requests
    assert r2.messages[: len(r1.messages)] == r1.messages
    assistant, results = r2.messages[len(r1.messages):]
    assert assistant == {"role": "assistant", "content": first.content}
    assert json.dumps(assistant["content"], ensure_ascii=False) == json.dumps(first.content, ensure_ascii=False)
    assert [b["type"] for b in results["content"]] == ["tool_result"]
    assert results["content"][0]["tool_use_id"] == "toolu_p001" and '"2026-02-05"' in results["content"][0]["content"]
    # and nothing before the thinking blocks changed: same system blocks, tools and tool_choice (auto)
    assert r1.system == r2.system and r1.tools == r2.tools
    assert r1.tool_choice == r2.tool_choice == {"type": "auto"}
    # and the reply is the final text; the stored reply keeps the tool call, never the thinking
    assert result.reply == "P001 已入组（2026-02-05）。"
    assert (result.truncated, result.refused) == (False, False)
    stored = stored_messages(store, "p1", "s1")[1]
    assert [tc.id for tc in stored.tool_calls] == ["toolu_p001"]
    assert "EqQBCkgIARABGAIiQL" not in stored.model_dump_json()


def test_pause_turn_sends_the_paused_content_back_as_it_is_without_a_new_user_message(store: InMemoryStore) -> None:
    # Given a model that pauses its turn once, then finishes it
    seed_project(store, "p1")
    paused = pause_turn_reply(thinking_block("", "sig-paused"), text_block("正在整理"))
    llm = ScriptedLLM(paused, text_reply("整理完毕：本周无新增入组。"))
    deps = deps_with(store, llm)

    # When a turn runs
    result = send(deps, "总结一下本周情况")

    # Then the continuation request is the first one plus the paused assistant content, unchanged
    r1, r2 = llm.requests
    assert r2.messages == [*r1.messages, {"role": "assistant", "content": paused.content}]
    assert r2.system == r1.system and r2.tool_choice == r1.tool_choice
    # and the reply is the whole assistant turn: the paused part's text, then the rest
    assert result.reply == "正在整理整理完毕：本周无新增入组。" and not result.truncated


def test_pause_turn_stops_at_the_step_cap_with_the_text_so_far_flagged_truncated(store: InMemoryStore) -> None:
    # Given a model that pauses every time, and a cap of 3 steps
    seed_project(store, "p1")
    llm = ScriptedLLM(pause_turn_reply(text_block("仍在处理")))
    deps = deps_with(store, llm, react_max_steps=3)

    # When a turn runs
    result = send(deps, "总结一下本周情况")

    # Then exactly 3 calls were made, the paused parts joined into one assistant message, and the
    # reply is what the model had written in them, flagged truncated
    assert len(llm.requests) == 3
    last = llm.requests[-1].messages
    assert last[-1] == {"role": "assistant", "content": [text_block("仍在处理"), text_block("仍在处理")]}
    assert last[-2]["role"] == "user"
    assert result.reply == "仍在处理" * 3 and result.truncated
    assert result.calls[0].model_calls == 3


def test_refusal_is_a_clear_reply_flagged_refused_and_never_replayed(store: InMemoryStore) -> None:
    # Given a model that declines (after a few words)
    seed_project(store, "p1")
    llm = ScriptedLLM(refusal_reply("Hello.."), text_reply("好的。"))
    deps = deps_with(store, llm)

    # When the turn runs
    result = send(deps, "帮我写一段危险的东西")

    # Then the reply is the fixed refusal sentence, flagged, never the partial text nor empty
    assert result.refused is True
    assert result.reply == REFUSAL_REPLY and REFUSAL_REPLY.strip()
    assert "Hello.." not in result.reply and not result.truncated
    # and it is stored as the turn's answer
    assert [(m.role, m.content) for m in stored_messages(store, "p1", "s1")] == [
        ("user", "帮我写一段危险的东西"), ("assistant", REFUSAL_REPLY)]

    # When the next turn runs
    send(deps, "那换个话题：你好")

    # Then the refused turn is not in its context (a refused turn must leave the conversation)
    sent = request_text(llm.requests[-1])
    assert "帮我写一段危险的东西" not in sent and REFUSAL_REPLY not in sent


def test_an_empty_final_reply_is_asked_for_once_more(store: InMemoryStore) -> None:
    # Given a model whose first answer has no text (only a thinking block)
    seed_project(store, "p1")
    llm = ScriptedLLM(empty_reply(usage=Usage(500, 3, 0, 0)), text_reply("你好，有什么可以帮您？"))
    deps = deps_with(store, llm)

    # When the turn runs
    result = send(deps, "你好")

    # Then the same request was sent again once, and its answer is the reply
    r1, r2 = llm.requests
    assert r2.messages == r1.messages and r2.system == r1.system
    assert result.reply == "你好，有什么可以帮您？"
    assert result.calls[0].model_calls == 2


def test_two_empty_replies_raise_llm_empty_reply_and_record_only_the_failed_question(store: InMemoryStore) -> None:
    # Given a model that never answers with text
    seed_project(store, "p1")
    llm = ScriptedLLM(empty_reply())
    deps = deps_with(store, llm)
    before = store.snapshot()

    # When the turn runs
    with pytest.raises(LLMEmptyReply):
        send(deps, "你好", idempotency_hash="h-empty")

    # Then it asked twice, and wrote only the user message, as failed (as for a 503)
    assert len(llm.requests) == 2
    stored = stored_messages(store, "p1", "s1")
    assert [(m.role, m.status) for m in stored] == [("user", "failed")]
    assert set(new_keys(before, store.snapshot())) == {"sessions", "messages", "flow_log", "activity"}
    assert [e.status for e in flow_log(store)] == ["failed"]


@pytest.mark.parametrize("error", [
    LLMAuthError("HTTP 401 authentication_error"),
    LLMModelNotFound("HTTP 404 not_found_error"),
    LLMBadResponse("not a Messages response"),
])
def test_provider_faults_record_only_the_failed_question(store: InMemoryStore, error: LLMError) -> None:
    # Given a provider call that fails with a credential, model or response fault
    seed_project(store, "p1")
    deps = deps_with(store, chat_llm(error))

    # When the turn runs
    with pytest.raises(type(error)):
        send(deps, "P001 入组了吗？")

    # Then only the user message is written, as failed
    assert [(m.role, m.status) for m in stored_messages(store, "p1", "s1")] == [("user", "failed")]


def test_max_tokens_flags_the_reply_truncated(store: InMemoryStore) -> None:
    # Given a reply cut by max_tokens
    seed_project(store, "p1")
    deps = deps_with(store, ScriptedLLM(text_reply("P001 于 2026-02-05 入组，目前", stop_reason="max_tokens")))

    # When the turn runs
    result = send(deps, "P001 入组了吗？")

    # Then the reply is what came, flagged truncated in the response and on the stored message
    assert result.reply == "P001 于 2026-02-05 入组，目前" and result.truncated
    assert stored_messages(store, "p1", "s1")[1].truncated


def test_the_step_cap_never_forces_the_tool_choice(store: InMemoryStore) -> None:
    # Given a model that asks for the tool every time, and a cap of 3 steps
    seed_project(store, "p1")
    asks = reply(text_block("再查一次。"), P001_TOOL, stop_reason="tool_use")
    llm = ScriptedLLM(asks)
    deps = deps_with(store, llm, react_max_steps=3)

    # When the turn runs
    result = send(deps, "P001 入组了吗？")

    # Then every call carried the tools with tool_choice auto (never "none", never forced) ...
    assert len(llm.requests) == 3
    assert all(r.tool_choice == {"type": "auto"} and [t.name for t in r.tools] == ["read_clinical_data"]
               for r in llm.requests)
    # ... the tools ran for the first two, and the loop stopped at the cap with the text it had
    assert [tc.id for tc in stored_messages(store, "p1", "s1")[1].tool_calls] == ["toolu_p001", "toolu_p001"]
    assert result.reply == "再查一次。" and result.truncated


def test_the_step_cap_with_only_tool_calls_answers_so_flagged_truncated_never_502(store: InMemoryStore) -> None:
    # Given a model that asks for the tool every time without any text, and a cap of 3 steps
    seed_project(store, "p1")
    llm = ScriptedLLM(reply(P001_TOOL, stop_reason="tool_use"))
    deps = deps_with(store, llm, react_max_steps=3)

    # When the turn runs
    result = send(deps, "P001 入组了吗？")

    # Then the cap ends the loop after 3 calls (no identical "empty reply" retry), with the
    # step-cap reply flagged truncated, and the two tool calls that ran are kept
    assert len(llm.requests) == 3
    assert result.reply == STEP_CAP_REPLY and result.truncated
    assert [tc.id for tc in stored_messages(store, "p1", "s1")[1].tool_calls] == ["toolu_p001", "toolu_p001"]


def test_calls_before_the_chat_call_get_a_bounded_share_of_the_time_left(store: InMemoryStore) -> None:
    # Given a turn with 20 s left, and a classifier that records the deadline it is given
    seed_project(store, "p1")
    llm = ScriptedLLM(reply(text_block("好的。")))
    deps = deps_with(store, llm)
    seen: list[float | None] = []
    rules = deps.classifier

    class Recording:
        def classify(self, text: str, *, deadline: float | None = None) -> Classification:
            seen.append(deadline)
            return rules.classify(text, deadline=deadline)

    deps.classifier = Recording()
    start = time.monotonic()
    deadline = start + 20.0

    # When the turn runs
    handle_message(deps, project_id="p1", session_id="s1", user_id="u1", content="你好", patient_id=None,
                   deadline=deadline, idempotency_hash=None)

    # Then the classifier got at most a quarter of the time left, and the chat call the whole deadline
    assert seen[0] is not None and seen[0] <= time.monotonic() + 20.0 * PRE_CHAT_DEADLINE_SHARE
    assert seen[0] < deadline - 10.0
    assert llm.requests[-1].deadline == deadline
    assert pre_chat_deadline(None) is None
    assert pre_chat_deadline(110.0, now=100.0) == 102.5
    assert pre_chat_deadline(90.0, now=100.0) == 100.0


# ------------------------------------------------------------------------------- usage
def test_every_calls_usage_is_in_the_response_the_manifest_and_the_chat_metrics(
        store: InMemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a two-call loop whose calls report their usage
    seed_project(store, "p1")
    u1, u2 = Usage(1200, 80, 1100, 0), Usage(60, 40, 0, 1100)
    llm = ScriptedLLM(reply(text_block("查询中"), P001_TOOL, stop_reason="tool_use", usage=u1),
                      reply(text_block("P001 已入组。"), usage=u2))
    recorded: list[tuple[str, Usage | None]] = []
    monkeypatch.setattr(turn_module, "record_usage", lambda task, usage: recorded.append((task, usage)))
    deps = deps_with(store, llm)

    # When the turn runs
    result = send(deps, "P001 入组了吗？")

    # Then the response reports the context's summed usage and its number of model calls
    (call,) = result.calls
    assert call.model_calls == 2
    assert call.usage == TokenUsage(input_tokens=1260, output_tokens=120, cache_creation_input_tokens=1100,
                                    cache_read_input_tokens=1100)
    # and the context endpoint shows the same sum and each call's stop reason and usage
    (context_call,) = turn_context(store, "p1", "s1", result.message_id)["calls"]
    assert context_call["usage"] == (u1 + u2).as_dict()
    assert context_call["model_calls"] == [{"stop_reason": "tool_use", "usage": u1.as_dict()},
                                           {"stop_reason": "end_turn", "usage": u2.as_dict()}]
    # and each call was counted as the chat task's usage, once
    assert recorded == [("chat", u1), ("chat", u2)]


def test_offline_usage_is_null(store: InMemoryStore) -> None:
    # Given the offline provider (no usage reported)
    seed_project(store, "p1")
    deps = deps_with(store)

    # When a turn runs
    result = send(deps, "P001 入组了吗？")

    # Then calls[].usage is null, in the response and in the context
    assert [c.usage for c in result.calls] == [None]
    assert result.model_dump(mode="json")["calls"][0]["usage"] is None
    assert turn_context(store, "p1", "s1", result.message_id)["calls"][0]["usage"] is None


def test_the_context_shows_the_blocks_in_the_order_sent_and_which_ended_a_cache_breakpoint(
        store: InMemoryStore) -> None:
    # Given a model that caches any prefix, and a second turn (so there is a previous turn to cache)
    seed_project(store, "p1")
    deps = deps_with(store, min_cacheable_tokens=0)
    send(deps, "你好")

    # When the second turn runs and its context is read back
    result = send(deps, "再说一遍")
    (call,) = turn_context(store, "p1", "s1", result.message_id)["calls"]

    # Then the blocks come in the order they were sent, the breakpoints marked: the session memory (the
    # asker, the same next turn) before the recent turns, the session block (which changes every turn)
    # after the last one
    assert [(b["name"], b.get("cache", False)) for b in call["blocks"]] == [
        ("system", False), ("hot_memory", True), ("session", True), ("recent_turns", True), ("session", False),
        ("user_message", False)]
    assert call["blocks"][2]["text"].startswith("<conversation_memory>\nAsker: ")
    assert call["blocks"][4]["text"].startswith('<session id="s1">')
    assert call["blocks"][5]["text"] == "再说一遍"
