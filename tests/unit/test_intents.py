"""Intent classification and call planning: rules, the LLM classifier and its fallback to the rules
(a tool call cut by max_tokens is never used)."""

from __future__ import annotations

import json
import logging
import time
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from agent_memory.chat.intents import (
    TOOL_NAME,
    CallPlan,
    Classification,
    LLMIntentClassifier,
    RuleIntentClassifier,
    plan_calls,
)
from agent_memory.domain.errors import LLMDeadlineExceeded, LLMUnavailable
from agent_memory.domain.llm import LLMResponse
from agent_memory.domain.models import Intent
from tests.fakes import ScriptedLLM, tool_reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARED_SAMPLE = Path(__file__).resolve().parents[3] / "shared/scenarios/intents.jsonl"
SAMPLE_COPY = FIXTURES / "intents_sample.jsonl"
GENERALISATION = FIXTURES / "intents_generalisation.jsonl"
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
        CallPlan(intents=(Intent.QC_TASK, Intent.QUERY_DATA), load_history=False),
        CallPlan(intents=(Intent.QUERY_HISTORY,), load_history=True),
    ]


def test_plan_splits_qc_from_trend() -> None:
    plans = plan_calls([Intent.ANALYZE_TREND, Intent.QC_TASK])
    assert plans == [
        CallPlan(intents=(Intent.QC_TASK,), load_history=False),
        CallPlan(intents=(Intent.ANALYZE_TREND,), load_history=True),
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


def _tool_reply(tool_input: Any, stop_reason: str = "tool_use", name: str = TOOL_NAME) -> LLMResponse:
    return tool_reply(name, tool_input, stop_reason=stop_reason)


def _classifier(llm: ScriptedLLM) -> LLMIntentClassifier:
    return LLMIntentClassifier(llm, model="claude-test", fallback=RuleIntentClassifier())


def test_valid_tool_use_is_the_answer() -> None:
    # Given: the model records two intents
    llm = ScriptedLLM(_tool_reply({"intents": ["QC_TASK", "QUERY_HISTORY"]}))
    # When
    result = _classifier(llm).classify("对 P005 做质控，并告诉我上个月为什么调整了随访计划")
    # Then: the model's intents, labelled llm
    assert result == Classification(intents=(Intent.QC_TASK, Intent.QUERY_HISTORY), source="llm")


def test_b22_truncated_classifier_falls_back_to_rules() -> None:
    # Given: max_tokens cut the tool call; the block carries a partial (empty) input
    llm = ScriptedLLM(_tool_reply({}, stop_reason="max_tokens"))
    # When
    result = _classifier(llm).classify("我们为什么暂停了筛选？")
    # Then: the partial object is never used; the rules answer
    assert result.source == "rules_fallback"
    assert result.fallback_reason == "truncated"
    assert result.intents == (Intent.QUERY_HISTORY,)


def test_truncated_call_is_not_used_even_if_its_input_looks_valid() -> None:
    # Given: a cut call whose partial input happens to parse
    llm = ScriptedLLM(_tool_reply({"intents": ["GENERAL"]}, stop_reason="max_tokens"))
    # When
    result = _classifier(llm).classify("P001 入组了吗？")
    # Then: the rules answer
    assert (result.source, result.intents) == ("rules_fallback", (Intent.QUERY_DATA,))


def test_llm_unavailable_falls_back_to_rules() -> None:
    # Given: the provider is overloaded
    llm = ScriptedLLM(LLMUnavailable("overloaded", retry_after_s=2.0))
    # When
    result = _classifier(llm).classify("生成本周周报")
    # Then
    assert result == Classification(
        intents=(Intent.GENERATE_REPORT,), source="rules_fallback", fallback_reason="llm_error:LLMUnavailable"
    )


def test_deadline_exceeded_falls_back_to_rules() -> None:
    llm = ScriptedLLM(LLMDeadlineExceeded("no reply in time"))
    result = _classifier(llm).classify("回顾下去年的入组情况")
    assert (result.source, result.intents) == ("rules_fallback", (Intent.ANALYZE_TREND,))


def test_unexpected_exception_falls_back_to_rules() -> None:
    llm = ScriptedLLM(RuntimeError("socket closed"))
    result = _classifier(llm).classify("头痛加重了")
    assert (result.source, result.intents) == ("rules_fallback", (Intent.CONSULTATION,))


def test_unknown_intent_name_falls_back_to_rules() -> None:
    # Given: the model invents an intent
    llm = ScriptedLLM(_tool_reply({"intents": ["QUERY_DATA", "SCHEDULE_VISIT"]}))
    # When
    result = _classifier(llm).classify("查下 P001")
    # Then
    assert (result.source, result.fallback_reason) == ("rules_fallback", "invalid_output")
    assert result.intents == (Intent.QUERY_DATA,)


@pytest.mark.parametrize(
    "tool_input",
    [
        pytest.param({"intents": []}, id="empty-list"),
        pytest.param({"intents": "QUERY_DATA"}, id="string-not-list"),
        pytest.param({"intents": [1]}, id="number-item"),
        pytest.param({"labels": ["QUERY_DATA"]}, id="missing-key"),
        pytest.param(["QUERY_DATA"], id="input-not-object"),
    ],
)
def test_malformed_tool_input_falls_back_to_rules(tool_input: Any) -> None:
    llm = ScriptedLLM(_tool_reply(tool_input))
    result = _classifier(llm).classify("查下 P001")
    assert (result.source, result.fallback_reason) == ("rules_fallback", "invalid_output")


def test_text_reply_without_tool_use_falls_back_to_rules() -> None:
    # Given: the model answered in text instead of calling the tool
    reply = LLMResponse(
        content=[{"type": "text", "text": "QUERY_DATA"}],
        stop_reason="end_turn",
        provider="offline",
        model="m",
    )
    result = _classifier(ScriptedLLM(reply)).classify("查下 P001")
    assert (result.source, result.fallback_reason) == ("rules_fallback", "no_tool_use")


def test_other_tool_name_falls_back_to_rules() -> None:
    llm = ScriptedLLM(_tool_reply({"intents": ["QUERY_DATA"]}, name="something_else"))
    assert _classifier(llm).classify("查下 P001").fallback_reason == "no_tool_use"


def test_duplicates_are_removed_and_general_dropped_beside_real_intents() -> None:
    llm = ScriptedLLM(_tool_reply({"intents": ["QUERY_DATA", "GENERAL", "QUERY_DATA"]}))
    assert _classifier(llm).classify("查下 P001").intents == (Intent.QUERY_DATA,)


def test_request_forces_the_tool_and_passes_the_deadline() -> None:
    # Given: a deadline five seconds ahead
    deadline = time.monotonic() + 5.0
    llm = ScriptedLLM(_tool_reply({"intents": ["QUERY_DATA"]}))
    classifier = LLMIntentClassifier(
        llm, model="claude-test", fallback=RuleIntentClassifier(), max_tokens=128
    )
    # When
    classifier.classify("P001 入组了吗？", deadline=deadline)
    # Then: one structured-output request with the forced tool and our deadline
    (request,) = llm.requests
    assert request.tool_choice == {"type": "tool", "name": "record_intents"}
    assert [t.name for t in request.tools] == ["record_intents"]
    assert request.deadline == deadline
    assert (request.purpose, request.model, request.max_tokens) == ("intent", "claude-test", 128)
    assert request.messages == [{"role": "user", "content": "P001 入组了吗？"}]


def test_tool_schema_enumerates_every_intent_and_requires_one() -> None:
    llm = ScriptedLLM(_tool_reply({"intents": ["GENERAL"]}))
    _classifier(llm).classify("你好")
    schema = llm.requests[0].tools[0].input_schema["properties"]["intents"]
    assert schema["items"]["enum"] == [i.value for i in Intent]
    assert schema["minItems"] == 1


def test_passed_deadline_skips_the_call() -> None:
    # Given: a deadline already in the past
    llm = ScriptedLLM()
    result = _classifier(llm).classify("查下 P001", deadline=time.monotonic() - 1)
    # Then: no LLM call; the rules answer
    assert llm.requests == []
    assert (result.source, result.fallback_reason) == ("rules_fallback", "deadline_passed")


def test_fallback_never_logs_message_text(caplog: pytest.LogCaptureFixture) -> None:
    # Given: a failing LLM and a distinctive message
    llm = ScriptedLLM(LLMUnavailable("overloaded"))
    # When
    with caplog.at_level(logging.DEBUG):
        _classifier(llm).classify("受试者 P099 主诉剧烈头痛")
    # Then: a log record carries the reason, and no record carries the text
    assert [getattr(r, "fallback_reason", None) for r in caplog.records] == ["llm_error:LLMUnavailable"]
    dumped = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "P099" not in dumped
    assert "头痛" not in dumped
