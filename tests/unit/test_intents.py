"""Intent classification and call planning: rules, the LLM classifier (a structured output: one JSON
document) and its fallback to the rules (a reply cut by max_tokens is never used; every fallback is
counted as LLMFallback)."""

from __future__ import annotations

import json
import logging
import time
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from agent_memory.chat.intents import (
    CallPlan,
    Classification,
    IntentOutput,
    LLMIntentClassifier,
    RuleIntentClassifier,
    plan_calls,
)
from agent_memory.domain.errors import LLMDeadlineExceeded, LLMUnavailable
from agent_memory.domain.llm import LLMResponse, Usage
from agent_memory.domain.models import Intent
from tests.fakes import ScriptedLLM, json_reply, text_reply
from tests.unit.structured_support import assert_structured_request, assert_valid_reply, fallbacks, usage_metrics

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARED_SAMPLE = Path(__file__).resolve().parents[3] / "shared/scenarios/intents.jsonl"
SAMPLE_COPY = FIXTURES / "intents_sample.jsonl"
GENERALISATION = FIXTURES / "intents_generalisation.jsonl"
KINDS = FIXTURES / "intents_kinds.jsonl"
DXY = Path(__file__).resolve().parents[3] / "shared/data/dxy_train.jsonl"

RULES = RuleIntentClassifier()


def _sample_path() -> Path | None:
    """The shared scenario file when present (/work/shared beside the repo), else the in-repo copy."""
    if SHARED_SAMPLE.is_file():
        return SHARED_SAMPLE
    if SAMPLE_COPY.is_file():
        return SAMPLE_COPY
    return None


def _load(path: Path | None) -> list[dict[str, Any]]:
    if path is None:
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _cases(path: Path | None) -> list[Any]:
    rows = _load(path)
    if not rows:
        return [
            pytest.param(
                None,
                marks=pytest.mark.skip(reason=f"no scenario file: neither {SHARED_SAMPLE} nor {SAMPLE_COPY}"),
                id="missing",
            )
        ]
    return [pytest.param(row, id=f"{n:03d}-{row['text'][:40]}") for n, row in enumerate(rows, 1)]


def _assert_routing(row: dict[str, Any]) -> None:
    # When: the rule classifier classifies the message and the calls are planned
    result = RULES.classify(row["text"])
    plans = plan_calls(result.intents)
    # Then: the intents are the labelled set and history is loaded exactly as labelled
    assert set(result.intents) == {Intent(i) for i in row["intents"]}, row["text"]
    if row["history"] is True:
        assert len(plans) == 1 and plans[0].load_history, plans
    elif row["history"] is False:
        assert not any(p.load_history for p in plans), plans
    else:
        assert row["history"] == "split"
        assert len(plans) == 2, plans
        assert Intent.QC_TASK in plans[0].intents and not plans[0].load_history
        assert plans[1].load_history and Intent.QC_TASK not in plans[1].intents


# ---------------------------------------------------------------- scenario files


@pytest.mark.parametrize("row", _cases(_sample_path()))
def test_sample_scenario_is_routed_as_labelled(row: dict[str, Any]) -> None:
    # Given: one labelled message of shared/scenarios/intents.jsonl
    _assert_routing(row)


@pytest.mark.parametrize("row", _cases(GENERALISATION))
def test_generalisation_message_is_routed_as_labelled(row: dict[str, Any]) -> None:
    # Given: one labelled message written independently of the sample file
    _assert_routing(row)


@pytest.mark.parametrize("row", _cases(KINDS))
def test_message_of_each_routing_kind_is_routed_as_labelled(row: dict[str, Any]) -> None:
    # Given: one labelled message written per kind (time anchors: a year ago, week N, W23, last
    # quarter, a holiday, since the start; trend and comparison; reasons and decisions; lessons;
    # QC + history in either order and in English; a subject's own past; traps)
    _assert_routing(row)


def test_kinds_set_covers_every_kind_with_history_and_traps() -> None:
    # Given: the per-kind file
    rows = _load(KINDS)
    kinds = {r["kind"] for r in rows}
    # Then: it covers the time anchors, trends, splits and the subject-past trap
    assert {"anchor_year_ago", "anchor_week", "anchor_quarter", "anchor_holiday", "anchor_start"} <= kinds
    assert {"trend_direction", "trend_compare_past", "split_en", "split_zh", "subject_past"} <= kinds
    assert {r["history"] for r in rows} == {True, False, "split"}


def test_in_repo_sample_copy_matches_shared_file() -> None:
    # Given: the shared scenario file (only beside the repo) and the in-repo copy
    if not SHARED_SAMPLE.is_file():
        pytest.skip(f"{SHARED_SAMPLE} absent; the in-repo copy is used instead")
    # Then: the copy has every shared scenario, so CI without shared/ tests the same lines
    assert _load(SAMPLE_COPY) == _load(SHARED_SAMPLE)


def test_generalisation_set_is_large_and_distinct_from_the_sample() -> None:
    # Given: both fixture files
    general = [r["text"] for r in _load(GENERALISATION)]
    sample = {r["text"] for r in _load(SAMPLE_COPY)}
    # Then: at least 60 different messages, none copied from the sample
    assert len(general) >= 60
    assert len(set(general)) == len(general)
    assert not sample & set(general)


def test_real_patient_self_reports_are_consultations() -> None:
    # Given: real paediatric consultations (DXY), first patient turn of each
    if not DXY.is_file():
        pytest.skip(f"{DXY} absent")
    reports = [next(t["content"] for t in row["turns"] if t["role"] == "patient") for row in _load(DXY)]
    # When: classified by the rules
    hits = sum(RULES.classify(text).intents == (Intent.CONSULTATION,) for text in reports)
    # Then: (nearly) all are consultations and none is routed to project data or history
    assert hits / len(reports) >= 0.97


# ---------------------------------------------------------------- rule classifier: traps by kind


def test_rules_report_source_rules() -> None:
    # Given / When: any message
    result = RULES.classify("P001 入组了吗？")
    # Then: the rule classifier labels its answer
    assert result == Classification(intents=(Intent.QUERY_DATA,), source="rules")


def test_full_width_text_is_normalised_before_matching() -> None:
    # Given: a message typed with full-width letters and digits
    # When / Then: it classifies like its half-width form
    assert RULES.classify("ｒｕｎ ＱＣ ｏｎ Ｐ００４").intents == RULES.classify("run QC on P004").intents
    assert RULES.classify("ｒｕｎ ＱＣ ｏｎ Ｐ００４").intents == (Intent.QC_TASK,)


def test_subjects_own_past_is_patient_data_not_history() -> None:
    # Given: a question about a subject's past medical history
    result = RULES.classify("P011 以前有没有糖尿病病史？")
    # Then: it is a data lookup and loads no history
    assert result.intents == (Intent.QUERY_DATA,)


def test_time_word_alone_does_not_make_a_question_historical() -> None:
    # Given: "上次" referring to a subject's last visit
    result = RULES.classify("P027 上次访视的体重是多少？")
    # Then: it is current data
    assert result.intents == (Intent.QUERY_DATA,)


def test_users_own_rule_is_memory_recall_not_history() -> None:
    # Given: the user asks about a rule they gave the assistant
    result = RULES.classify("我上次跟你讲的汇报只写结论那条，你还记得不？")
    # Then: hot memory answers it
    assert result.intents == (Intent.MEMORY_RECALL,)


def test_remembering_a_project_decision_is_history() -> None:
    # Given: "do you remember" about a decision the project made
    result = RULES.classify("你还记得我们当时为什么暂停了二中心的筛选吗？")
    # Then: the history book answers it
    assert result.intents == (Intent.QUERY_HISTORY,)


def test_qc_on_last_weeks_entries_needs_no_history() -> None:
    # Given: a QC request on data entered last week
    result = RULES.classify("把上周录入的 CRF 做一遍逻辑核查")
    # Then: QC only
    assert result.intents == (Intent.QC_TASK,)


def test_current_week_report_is_not_a_trend() -> None:
    # Given: a report request for this week
    assert RULES.classify("帮我把这周的周报写一下").intents == (Intent.GENERATE_REPORT,)


def test_summary_of_a_long_past_period_is_a_trend() -> None:
    # Given: a summary request over the past three months
    assert RULES.classify("总结一下过去三个月各中心的入组情况").intents == (Intent.ANALYZE_TREND,)


def test_symptoms_in_subject_data_are_not_a_consultation() -> None:
    # Given: a CRC asking about an AE that names a symptom
    result = RULES.classify("P014 的头晕 AE 记录是几级？")
    # Then: it is data, not a consultation
    assert result.intents == (Intent.QUERY_DATA,)


def test_subjects_own_past_event_why_is_data_not_history() -> None:
    # Given: "why" about a subject's missed visit (no project decision involved)
    assert RULES.classify("P019 上个月的访视为什么没做？").intents == (Intent.QUERY_DATA,)


def test_symptom_lexicon_is_loaded_from_the_package() -> None:
    # Given: the packaged lexicon (agent_memory/consultation/symptoms/data) and one of its colloquial forms
    raw = resources.files("agent_memory.consultation.symptoms.data").joinpath("symptom_lexicon.json").read_text("utf-8")
    assert "流清涕" in json.loads(raw)["流涕"]
    # Then: the form alone marks a consultation
    assert RULES.classify("这两天一直流清涕").intents == (Intent.CONSULTATION,)


def test_parent_describing_a_child_is_a_consultation() -> None:
    # Given: a parent's message with a child and symptoms
    assert RULES.classify("宝宝这两天鼻塞，晚上老是哭闹").intents == (Intent.CONSULTATION,)


def test_unmatched_message_is_general() -> None:
    # Given: small talk
    assert RULES.classify("辛苦啦，周末愉快").intents == (Intent.GENERAL,)


def test_multi_intent_keeps_clause_order_without_duplicates() -> None:
    # Given: two requests in one message, the data one twice
    result = RULES.classify("P003 入组了吗？P003 的访视数据呢？顺便出一下本周周报")
    # Then: each intent once, in the order the requests appear
    assert result.intents == (Intent.QUERY_DATA, Intent.GENERATE_REPORT)


def test_rule_classifier_accepts_and_ignores_deadline() -> None:
    # Given: an already passed deadline
    result = RULES.classify("查下 P001", deadline=time.monotonic() - 10)
    # Then: the rules still answer (they never call out)
    assert result.intents == (Intent.QUERY_DATA,)


# ---------------------------------------------------------------- plan_calls


def test_plan_splits_qc_from_history() -> None:
    # Given: QC plus a history question plus a data lookup
    plans = plan_calls([Intent.QC_TASK, Intent.QUERY_HISTORY, Intent.QUERY_DATA])
    # Then: the QC part (with the other non-history intents) runs first without history
    assert plans == [
        CallPlan(intents=(Intent.QC_TASK, Intent.QUERY_DATA), load_history=False, others=(Intent.QUERY_HISTORY,)),
        CallPlan(intents=(Intent.QUERY_HISTORY,), load_history=True, others=(Intent.QC_TASK, Intent.QUERY_DATA)),
    ]


def test_plan_splits_qc_from_trend() -> None:
    plans = plan_calls([Intent.ANALYZE_TREND, Intent.QC_TASK])
    assert plans == [
        CallPlan(intents=(Intent.QC_TASK,), load_history=False, others=(Intent.ANALYZE_TREND,)),
        CallPlan(intents=(Intent.ANALYZE_TREND,), load_history=True, others=(Intent.QC_TASK,)),
    ]


def test_plan_for_qc_alone_loads_no_history() -> None:
    assert plan_calls([Intent.QC_TASK]) == [CallPlan(intents=(Intent.QC_TASK,), load_history=False)]


def test_plan_for_history_alone_loads_history() -> None:
    assert plan_calls([Intent.QUERY_HISTORY]) == [
        CallPlan(intents=(Intent.QUERY_HISTORY,), load_history=True)
    ]


def test_plan_for_history_with_report_is_one_call_with_history() -> None:
    # Given: a report plus a trend (no QC): nothing needs isolating
    plans = plan_calls([Intent.GENERATE_REPORT, Intent.ANALYZE_TREND])
    assert plans == [CallPlan(intents=(Intent.GENERATE_REPORT, Intent.ANALYZE_TREND), load_history=True)]


def test_plan_for_current_work_loads_no_history() -> None:
    plans = plan_calls([Intent.QUERY_DATA, Intent.GENERATE_REPORT, Intent.MEMORY_RECALL])
    assert plans == [
        CallPlan(
            intents=(Intent.QUERY_DATA, Intent.GENERATE_REPORT, Intent.MEMORY_RECALL), load_history=False
        )
    ]


def test_plan_for_empty_input_is_general() -> None:
    assert plan_calls([]) == [CallPlan(intents=(Intent.GENERAL,), load_history=False)]


def test_plan_ignores_duplicate_intents() -> None:
    assert plan_calls([Intent.QUERY_DATA, Intent.QUERY_DATA]) == [
        CallPlan(intents=(Intent.QUERY_DATA,), load_history=False)
    ]


# ---------------------------------------------------------------- LLM classifier


USAGE = Usage(input_tokens=412, output_tokens=37, cache_creation_input_tokens=0, cache_read_input_tokens=1024)


def _classifier(llm: ScriptedLLM) -> LLMIntentClassifier:
    return LLMIntentClassifier(llm, model="claude-test", fallback=RuleIntentClassifier())


def test_valid_json_reply_is_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    # Given: the model answers with a JSON document naming two intents
    payload = {"intents": ["QC_TASK", "QUERY_HISTORY"]}
    llm = ScriptedLLM(json_reply(payload, usage=USAGE))
    # When
    result = _classifier(llm).classify("对 P005 做质控，并告诉我上个月为什么调整了随访计划")
    # Then: the model's intents, labelled llm, with the call's usage; no fallback counted
    assert result == Classification(intents=(Intent.QC_TASK, Intent.QUERY_HISTORY), source="llm", usage=USAGE)
    (request,) = llm.requests
    assert_structured_request(request, IntentOutput, task="intent")
    assert_valid_reply(request, payload)
    out = capsys.readouterr().out
    assert fallbacks(out) == []
    assert usage_metrics(out) == {"intent": {
        "LLMInputTokens": 412.0, "LLMOutputTokens": 37.0, "LLMCacheReadTokens": 1024.0, "LLMCacheWriteTokens": 0.0,
    }}


def test_b22_truncated_classifier_falls_back_to_rules(capsys: pytest.CaptureFixture[str]) -> None:
    # Given: max_tokens cut the reply mid-document
    reply = text_reply('{"intents": ["QUERY_HIS', stop_reason="max_tokens")
    llm = ScriptedLLM(reply)
    # When
    result = _classifier(llm).classify("我们为什么暂停了筛选？")
    # Then: the partial document is never used; the rules answer; the fallback is counted
    assert result.source == "rules_fallback"
    assert result.fallback_reason == "truncated"
    assert result.intents == (Intent.QUERY_HISTORY,)
    assert fallbacks(capsys.readouterr().out) == [("intent", "truncated")]


def test_truncated_reply_is_not_used_even_if_its_text_is_valid(capsys: pytest.CaptureFixture[str]) -> None:
    # Given: a cut reply whose text happens to parse and validate
    llm = ScriptedLLM(json_reply({"intents": ["GENERAL"]}, stop_reason="max_tokens", usage=USAGE))
    # When
    result = _classifier(llm).classify("P001 入组了吗？")
    # Then: the rules answer; the tokens it cost are still reported
    assert (result.source, result.intents, result.usage) == ("rules_fallback", (Intent.QUERY_DATA,), USAGE)
    out = capsys.readouterr().out
    assert fallbacks(out) == [("intent", "truncated")]
    assert usage_metrics(out)["intent"]["LLMInputTokens"] == 412.0


def test_refusal_falls_back_to_rules(capsys: pytest.CaptureFixture[str]) -> None:
    # Given: the model declines (stop_reason refusal), with some text
    llm = ScriptedLLM(text_reply("I can't help with that.", stop_reason="refusal"))
    # When
    result = _classifier(llm).classify("生成本周周报")
    # Then
    assert result == Classification(
        intents=(Intent.GENERATE_REPORT,), source="rules_fallback", fallback_reason="refused"
    )
    assert fallbacks(capsys.readouterr().out) == [("intent", "refused")]


def test_llm_unavailable_falls_back_to_rules(capsys: pytest.CaptureFixture[str]) -> None:
    # Given: the provider is overloaded
    llm = ScriptedLLM(LLMUnavailable("overloaded", retry_after_s=2.0))
    # When
    result = _classifier(llm).classify("生成本周周报")
    # Then
    assert result == Classification(
        intents=(Intent.GENERATE_REPORT,), source="rules_fallback", fallback_reason="llm_error:LLMUnavailable"
    )
    assert fallbacks(capsys.readouterr().out) == [("intent", "llm_error:LLMUnavailable")]


def test_deadline_exceeded_falls_back_to_rules() -> None:
    llm = ScriptedLLM(LLMDeadlineExceeded("no reply in time"))
    result = _classifier(llm).classify("回顾下去年的入组情况")
    assert (result.source, result.intents) == ("rules_fallback", (Intent.ANALYZE_TREND,))


def test_unexpected_exception_falls_back_to_rules() -> None:
    llm = ScriptedLLM(RuntimeError("socket closed"))
    result = _classifier(llm).classify("头痛加重了")
    assert (result.source, result.intents) == ("rules_fallback", (Intent.CONSULTATION,))


def test_unknown_intent_name_falls_back_to_rules(capsys: pytest.CaptureFixture[str]) -> None:
    # Given: the model invents an intent (a schema violation)
    llm = ScriptedLLM(json_reply({"intents": ["QUERY_DATA", "SCHEDULE_VISIT"]}))
    # When
    result = _classifier(llm).classify("查下 P001")
    # Then
    assert (result.source, result.fallback_reason) == ("rules_fallback", "invalid_output")
    assert result.intents == (Intent.QUERY_DATA,)
    assert fallbacks(capsys.readouterr().out) == [("intent", "invalid_output")]


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param({"intents": []}, id="empty-list"),
        pytest.param({"intents": "QUERY_DATA"}, id="string-not-list"),
        pytest.param({"intents": [1]}, id="number-item"),
        pytest.param({"labels": ["QUERY_DATA"]}, id="missing-key"),
        pytest.param(["QUERY_DATA"], id="document-not-object"),
    ],
)
def test_malformed_document_falls_back_to_rules(payload: Any, capsys: pytest.CaptureFixture[str]) -> None:
    llm = ScriptedLLM(json_reply(payload))
    result = _classifier(llm).classify("查下 P001")
    assert (result.source, result.fallback_reason) == ("rules_fallback", "invalid_output")
    assert fallbacks(capsys.readouterr().out) == [("intent", "invalid_output")]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("QUERY_DATA", "invalid_json", id="prose-not-json"),
        pytest.param('{"intents": ["QUERY_DATA"]} trailing', "invalid_json", id="json-then-text"),
        pytest.param("   ", "no_text", id="blank-text"),
    ],
)
def test_text_that_is_not_one_json_document_falls_back_to_rules(
    text: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _classifier(ScriptedLLM(text_reply(text))).classify("查下 P001")
    assert (result.source, result.fallback_reason, result.intents) == ("rules_fallback", reason, (Intent.QUERY_DATA,))
    assert fallbacks(capsys.readouterr().out) == [("intent", reason)]


def test_reply_with_only_a_tool_call_has_no_text_and_falls_back() -> None:
    # Given: a reply without any text block (e.g. only thinking, or a stray tool_use)
    reply = LLMResponse(
        content=[{"type": "thinking", "thinking": "…", "signature": "sig"},
                 {"type": "tool_use", "id": "toolu_1", "name": "record_intents", "input": {"intents": ["QUERY_DATA"]}}],
        stop_reason="end_turn",
        provider="anthropic",
        model="m",
    )
    result = _classifier(ScriptedLLM(reply)).classify("查下 P001")
    assert (result.source, result.fallback_reason) == ("rules_fallback", "no_text")


def test_thinking_blocks_beside_the_text_are_ignored() -> None:
    reply = LLMResponse(
        content=[{"type": "thinking", "thinking": "the user asks for data", "signature": "sig"},
                 {"type": "text", "text": '{"intents": ["QUERY_DATA"]}'}],
        stop_reason="end_turn",
        provider="anthropic",
        model="m",
    )
    assert _classifier(ScriptedLLM(reply)).classify("查下 P001") == Classification(
        intents=(Intent.QUERY_DATA,), source="llm"
    )


def test_duplicates_are_removed_and_general_dropped_beside_real_intents() -> None:
    llm = ScriptedLLM(json_reply({"intents": ["QUERY_DATA", "GENERAL", "QUERY_DATA"]}))
    assert _classifier(llm).classify("查下 P001").intents == (Intent.QUERY_DATA,)


def test_request_asks_for_json_without_forcing_a_tool_and_passes_the_deadline() -> None:
    # Given: a deadline five seconds ahead and a per-task effort
    deadline = time.monotonic() + 5.0
    llm = ScriptedLLM(json_reply({"intents": ["QUERY_DATA"]}))
    classifier = LLMIntentClassifier(
        llm, model="claude-test", fallback=RuleIntentClassifier(), max_tokens=128, effort="low"
    )
    # When
    classifier.classify("P001 入组了吗？", deadline=deadline)
    # Then: one structured-output request: schema, no tool, our deadline and effort
    (request,) = llm.requests
    assert_structured_request(request, IntentOutput, task="intent")
    assert request.deadline == deadline
    assert (request.purpose, request.model, request.max_tokens, request.effort) == (
        "intent", "claude-test", 128, "low"
    )
    assert request.messages == [{"role": "user", "content": "P001 入组了吗？"}]


def test_default_request_leaves_room_for_thinking_and_the_default_effort() -> None:
    llm = ScriptedLLM(json_reply({"intents": ["GENERAL"]}))
    _classifier(llm).classify("你好")
    (request,) = llm.requests
    assert request.max_tokens == 2048
    assert request.effort is None


def test_schema_enumerates_every_intent_and_requires_one() -> None:
    llm = ScriptedLLM(json_reply({"intents": ["GENERAL"]}))
    _classifier(llm).classify("你好")
    schema = llm.requests[0].output_schema
    assert schema is not None
    assert schema["required"] == ["intents"]
    assert schema["additionalProperties"] is False
    intents = schema["properties"]["intents"]
    assert intents["items"]["enum"] == [i.value for i in Intent]
    assert intents["minItems"] == 1


def test_passed_deadline_skips_the_call(capsys: pytest.CaptureFixture[str]) -> None:
    # Given: a deadline already in the past
    llm = ScriptedLLM()
    result = _classifier(llm).classify("查下 P001", deadline=time.monotonic() - 1)
    # Then: no LLM call; the rules answer; the fallback is counted
    assert llm.requests == []
    assert (result.source, result.fallback_reason) == ("rules_fallback", "deadline_passed")
    assert fallbacks(capsys.readouterr().out) == [("intent", "deadline_passed")]


def test_fallback_never_logs_message_text(caplog: pytest.LogCaptureFixture) -> None:
    # Given: a failing LLM and a distinctive message
    llm = ScriptedLLM(LLMUnavailable("overloaded"))
    # When
    with caplog.at_level(logging.DEBUG):
        _classifier(llm).classify("受试者 P099 主诉剧烈头痛")
    # Then: a log record carries the reason, and no record carries the text
    reasons = [r.fallback_reason for r in caplog.records if hasattr(r, "fallback_reason")]
    assert reasons == ["llm_error:LLMUnavailable"]
    dumped = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "P099" not in dumped
    assert "头痛" not in dumped
