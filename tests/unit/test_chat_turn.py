"""The chat turn on the in-memory fakes (``agent_memory.chat.turn.handle_message``): which memory
layers each intent routes into the prompt, what one turn writes, LLM failures and retries, input
limits, the history trimmed to its token budget, tenancy and concurrent writers. What DynamoDB
stores (keys, item sizes, paging) is tested in ``tests/integration/test_chat_turn_dynamodb.py``."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime

import pytest

from agent_memory.adapters.llm.offline import OfflineLLM
from agent_memory.chat.prompt import PromptBudget
from agent_memory.domain.errors import (
    InvalidInput,
    LLMUnavailable,
    PayloadTooLarge,
    ProjectNotFound,
    VersionConflict,
)
from agent_memory.domain.jobs import FlowLogEntry
from agent_memory.domain.llm import LLMRequest, LLMResponse
from agent_memory.domain.models import SessionState
from tests.fakes import InMemoryStore, Recorder, new_keys, sort_time, stored_messages
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

    # When one message asks for a QC of P005 AND about last month's history
    result = send(deps, "对 P005 做质控，并告诉我上个月为什么调整了随访计划")

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


def test_unknown_project_rejected_and_nothing_written(store: InMemoryStore) -> None:
    # Given a seeded project p1 only
    seed_project(store, "p1")
    deps = deps_with(store)
    before = store.snapshot()

    # When a message is sent to project nope
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
    result = send(deps, "回顾过去一年每周的入组趋势")

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
    result = send(deps, "回顾过去一年每周的入组趋势")

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
    a.store = recorder  # type: ignore[assignment]

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
