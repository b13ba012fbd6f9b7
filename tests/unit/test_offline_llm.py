"""The offline provider: labelled, deterministic, answers from the request it is given
(agent_memory.adapters.llm.offline)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.adapters.llm.offline import OFFLINE_LABEL, OfflineLLM
from agent_memory.chat.prompt import PromptBudget, assemble_prompt
from agent_memory.domain.llm import LLMRequest
from agent_memory.domain.models import HotMemory, HotMemoryLine, Intent, WeeklyReport
from agent_memory.domain.text import estimate_tokens
from agent_memory.domain.turns import SessionState

T0 = datetime(2026, 3, 20, 2, 0, tzinfo=UTC)

#: Demo-like history: several weeks mention enrolment; only W12 and W15 record what was
#: decided about slow enrolment.
REPORTS = {
    1: "[进度] 项目正式启动，EDC 上线。本周入组 0 例，累计入组 0 例（目标 60）。\n"
       "[决策] 目标入组 60 例，计划 12 个月内完成入组。",
    4: "[进度] 本周筛选 2 例（P001、P002），入组 0 例，累计入组 0 例（目标 60）。\n"
       "[决策] 化验单手工录入工作量大，决定试点 OCR 自动识别化验单。",
    6: "[进度] 本周入组 1 例（P001，2 月 5 日，A 组），累计入组 1 例（目标 60）。\n"
       "[决策] 2月3日 PI 会议决定：暂停筛选 \"间质性肺炎\" 既往史患者，暂停至方案修订 v1.1 经伦理批准。\n"
       "[问题] 曾尝试自动录入化验单，但因 OCR 精度不足失败，已回退为人工复核模式。",
    11: "[进度] 本周入组 1 例（P006），累计入组 6 例（目标 60）。\n"
        "[问题] 入组进度落后：3 月计划入组 8 例，目前仅 2 例；3 名候选者因往返交通费用和距离拒绝参加。",
    12: "[进度] 本周入组 0 例，累计入组 6 例（目标 60）。3 月新增 Query 17 条。\n"
        "[决策] 3月18日 PI 会议决定：增加受试者交通补贴（每次访视本市 200 元、外地 400 元）。原因：入组缓慢。",
    13: "[进度] 本周入组 1 例（P008），累计入组 7 例（目标 60）。交通补贴伦理备案 3 月 25 日通过。",
    15: "[进度] 本周入组 1 例（P009），累计入组 8 例（目标 60）。\n"
        "[决策] 4月8日 PI 会议决定：在门诊增派 CRC。原因：交通补贴后入组仍慢。",
}
HOT = HotMemory(project_id="p1", version=2, lines=[
    HotMemoryLine(line_id="l1", section="System Rules", text="禁止输出患者身份证号", source="admin",
                  created_at=T0 - timedelta(days=40), created_by="admin-1"),
    HotMemoryLine(line_id="l2", section="User Preferences", text="报告中不要写患者全名", source="distilled",
                  role_tag="PI", created_at=T0 - timedelta(days=18), created_by="distiller"),
    HotMemoryLine(line_id="l3", section="Active Context", text="本周重点：P005 依从性随访", source="distilled",
                  created_at=T0 - timedelta(days=3), created_by="distiller"),
])


def reports() -> list[WeeklyReport]:
    return [WeeklyReport(project_id="p1", iso_week=f"2026-W{w:02d}", summary=s,
                         created_at=T0 - timedelta(days=7 * (20 - w))) for w, s in REPORTS.items()]


def request(text: str, intents: tuple[Intent, ...], *, with_history: bool = False, max_tokens: int = 1024,
            tools: bool = False) -> LLMRequest:
    from agent_memory.chat.agent import READ_CLINICAL_DATA

    state = SessionState(project_id="p1", session_id="s1", created_at=T0, updated_at=T0)
    prompt = assemble_prompt(hot_memory=HOT, reports=reports() if with_history else None, session=state,
                             user_text=text, intents=intents, budget=PromptBudget())
    return LLMRequest(
        model="claude-test", system=prompt.system, messages=prompt.messages, max_tokens=max_tokens,
        tools=[READ_CLINICAL_DATA] if tools else [], tool_choice={"type": "auto"} if tools else None,
        metadata={"intents": [i.value for i in intents]},
    )


HISTORY_Q = "最近入组太慢了，我们之前有没有讨论过怎么解决？"


@pytest.mark.parametrize(("text", "intents", "history"), [
    ("你好", (Intent.GENERAL,), False),
    (HISTORY_Q, (Intent.QUERY_HISTORY,), True),
    ("我上次跟你说的规矩你记得吗", (Intent.MEMORY_RECALL,), False),
    ("生成本周周报", (Intent.GENERATE_REPORT,), False),
])
def test_every_offline_reply_is_labelled_offline(text: str, intents: tuple[Intent, ...], history: bool) -> None:
    # Given any chat request
    # When the offline provider answers
    response = OfflineLLM().complete(request(text, intents, with_history=history))

    # Then the reply says it is offline, in the provider field and in the text
    assert response.provider == "offline"
    assert response.text.startswith(OFFLINE_LABEL)
    assert response.stop_reason == "end_turn"


def test_same_request_gives_the_same_reply() -> None:
    # Given one request (a data question that makes a tool call) and a history request
    for req in (request("P001 入组了吗？", (Intent.QUERY_DATA,), tools=True),
                request(HISTORY_Q, (Intent.QUERY_HISTORY,), with_history=True)):
        # When two provider instances answer it
        first, second = OfflineLLM().complete(req), OfflineLLM().complete(req)

        # Then the replies are identical, tool-use ids included
        assert first == second


def test_history_question_cites_the_relevant_decision_with_its_iso_week() -> None:
    # Given demo-like reports where many weeks mention enrolment but W12 records the decision
    req = request(HISTORY_Q, (Intent.QUERY_HISTORY,), with_history=True)

    # When the offline provider answers "enrolment is too slow, did we discuss a fix?"
    text = OfflineLLM().complete(req).text

    # Then the W12 transport-subsidy decision is cited, with its ISO week on the same line
    cited = [ln for ln in text.splitlines() if ln.startswith("- ")]
    assert 1 <= len(cited) <= 3
    assert any(ln.startswith("- 2026-W12 ") and "交通补贴" in ln for ln in cited)
    # and every cited line names its week
    assert all(ln[2:10].startswith("2026-W") for ln in cited)


def test_history_question_about_the_screening_pause_cites_w06() -> None:
    # Given the same reports
    req = request("我们为什么暂停了筛选？", (Intent.QUERY_HISTORY,), with_history=True)

    # When asked why screening was paused
    text = OfflineLLM().complete(req).text

    # Then the first citation is the W06 decision
    cited = [ln for ln in text.splitlines() if ln.startswith("- ")]
    assert cited[0].startswith("- 2026-W06 决策：")
    assert "暂停筛选" in cited[0]


def test_memory_recall_answers_from_the_hot_memory_lines() -> None:
    # Given hot memory with a preference about patients' full names
    req = request("关于患者全名的规矩你还记得吗？", (Intent.MEMORY_RECALL,))

    # When the offline provider answers a memory question
    text = OfflineLLM().complete(req).text

    # Then it quotes the matching hot-memory line
    assert "报告中不要写患者全名" in text
    assert text.startswith(OFFLINE_LABEL + "记得")


def test_data_question_calls_read_clinical_data_for_the_subject() -> None:
    # Given a data question with the tool available
    req = request("P001 入组了吗？", (Intent.QUERY_DATA,), tools=True)

    # When the offline provider answers
    response = OfflineLLM().complete(req)

    # Then it asks for the subject's record through the tool
    assert response.stop_reason == "tool_use"
    assert [(u["name"], u["input"]) for u in response.tool_uses] == [("read_clinical_data", {"subject_id": "P001"})]


def test_data_answer_comes_from_the_tool_result() -> None:
    # Given the tool result for P001 fed back
    req = request("P001 入组了吗？", (Intent.QUERY_DATA,), tools=True)
    use = OfflineLLM().complete(req).tool_uses[0]
    result = '{"subject": {"subject_id": "P001", "status": "enrolled", "enrolment_date": "2026-02-05"}}'
    follow = replace(req, messages=req.messages + [
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": result}]},
    ])

    # When the provider answers again
    text = OfflineLLM().complete(follow).text

    # Then the answer carries the enrolment date read from the tool
    assert "P001 已入组" in text and "2026-02-05" in text


def test_tiny_max_tokens_truncates_with_stop_reason_max_tokens() -> None:
    # Given the full reply to a memory question
    full = OfflineLLM().complete(request("我上次跟你说的规矩你记得吗", (Intent.MEMORY_RECALL,))).text
    assert estimate_tokens(full) > 6

    # When the same request allows only 6 output tokens
    response = OfflineLLM().complete(request("我上次跟你说的规矩你记得吗", (Intent.MEMORY_RECALL,), max_tokens=6))

    # Then the reply is cut, flagged max_tokens, within the limit and a prefix of the full reply
    assert response.stop_reason == "max_tokens"
    assert estimate_tokens(response.text) <= 6
    assert full.startswith(response.text)
    assert response.text


def test_demo_history_question_about_slow_enrolment_cites_the_w12_subsidy() -> None:
    # Given the demo project's real history book (47 weeks, nearly all mention enrolment)
    from infra.local.demo.weekly_reports import demo_iit_weekly_reports

    state = SessionState(project_id="demo-iit", session_id="s1", created_at=T0, updated_at=T0)
    prompt = assemble_prompt(hot_memory=HOT, reports=demo_iit_weekly_reports(), session=state, user_text=HISTORY_Q,
                             intents=(Intent.QUERY_HISTORY,), budget=PromptBudget())
    req = LLMRequest(model="claude-test", system=prompt.system, messages=prompt.messages, max_tokens=1024,
                     metadata={"intents": ["QUERY_HISTORY"]})

    # When the offline provider answers the slow-enrolment question
    text = OfflineLLM().complete(req).text

    # Then the W12 transport-subsidy decision is among the citations
    assert any(ln.startswith("- 2026-W12 ") and "交通补贴" in ln for ln in text.splitlines())


def test_repeated_question_gets_a_new_tool_use_id() -> None:
    # Given a conversation where "P001 入组了吗？" was already answered with a tool call
    first = request("P001 入组了吗？", (Intent.QUERY_DATA,), tools=True)
    use = OfflineLLM().complete(first).tool_uses[0]
    result = '{"subject": {"subject_id": "P001", "status": "enrolled", "enrolment_date": "2026-02-05"}}'
    again = replace(first, messages=[
        first.messages[0],
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": result}]},
        {"role": "assistant", "content": [{"type": "text", "text": "P001 已入组。"}]},
        {"role": "user", "content": [{"type": "text", "text": "P001 入组了吗？"}]},
    ])

    # When the same question is asked again
    second = OfflineLLM().complete(again).tool_uses[0]

    # Then the new tool_use id differs from the one already in the conversation
    # (tool_use ids must be unique within a conversation, or results cannot be paired)
    assert second["id"] != use["id"]


def test_structured_output_request_gets_an_empty_object_so_the_caller_falls_back() -> None:
    # Given a structured-output request (output_config.format with a JSON schema),
    schema = {"type": "object", "properties": {"intents": {"type": "array"}}, "required": ["intents"]}
    structured = LLMRequest(
        model="claude-haiku-5-5", system=[], messages=[{"role": "user", "content": "P001 入组了吗？"}],
        max_tokens=2048, output_schema=schema, effort="low", purpose="intent",
    )

    # When the offline provider answers it,
    response = OfflineLLM().complete(structured)

    # Then the reply is the empty JSON object (it fails the schema's "required": the caller uses its
    # rules), a normal end of turn, no usage and no tool call.
    assert response.content == [{"type": "text", "text": "{}"}]
    assert response.stop_reason == "end_turn"
    assert response.provider == "offline"
    assert response.usage is None
    assert response.tool_uses == []
    assert not response.refused


def test_consultation_reply_names_the_symptoms_of_the_session_block_sent_with_the_message() -> None:
    # Given a consultation prompt whose session block (with the user's message) lists two symptoms
    session = SessionState(
        project_id="clinic", session_id="s1", created_at=T0, updated_at=T0, type="consultation",
        facts={"symptoms": [{"name": "头痛", "status": "present"}, {"name": "发烧", "status": "denied"}]},
    )
    prompt = assemble_prompt(
        hot_memory=HotMemory(project_id="clinic"), reports=None, session=session, user_text="还是头痛",
        intents=(Intent.CONSULTATION,), budget=PromptBudget(), now=T0, time_zone="Asia/Shanghai",
    )
    request = LLMRequest(model="offline", system=prompt.system, messages=prompt.messages, max_tokens=512,
                         metadata={"intents": ["CONSULTATION"]})

    # When the offline provider answers
    reply = OfflineLLM().complete(request).text

    # Then it names the symptoms from the session block, not a generic phrase
    assert "头痛: present" in reply and "发烧: DENIED" in reply


# ---------------------------------------------------------------- history answers a person can use


def _cited(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("- ")]


def test_history_answer_cites_the_decisions_in_date_order_with_their_text() -> None:
    # Given: reports where W12 and W15 record decisions about slow enrolment
    req = request("入组一直很慢，我们先后做过哪些决定？", (Intent.QUERY_HISTORY,), with_history=True)
    # When: answered offline
    cited = _cited(OfflineLLM().complete(req).text)
    # Then: decision points only, oldest week first, each with its week, section and own words (no ids)
    assert [c[2:10] for c in cited] == ["2026-W04", "2026-W12", "2026-W15"]
    assert all(c[10:14] == " 决策：" for c in cited)
    assert cited[1] == (
        "- 2026-W12 决策：3月18日 PI 会议决定：增加受试者交通补贴（每次访视本市 200 元、外地 400 元）。原因：入组缓慢。"
    )
    assert "在门诊增派 CRC" in cited[2]


@pytest.mark.parametrize(
    ("question", "week", "words"),
    [
        ("Why did we pause screening?", "2026-W06", "暂停筛选"),
        ("What did we decide about the transport subsidy?", "2026-W12", "交通补贴"),
        ("When did we decide to add another coordinator?", "2026-W15", "增派 CRC"),
        ("What went wrong with the OCR data entry pilot?", "2026-W06", "OCR"),
    ],
)
def test_english_history_question_finds_the_chinese_report(question: str, week: str, words: str) -> None:
    # Given: Chinese weekly reports and an English question (no Chinese word in it)
    req = request(question, (Intent.QUERY_HISTORY,), with_history=True)
    # When: answered offline
    text = OfflineLLM().complete(req).text
    # Then: an English lead-in and the matching Chinese point with its week
    assert "From the weekly reports (history book), in date order:" in text
    assert any(c.startswith(f"- {week} ") and words in c for c in _cited(text)), text


def test_bilingual_lexicon_expands_by_concept_in_both_directions() -> None:
    from agent_memory.domain.lexicon import concept_forms

    # Given / When / Then: an English stem brings the Chinese forms, a Chinese word the English ones
    assert {"筛选", "暂停"} <= set(concept_forms("Why was Screening paused?"))
    assert {"deviation", "protocol"} <= set(concept_forms("方案偏离有几次"))
    assert concept_forms("hello there") == []
    # a stem matches at a word start only ("site" is not found inside "requisite")
    assert "中心" not in concept_forms("a requisite form")


def test_trend_answer_cites_more_weeks_in_date_order() -> None:
    # Given: weekly enrolment progress over many weeks
    req = request("回顾一下累计入组的变化", (Intent.ANALYZE_TREND,), with_history=True)
    # When: answered offline
    cited = _cited(OfflineLLM().complete(req).text)
    # Then: more than three weeks, oldest first
    weeks = [c[2:10] for c in cited]
    assert len(weeks) > 3 and weeks == sorted(weeks)
