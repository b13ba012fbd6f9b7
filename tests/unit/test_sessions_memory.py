"""Session memory logic without AWS: fact caps, the rolling summary (extractive and LLM with
fallback), the summary's gap read (container cache first), the visit comparison."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from agent_memory.chat.prompt import PromptBudget, select_recent_turns
from agent_memory.consultation.session_memory import (
    SessionMemory,
    TurnMemory,
    cap_facts,
    group_turns,
)
from agent_memory.consultation.sessions import compare_facts
from agent_memory.consultation.summary import ExtractiveSummariser, LLMSummariser
from agent_memory.consultation.symptoms import RuleSymptomExtractor, SymptomFact
from agent_memory.conversation.cache import SessionCache
from agent_memory.conversation.window import WINDOW_BUDGET_BYTES, trim_window
from agent_memory.domain.errors import LLMUnavailable
from agent_memory.domain.llm import Usage
from agent_memory.domain.session_models import CompareSide
from agent_memory.domain.text import utf8_len
from agent_memory.domain.turns import MessageRecord, SessionState, TurnWrite
from tests.fakes import InMemoryStore, Recorder, ScriptedLLM, text_reply
from tests.unit.chat_support import T0
from tests.unit.structured_support import fallbacks, usage_metrics


def msg(i: int, role: str, content: str) -> MessageRecord:
    return MessageRecord(message_id=f"m{i:05d}", role=role, content=content,
                         at=T0 + timedelta(minutes=i))


def conversation(n_turns: int) -> list[MessageRecord]:
    out = []
    for t in range(n_turns):
        out.append(msg(2 * t, "user", f"第{t}轮：头痛"))
        out.append(msg(2 * t + 1, "assistant", f"第{t}轮回答。还有发烧吗？"))
    return out


# ----------------------------------------------------------------------- facts
def test_cap_facts_bounds_count_bytes_and_evidence_keeping_the_newest() -> None:
    # Given 400 symptoms, each with 30 evidence ids, older first
    facts = [SymptomFact(name=f"症状{i:03d}", status="present", evidence=[f"m{i:05d}{j:03d}" for j in range(30)])
             for i in range(400)]

    # When capped
    capped = cap_facts(facts, max_symptoms=150, budget_bytes=60_000, max_evidence=12)

    # Then at most 150 remain, the newest, in their original order, evidence first two + newest ten
    assert len(capped) <= 150
    assert capped[-1].name == "症状399"
    assert [f.name for f in capped] == sorted(f.name for f in capped)
    assert capped[-1].evidence == facts[-1].evidence[:2] + facts[-1].evidence[-10:]
    assert sum(utf8_len(f.model_dump_json()) for f in capped) <= 60_000


def test_cap_facts_leaves_a_normal_session_untouched() -> None:
    facts = [SymptomFact(name="头痛", status="present", evidence=["m1"])]
    assert cap_facts(facts) == facts


# --------------------------------------------------------------------- summary
def test_extractive_summary_has_a_line_per_turn_with_symptoms_and_questions() -> None:
    turns = group_turns(conversation(2))
    facts = [{"name": "头痛", "status": "present", "trend": "worsening", "evidence": ["m00000"]}]

    text = ExtractiveSummariser().summarise("", turns, facts, time_zone="Asia/Shanghai", budget_bytes=4000)

    lines = text.splitlines()
    assert len(lines) == 2
    assert "patient: 第0轮：头痛" in lines[0] and "头痛 present (worsening)" in lines[0]
    assert "asked: 还有发烧吗？" in lines[0]
    assert lines[0].startswith("- 03-10 10:00")  # local time of Asia/Shanghai


def test_extractive_summary_stays_in_budget_keeping_the_first_and_newest_turns() -> None:
    summariser = ExtractiveSummariser()
    text = ""
    messages = conversation(200)
    for t in range(200):  # one turn dropped per write, as in a long chat
        text = summariser.summarise(text, [messages[2 * t: 2 * t + 2]], [], time_zone="UTC", budget_bytes=2000)

    assert utf8_len(text) <= 2000
    lines = text.splitlines()
    assert "第0轮" in lines[0] and "第1轮" in lines[1]
    assert "earlier turns condensed" in lines[2]
    assert "第199轮" in lines[-1]


def test_group_turns_keeps_a_leading_doctor_line_as_its_own_turn() -> None:
    messages = [msg(0, "assistant", "你好"), msg(1, "user", "头痛"), msg(2, "assistant", "多久了？"),
                msg(3, "assistant", "发烧吗？"), msg(4, "user", "没有")]
    assert [[m.message_id for m in t] for t in group_turns(messages)] == [
        ["m00000"], ["m00001", "m00002", "m00003"], ["m00004"]]


def test_llm_summary_is_bounded_and_falls_back_on_failure_or_no_time() -> None:
    turns = group_turns(conversation(1))
    ok = LLMSummariser(ScriptedLLM(text_reply("- 头痛" * 2000)), "claude-haiku-4-5")
    assert utf8_len(ok.summarise("", turns, [], time_zone="UTC", budget_bytes=500)) <= 500
    assert ok.llm.requests[0].purpose == "summary"  # type: ignore[attr-defined]  # the ScriptedLLM given above

    failing = LLMSummariser(ScriptedLLM(LLMUnavailable("overloaded")), "claude-haiku-4-5")
    assert "patient: 第0轮：头痛" in failing.summarise("", turns, [], time_zone="UTC", budget_bytes=500)

    late_llm = ScriptedLLM(text_reply("- x"))
    late = LLMSummariser(late_llm, "claude-haiku-4-5", monotonic=lambda: 100.0)
    assert "patient:" in late.summarise("", turns, [], time_zone="UTC", budget_bytes=500, deadline=101.0)
    assert late_llm.requests == []


def test_llm_summary_reports_usage_and_passes_effort(capsys: pytest.CaptureFixture[str]) -> None:
    turns = group_turns(conversation(1))
    usage = Usage(input_tokens=1500, output_tokens=120, cache_creation_input_tokens=0, cache_read_input_tokens=0)
    reply = text_reply("- 头痛 (present)")
    reply.usage = usage
    llm = ScriptedLLM(reply)
    summariser = LLMSummariser(llm, "claude-haiku-5-5", effort="low")
    assert summariser.summarise("", turns, [], time_zone="UTC", budget_bytes=500) == "- 头痛 (present)"
    (request,) = llm.requests
    assert (request.effort, request.max_tokens, request.output_schema, request.tool_choice) == ("low", 4096, None, None)
    assert summariser.last_usage == usage
    out = capsys.readouterr().out
    assert fallbacks(out) == []
    assert usage_metrics(out) == {"summary": {
        "LLMInputTokens": 1500.0, "LLMOutputTokens": 120.0, "LLMCacheReadTokens": 0.0, "LLMCacheWriteTokens": 0.0,
    }}


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        pytest.param(text_reply("- 头痛，第0轮说", stop_reason="max_tokens"), "truncated", id="cut"),
        pytest.param(text_reply("I can't help with that.", stop_reason="refusal"), "refused", id="refused"),
        pytest.param(text_reply("  "), "no_text", id="empty"),
        pytest.param(LLMUnavailable("overloaded"), "llm_error:LLMUnavailable", id="unavailable"),
    ],
)
def test_llm_summary_never_stores_a_cut_refused_or_empty_reply(
    reply: Any, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = group_turns(conversation(1))
    summary = LLMSummariser(ScriptedLLM(reply), "claude-haiku-5-5").summarise(
        "", turns, [], time_zone="UTC", budget_bytes=500
    )
    assert summary == ExtractiveSummariser().summarise("", turns, [], time_zone="UTC", budget_bytes=500)
    assert "I can't" not in summary
    assert fallbacks(capsys.readouterr().out) == [("summary", reason)]


# ------------------------------------------------------------------ summary gap
def reader_of(messages: list[MessageRecord]) -> Recorder:
    """An in-memory store holding ``messages`` in session ``p``/``s``, recording its reads."""
    store = InMemoryStore()
    store.record_turn(TurnWrite(
        session=SessionState(project_id="p", session_id="s", created_at=T0, updated_at=T0),
        expected_version=0, new_messages=messages, flow_log=[], activity_local_dates=[], now=T0,
    ))
    return Recorder(store)


def _legacy_session(all_messages: list[MessageRecord], window_from: int) -> SessionState:
    """A session whose early messages left the window before any summary existed."""
    return SessionState(project_id="p", session_id="s", created_at=T0, updated_at=T0, version=7,
                        message_count=len(all_messages), window=all_messages[window_from:])


@pytest.mark.parametrize("cached", [True, False])
def test_summary_gap_comes_from_the_cache_at_the_same_version_else_from_dynamodb(cached: bool) -> None:
    # Given a legacy session of 14 turns whose window holds only the last 11
    messages = conversation(14)
    current = _legacy_session(messages, window_from=6)
    reader = reader_of(messages)
    cache = SessionCache()
    if cached:
        cache.put("p", "s", 7, messages)
    mem = SessionMemory(extractor=RuleSymptomExtractor(), reader=reader)
    new = [msg(100, "user", "新的一轮"), msg(101, "assistant", "好的")]
    full = [*current.window, *new]
    updated = current.model_copy(update={"window": full})

    # When the next write applies the session memory
    result = mem.apply(current, updated, TurnMemory(project_id="p", session_id="s", time_zone="UTC"),
                       full_window=full, cache=cache)

    # Then the early turns are summarised, read from the cache when it matched, else from DynamoDB
    assert "第0轮" in result.summary and "第4轮" in result.summary
    assert reader.count("messages_between") == (0 if cached else 1)
    assert result.facts["summary_through"] == "m00009"


def test_summary_covers_each_message_once_across_writes() -> None:
    mem = SessionMemory(extractor=RuleSymptomExtractor(), recent_turns=2, turn_block=1)
    session = SessionState(project_id="p", session_id="s", created_at=T0, updated_at=T0)
    messages = conversation(6)
    for t in range(6):
        new = messages[2 * t: 2 * t + 2]
        full = [*session.window, *new]
        updated = session.model_copy(update={"window": full, "message_count": session.message_count + 2})
        session = mem.apply(session, updated, TurnMemory(project_id="p", session_id="s", time_zone="UTC"),
                            full_window=full)
    lines = session.summary.splitlines()
    assert [ln.split("patient: ")[1].split(" |")[0] for ln in lines] == [f"第{t}轮：头痛" for t in range(4)]


def test_summary_moves_with_the_replays_first_turn_and_never_leaves_a_turn_out_of_both() -> None:
    # Given a 25-turn session under the default window (10 recent turns, dropped 5 at a time, 16 kept)
    mem = SessionMemory(extractor=RuleSymptomExtractor())
    budget = PromptBudget()
    session = SessionState(project_id="p", session_id="s", created_at=T0, updated_at=T0)
    messages = conversation(25)
    covered: list[str | None] = []
    for t in range(25):
        new = messages[2 * t: 2 * t + 2]
        full = [*session.window, *new]
        kept = trim_window(full, keep_user_turns=budget.window_user_turns, budget_bytes=WINDOW_BUDGET_BYTES)
        updated = session.model_copy(update={"window": kept, "message_count": session.message_count + 2})
        session = mem.apply(session, updated, TurnMemory(project_id="p", session_id="s", time_zone="UTC"),
                            full_window=full)
        covered.append(session.facts.get("summary_through"))
        # When the next turn's prompt replays its recent turns from this window
        replayed = select_recent_turns(session.window, budget.recent_turns, turn_block=budget.turn_block,
                                       first_position=session.message_count - len(session.window))
        # Then the summary and the replay hold every turn so far, each exactly once
        summarised = [ln.split("patient: ")[1].split(" |")[0] for ln in session.summary.splitlines()]
        assert summarised + [turn[0].content for turn in replayed] == [f"第{i}轮：头痛" for i in range(t + 1)]
    # and the summary moved only when the replay's first turn did, 5 turns at a time: after turns 15, 20, 25
    assert covered == [None] * 14 + ["m00009"] * 5 + ["m00019"] * 5 + ["m00029"]


# ------------------------------------------------------------------- comparison
def _facts(**spec: Any) -> list[dict[str, Any]]:
    return [{"name": n, "status": s[0], "trend": s[1] if len(s) > 1 else None} for n, s in spec.items()]


def test_compare_classifies_new_resolved_persisting_trend_and_unmentioned() -> None:
    side = CompareSide(kind="current", session_id="s", at=T0)
    before = _facts(头痛=("present",), 怕冷=("present",), 咳嗽=("present",), 发烧=("denied",))
    after = _facts(头痛=("present", "worsening"), 怕冷=("denied",), 发烧=("present",), 流涕=("present",))

    result = compare_facts("pt", side, before, side, after)

    assert result.new == ["发烧", "流涕"]
    assert result.resolved == ["怕冷"]
    assert result.persisting == ["头痛"]
    assert [(c.name, c.from_trend, c.to_trend) for c in result.changed_trend] == [("头痛", None, "worsening")]
    assert result.not_mentioned == ["咳嗽"]
    dumped = result.model_dump(mode="json", by_alias=True)
    assert dumped["changed_trend"] == [{"name": "头痛", "from": None, "to": "worsening"}]


def test_a_reply_drawn_from_the_history_book_leaves_no_text_in_the_rolling_summary() -> None:
    # Given a 16-turn session whose second reply drew on the history book
    mem = SessionMemory(extractor=RuleSymptomExtractor())
    budget = PromptBudget()
    session = SessionState(project_id="p", session_id="s", created_at=T0, updated_at=T0)
    messages = conversation(16)
    messages[3] = messages[3].model_copy(update={"content": "W12周报：因冷链偏差暂停筛选。", "history": True})
    for t in range(16):
        new = messages[2 * t: 2 * t + 2]
        full = [*session.window, *new]
        kept = trim_window(full, keep_user_turns=budget.window_user_turns, budget_bytes=WINDOW_BUDGET_BYTES)
        updated = session.model_copy(update={"window": kept, "message_count": session.message_count + 2})
        session = mem.apply(session, updated, TurnMemory(project_id="p", session_id="s", time_zone="UTC"),
                            full_window=full)
    # When the turn has rolled into the summary, its question is there and the history text is not
    assert "第1轮：头痛" in session.summary
    assert "冷链" not in session.summary and "W12" not in session.summary
