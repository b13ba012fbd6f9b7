"""Symptom facts: rule and LLM extractors, merge, prompt block; relative dates resolved against the
message's local date."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from agent_memory.adapters.llm.offline import OfflineLLM
from agent_memory.consultation.symptoms import (
    LLMSymptomExtractor,
    RuleSymptomExtractor,
    SymptomFact,
    SymptomOutput,
    canonical_name,
    facts_block,
    merge_facts,
)
from agent_memory.consultation.symptoms.dates import resolve_phrase
from agent_memory.consultation.symptoms.rules import load_lexicon
from agent_memory.domain.errors import LLMDeadlineExceeded, LLMUnavailable
from agent_memory.domain.llm import LLMResponse, Usage
from tests.fakes import ScriptedLLM, json_reply, text_reply
from tests.unit.structured_support import assert_structured_request, assert_valid_reply, fallbacks, usage_metrics

CST = timezone(timedelta(hours=8))
# A message at 2026-03-10 07:30 +08:00, which is 2026-03-09T23:30Z.
B11_AT = datetime(2026, 3, 10, 7, 30, tzinfo=CST)
AT = datetime(2026, 3, 10, 9, 0, tzinfo=CST)
RULES = RuleSymptomExtractor()
DXY = Path(__file__).resolve().parents[3] / "shared/data/dxy_train.jsonl"


def extract(text: str, question: str | None = None, message_id: str = "m1", at: datetime = AT) -> list[SymptomFact]:
    return RULES.extract(text, message_id=message_id, at_local=at, question=question)


def statuses(text: str, question: str | None = None) -> dict[str, str]:
    return {f.name: f.status for f in extract(text, question)}


def json_response(symptoms: list[dict[str, Any]], stop_reason: str = "end_turn", usage: Usage | None = None
                  ) -> LLMResponse:
    """A structured-output reply: ``{"symptoms": [...]}`` as the reply's JSON text."""
    return json_reply({"symptoms": symptoms}, stop_reason=stop_reason, usage=usage)


# --------------------------------------------------------------------------------------
# Relative dates against the message's LOCAL date; code dates beat LLM dates
# --------------------------------------------------------------------------------------


def _assert_b11(facts: list[SymptomFact]) -> None:
    by_name = {f.name: f for f in facts}
    fever, cough = by_name["发烧"], by_name["咳嗽"]
    assert fever.status == "present"
    assert fever.onset == "2026-03-09"  # not 03-08 (UTC date - 1), not the run date - 1, not 03-15
    assert fever.onset_approximate is False
    assert fever.onset_phrase == "昨天开始"
    assert fever.evidence == ["msg-b11"]
    assert cough.status == "present"
    assert cough.onset_range == ("2026-03-02", "2026-03-08")
    assert cough.onset == "2026-03-02"
    assert cough.onset_approximate is True
    assert cough.onset_phrase == "上周起"
    assert cough.evidence == ["msg-b11"]


def test_b11_rules_resolve_against_the_local_date() -> None:
    # Given: a message sent at 07:30 local time (23:30 UTC the day before)
    assert B11_AT.astimezone(UTC).date().isoformat() == "2026-03-09"
    # When: the rule extractor reads it
    facts = RULES.extract("孩子昨天开始发烧，上周起咳嗽", message_id="msg-b11", at_local=B11_AT)
    # Then: 昨天 is 03-09 and 上周 is Mon 03-02 .. Sun 03-08, phrases and message id kept
    _assert_b11(facts)


def test_b11_llm_dates_are_overridden_by_code() -> None:
    # Given: an LLM that writes a date 2026-03-15 into every item anyway (the schema asks for no
    # date: a key outside it is ignored, never stored)
    llm = ScriptedLLM(
        json_response(
            [
                {"name": "发烧", "status": "present", "onset_phrase": "昨天开始", "onset": "2026-03-15", "trend": None},
                {"name": "咳嗽", "status": "present", "onset_phrase": "上周起", "onset": "2026-03-15", "trend": None},
            ]
        )
    )
    extractor = LLMSymptomExtractor(llm, "claude-test", fallback=RULES)
    # When
    facts = extractor.extract("孩子昨天开始发烧，上周起咳嗽", message_id="msg-b11", at_local=B11_AT)
    # Then: the LLM answered, but every date was computed in code from the quoted phrases
    assert extractor.last_source == "llm"
    _assert_b11(facts)
    assert "2026-03-15" not in json.dumps([f.model_dump() for f in facts])


def test_b11_llm_date_without_a_usable_phrase_is_never_stored() -> None:
    # Given: the model gives a date but no phrase (发烧) or a phrase that is not in the message (咳嗽)
    llm = ScriptedLLM(
        json_response(
            [
                {"name": "发烧", "status": "present", "onset_phrase": None, "onset": "2026-03-15"},
                {"name": "咳嗽", "status": "present", "onset_phrase": "三天前", "onset": "2026-03-15"},
            ]
        )
    )
    extractor = LLMSymptomExtractor(llm, "claude-test", fallback=RULES)
    # When
    facts = extractor.extract("孩子昨天开始发烧，上周起咳嗽", message_id="msg-b11", at_local=B11_AT)
    # Then: the dates come from what the rules date in the same message
    _assert_b11(facts)


def test_request_asks_for_json_and_carries_question_and_local_date(capsys: pytest.CaptureFixture[str]) -> None:
    # Given: a valid JSON reply with usage
    payload = {"symptoms": [{"name": "打喷嚏", "status": "denied", "onset_phrase": None, "trend": None}]}
    usage = Usage(input_tokens=980, output_tokens=41, cache_creation_input_tokens=0, cache_read_input_tokens=0)
    llm = ScriptedLLM(json_reply(payload, usage=usage))
    extractor = LLMSymptomExtractor(llm, "claude-test", fallback=RULES, effort="low")
    # When
    facts = extractor.extract("没有", message_id="m9", at_local=B11_AT, question="孩子现在打喷嚏吗?")
    # Then: one structured-output request (schema, no forced tool), the answer applied, usage kept
    (request,) = llm.requests
    assert_structured_request(request, SymptomOutput, task="symptoms")
    assert_valid_reply(request, payload)
    assert (request.effort, request.max_tokens) == ("low", 4096)
    body = json.loads(request.messages[0]["content"])
    assert body == {"message_date": "2026-03-10", "doctor_question": "孩子现在打喷嚏吗?", "patient_message": "没有"}
    assert [(f.name, f.status, f.evidence) for f in facts] == [("打喷嚏", "denied", ["m9"])]
    assert (extractor.last_source, extractor.last_usage) == ("llm", usage)
    out = capsys.readouterr().out
    assert fallbacks(out) == []
    assert usage_metrics(out) == {"symptoms": {
        "LLMInputTokens": 980.0, "LLMOutputTokens": 41.0, "LLMCacheReadTokens": 0.0, "LLMCacheWriteTokens": 0.0,
    }}


def test_schema_asks_for_no_date() -> None:
    llm = ScriptedLLM(json_response([]))
    LLMSymptomExtractor(llm, "m", fallback=RULES).extract("你好", message_id="m", at_local=AT)
    schema = llm.requests[0].output_schema
    assert schema is not None
    item = schema["properties"]["symptoms"]["items"]
    assert item["required"] == ["name", "status", "onset_phrase", "trend"]
    assert "onset" not in item["properties"]
    assert item["properties"]["status"] == {"enum": ["present", "denied"]}


def test_llm_names_are_mapped_onto_the_lexicon() -> None:
    llm = ScriptedLLM(
        json_response(
            [
                {"name": "头疼", "status": "present", "trend": "worsening"},
                {"name": "不出汗", "status": "present"},
                {"name": "fever", "status": "denied"},
            ]
        )
    )
    facts = LLMSymptomExtractor(llm, "m", fallback=RULES).extract(
        "头疼得更厉害了，不出汗，不发烧", message_id="m", at_local=AT
    )
    assert [(f.name, f.status, f.trend) for f in facts] == [
        ("头痛", "present", "worsening"),
        ("无汗", "present", None),
        ("发烧", "denied", None),
    ]
    assert canonical_name("恶寒") == "怕冷"


# --------------------------------------------------------------------------------------
# LLM fallback: nothing partial is applied
# --------------------------------------------------------------------------------------

FALLBACK_TEXT = "头痛、怕冷、不出汗，没有咳嗽"


@pytest.mark.parametrize(
    ("llm", "reason"),
    [
        (ScriptedLLM(LLMUnavailable("overloaded")), "llm_error:LLMUnavailable"),
        (ScriptedLLM(LLMDeadlineExceeded("slow")), "llm_error:LLMDeadlineExceeded"),
        (ScriptedLLM(RuntimeError("boom")), "llm_error:RuntimeError"),
        # Truncated: the text says something else (and parses); it must not be used.
        (ScriptedLLM(json_response([{"name": "咳嗽", "status": "present"}], stop_reason="max_tokens")), "truncated"),
        (ScriptedLLM(text_reply('{"symptoms": [{"name": "咳嗽", "sta', stop_reason="max_tokens")), "truncated"),
        (ScriptedLLM(text_reply("I can't help with that.", stop_reason="refusal")), "refused"),
        (ScriptedLLM(text_reply("头痛")), "invalid_json"),
        (
            ScriptedLLM(LLMResponse(content=[{"type": "thinking", "thinking": "…", "signature": "s"}],
                                    stop_reason="end_turn", provider="anthropic", model="m")),
            "no_text",
        ),
        (ScriptedLLM(json_response([{"name": "咳嗽", "status": "maybe"}])), "invalid_output"),
        (ScriptedLLM(json_response([{"name": "咳嗽", "status": "present", "trend": "sideways"}])), "invalid_output"),
        (ScriptedLLM(json_response([{"name": "  ", "status": "present"}])), "invalid_output"),
        (ScriptedLLM(json_reply({"findings": []})), "invalid_output"),
    ],
    ids=["unavailable", "deadline", "any-exception", "max-tokens-valid-text", "max-tokens-cut-text", "refusal",
         "not-json", "no-text", "bad-status", "bad-trend", "blank-name", "missing-key"],
)
def test_llm_extractor_falls_back_to_rules(llm: Any, reason: str, capsys: pytest.CaptureFixture[str]) -> None:
    extractor = LLMSymptomExtractor(llm, "claude-test", fallback=RULES)
    facts = extractor.extract(FALLBACK_TEXT, message_id="m1", at_local=AT)
    assert facts == extract(FALLBACK_TEXT)
    assert {f.name: f.status for f in facts} == {
        "头痛": "present",
        "怕冷": "present",
        "无汗": "present",
        "咳嗽": "denied",
    }
    assert extractor.last_source == "rules_fallback"
    assert extractor.last_fallback_reason == reason
    assert fallbacks(capsys.readouterr().out) == [("symptoms", reason)]


def test_offline_provider_cannot_answer_and_the_rules_do() -> None:
    # The offline provider gives no valid structured answer (what it sends back is its own).
    extractor = LLMSymptomExtractor(OfflineLLM(), "claude-test", fallback=RULES)
    facts = extractor.extract(FALLBACK_TEXT, message_id="m1", at_local=AT)
    assert facts == extract(FALLBACK_TEXT)
    assert extractor.last_source == "rules_fallback"
    assert extractor.last_fallback_reason in {"refused", "no_text", "invalid_json", "invalid_output"}


def test_truncated_reply_keeps_its_usage() -> None:
    usage = Usage(input_tokens=700, output_tokens=4096)
    llm = ScriptedLLM(json_response([{"name": "咳嗽", "status": "present"}], stop_reason="max_tokens", usage=usage))
    extractor = LLMSymptomExtractor(llm, "claude-test", fallback=RULES)
    extractor.extract(FALLBACK_TEXT, message_id="m1", at_local=AT)
    assert (extractor.last_fallback_reason, extractor.last_usage) == ("truncated", usage)


def test_llm_extractor_passed_deadline_uses_rules_without_calling(capsys: pytest.CaptureFixture[str]) -> None:
    llm = ScriptedLLM(json_response([{"name": "咳嗽", "status": "present"}]))
    extractor = LLMSymptomExtractor(llm, "m", fallback=RULES)
    facts = extractor.extract(FALLBACK_TEXT, message_id="m1", at_local=AT, deadline=0.0)
    assert llm.requests == []
    assert facts == extract(FALLBACK_TEXT)
    assert fallbacks(capsys.readouterr().out) == [("symptoms", "deadline_passed")]


# --------------------------------------------------------------------------------------
# The facts survive the next turn
# --------------------------------------------------------------------------------------


def test_seed_002_symptoms_accumulate_and_trend_updates() -> None:
    # Given: the first turn of a consultation
    turn1 = extract("头痛、怕冷、不出汗", message_id="t1")
    assert [(f.name, f.status) for f in turn1] == [("头痛", "present"), ("怕冷", "present"), ("无汗", "present")]
    facts = merge_facts([], turn1)
    snapshot = [f.model_copy(deep=True) for f in facts]  # a diagnosis taken after turn 1
    # When: the patient comes back with "头痛加重了"
    facts = merge_facts(facts, extract("头痛加重了", message_id="t2"))
    # Then: all three are still held, 头痛 worsening with both turns as evidence
    assert [(f.name, f.status, f.trend) for f in facts] == [
        ("头痛", "present", "worsening"),
        ("怕冷", "present", None),
        ("无汗", "present", None),
    ]
    assert facts[0].evidence == ["t1", "t2"]
    # And the turn-1 snapshot is untouched
    assert [f.model_dump() for f in snapshot] == [f.model_dump() for f in merge_facts([], turn1)]
    assert snapshot[0].trend is None and snapshot[0].evidence == ["t1"]


def test_seed_002_through_the_llm_fallback_path_too() -> None:
    extractor = LLMSymptomExtractor(OfflineLLM(), "m", fallback=RULES)
    facts = merge_facts([], extractor.extract("头痛、怕冷、不出汗", message_id="t1", at_local=AT))
    facts = merge_facts(facts, extractor.extract("头痛加重了", message_id="t2", at_local=AT))
    assert {f.name: (f.status, f.trend) for f in facts} == {
        "头痛": ("present", "worsening"),
        "怕冷": ("present", None),
        "无汗": ("present", None),
    }


# --------------------------------------------------------------------------------------
# Negation, idioms, resolution, trend (hand-written; Chinese and English)
# --------------------------------------------------------------------------------------

P, D = "present", "denied"

NEGATION_CASES: list[tuple[str, dict[str, str]]] = [
    # plain cues
    ("没有发烧", {"发烧": D}),
    ("孩子没发烧", {"发烧": D}),
    ("无咳嗽", {"咳嗽": D}),
    ("不咳嗽", {"咳嗽": D}),
    ("否认头痛", {"头痛": D}),
    ("未见皮疹", {"皮疹": D}),
    ("并无呕吐", {"呕吐": D}),
    ("宝宝未发热", {"发烧": D}),
    ("不再咳嗽", {"咳嗽": D}),
    ("没有发现孩子有发烧", {"发烧": D}),
    ("不存在呕吐的症状", {"呕吐": D}),
    ("孩子最近没有精神萎靡", {"精神萎靡": D}),
    ("无明显咳嗽", {"咳嗽": D}),
    # scope: several symptoms under one cue
    ("没有发烧也没有咳嗽", {"发烧": D, "咳嗽": D}),
    ("不咳不喘", {"咳嗽": D, "喘气": D}),
    ("无发热、咳嗽", {"发烧": D, "咳嗽": D}),
    ("无发热咳嗽流涕", {"发烧": D, "咳嗽": D, "流涕": D}),
    ("没有发烧和呕吐", {"发烧": D, "呕吐": D}),
    ("咳嗽、发烧都没有", {"咳嗽": D, "发烧": D}),
    # scope ends at a comma / contrast / an assertion
    ("咳嗽，但没有发烧", {"咳嗽": P, "发烧": D}),
    ("没有发烧，咳嗽两天了", {"发烧": D, "咳嗽": P}),
    ("没有发热，流鼻涕", {"发烧": D, "流涕": P}),
    ("宝宝咳嗽，发烧没有", {"咳嗽": P, "发烧": D}),
    ("不发烧就是咳嗽", {"发烧": D, "咳嗽": P}),
    ("无发热有咳嗽", {"发烧": D, "咳嗽": P}),
    ("没吃药就发烧了", {"发烧": P}),
    # idioms with a negation that stay positive
    ("高烧不退", {"发烧": P}),
    ("不退烧", {"发烧": P}),
    ("吃了药还是没退烧", {"发烧": P}),
    ("烧不退", {"发烧": P}),
    ("咳个不停", {"咳嗽": P}),
    ("不停地咳", {"咳嗽": P}),
    ("止不住地咳嗽", {"咳嗽": P}),
    ("吃不下", {"厌食": P}),
    ("晚上睡不好", {"烦躁不安": P}),
    ("不出汗", {"无汗": P}),
    ("没有食欲", {"厌食": P}),
    ("头痛，浑身不舒服", {"头痛": P}),
    ("不太咳嗽", {"咳嗽": P}),
    ("咳嗽不严重", {"咳嗽": P}),
    ("有没有可能是发烧", {"发烧": P}),
    # double negation
    ("不是没有发烧", {"发烧": P}),
    ("没有不咳嗽的时候", {"咳嗽": P}),
    ("不是不出汗", {"无汗": D}),
    # resolution: present, improving - never denied
    ("退烧了", {"发烧": P}),
    ("不烧了", {"发烧": P}),
    ("烧退了", {"发烧": P}),
    ("咳嗽没有了", {"咳嗽": P}),
    ("已经不咳了", {"咳嗽": P}),
    # denials inside a body-part phrase, normal states
    ("嗓子不疼", {"咽部不适": D}),
    ("肚子也不疼", {"腹痛": D}),
    ("大便不稀", {"稀便": D}),
    ("嗓子不太疼", {"咽部不适": P}),
    ("头不痛了", {"头痛": P}),
    ("发烧倒是没有", {"发烧": D}),
    ("体温正常，精神很好", {"发烧": D, "精神萎靡": D}),
    ("前天发烧，今天体温正常了", {"发烧": P}),
    # TCM / adult terms
    ("恶寒无汗，口干口苦", {"怕冷": P, "无汗": P, "口干": P, "口苦": P}),
    ("咽痛，鼻塞，乏力", {"咽部不适": P, "鼻塞": P, "乏力": P}),
    ("畏寒，头疼", {"怕冷": P, "头痛": P}),
    # English
    ("no fever", {"发烧": D}),
    ("he doesn't have a fever", {"发烧": D}),
    ("denies headache, nausea and vomiting", {"头痛": D, "呕吐": D}),
    ("without cough", {"咳嗽": D}),
    ("no cough, fever or runny nose", {"咳嗽": D, "发烧": D, "流涕": D}),
    ("no fever but a bad cough", {"发烧": D, "咳嗽": P}),
    ("not coughing anymore", {"咳嗽": D}),
    ("the fever won't go down", {"发烧": P}),
    ("can't stop coughing", {"咳嗽": P}),
    ("no appetite and a sore throat", {"厌食": P, "咽部不适": P}),
    ("she is not sweating and has chills", {"无汗": P, "怕冷": P}),
    ("the fever is gone", {"发烧": P}),
    ("it's not that he has no fever", {"发烧": P}),
]


@pytest.mark.parametrize(("text", "expected"), NEGATION_CASES, ids=[c[0] for c in NEGATION_CASES])
def test_negation_scope_and_idioms(text: str, expected: dict[str, str]) -> None:
    assert statuses(text) == expected


def test_there_are_at_least_forty_negation_sentences() -> None:
    assert len(NEGATION_CASES) >= 40


@pytest.mark.parametrize(
    ("text", "name", "trend"),
    [
        ("退烧了", "发烧", "improving"),
        ("不烧了", "发烧", "improving"),
        ("烧退了", "发烧", "improving"),
        ("咳嗽没有了", "咳嗽", "improving"),
        ("不吐了", "呕吐", "improving"),
        ("头不痛了", "头痛", "improving"),
        ("前天发烧，今天体温正常了", "发烧", "improving"),
        ("咳嗽好多了", "咳嗽", "improving"),
        ("头痛减轻了", "头痛", "improving"),
        ("吃药后咳嗽缓解", "咳嗽", "improving"),
        ("头痛加重了", "头痛", "worsening"),
        ("咳嗽比昨天更厉害", "咳嗽", "worsening"),
        ("越来越咳", "咳嗽", "worsening"),
        ("头痛，今天更厉害了", "头痛", "worsening"),
        ("the cough is getting worse", "咳嗽", "worsening"),
        ("headache is better today", "头痛", "improving"),
        ("咳嗽没有好转", "咳嗽", None),
        ("吃了退烧药", "发烧", None),
        ("不退烧", "发烧", None),
        ("高烧不退", "发烧", None),
    ],
)
def test_trend(text: str, name: str, trend: str | None) -> None:
    fact = {f.name: f for f in extract(text)}[name]
    assert fact.status == "present"
    assert fact.trend == trend


# --------------------------------------------------------------------------------------
# Onset dates
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "onset", "approximate", "rng"),
    [
        ("今天开始咳嗽", "2026-03-10", False, None),
        ("昨晚开始发烧", "2026-03-09", False, None),
        ("前天开始发烧", "2026-03-08", False, None),
        ("三天前开始咳嗽", "2026-03-07", True, None),
        ("两天前开始流鼻涕", "2026-03-08", True, None),
        ("一周前开始咳嗽", "2026-03-03", True, None),
        ("半个月前开始咳嗽", "2026-02-23", True, None),
        ("上周起咳嗽", "2026-03-02", True, ("2026-03-02", "2026-03-08")),
        ("这周开始咳嗽", "2026-03-09", True, ("2026-03-09", "2026-03-10")),
        ("本周头痛", "2026-03-09", True, ("2026-03-09", "2026-03-10")),
        ("前几天开始咳嗽", "2026-03-04", True, ("2026-03-04", "2026-03-08")),
        ("上周四开始发烧", "2026-03-05", False, None),
        ("咳嗽三天了", "2026-03-07", True, None),
        ("3月2日开始发烧", "2026-03-02", False, None),
        ("fever since yesterday", "2026-03-09", False, None),
        ("coughing for 3 days", "2026-03-07", True, None),
        ("started vomiting 2 days ago", "2026-03-08", True, None),
        ("rash since last week", "2026-03-02", True, ("2026-03-02", "2026-03-08")),
    ],
)
def test_onset(text: str, onset: str, approximate: bool, rng: tuple[str, str] | None) -> None:
    facts = extract(text)
    assert len(facts) == 1
    assert (facts[0].onset, facts[0].onset_approximate, facts[0].onset_range) == (onset, approximate, rng)
    assert facts[0].onset_phrase


def test_onset_of_a_change_is_not_an_onset_and_denials_carry_none() -> None:
    facts = {f.name: f for f in extract("今天头痛加重了，昨天开始不发烧")}
    assert facts["头痛"].onset is None and facts["头痛"].trend == "worsening"
    assert facts["发烧"].status == "denied" and facts["发烧"].onset is None


def test_resolve_phrase_is_relative_to_the_given_local_date() -> None:
    got = resolve_phrase("昨天", datetime(2026, 1, 1, 0, 10, tzinfo=CST))
    assert got is not None and got.start.isoformat() == "2025-12-31"
    assert resolve_phrase("没有时间词", AT) is None


# --------------------------------------------------------------------------------------
# Short answers resolved against the doctor's question
# --------------------------------------------------------------------------------------

SNEEZE_Q = "孩子现在打喷嚏吗?"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("是的", {"打喷嚏": P}),
        ("是", {"打喷嚏": P}),
        ("对", {"打喷嚏": P}),
        ("有", {"打喷嚏": P}),
        ("有的", {"打喷嚏": P}),
        ("嗯", {"打喷嚏": P}),
        ("不是", {"打喷嚏": D}),
        ("没有", {"打喷嚏": D}),
        ("没", {"打喷嚏": D}),
        ("无", {"打喷嚏": D}),
        ("不", {"打喷嚏": D}),
        ("没有。", {"打喷嚏": D}),
        ("孩子现在没有打喷嚏", {"打喷嚏": D}),
        ("孩子现在打喷嚏", {"打喷嚏": P}),
        ("孩子现在没有", {"打喷嚏": D}),
        ("发现了,孩子确实有过", {"打喷嚏": P}),
        ("没有，就是有点咳嗽", {"打喷嚏": D, "咳嗽": P}),
        ("是的，还流鼻涕", {"打喷嚏": P, "流涕": P}),
        ("不清楚", {}),
    ],
)
def test_short_answer_resolves_against_the_question(answer: str, expected: dict[str, str]) -> None:
    assert statuses(answer, question=SNEEZE_Q) == expected


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        ("请问您的小孩存不存在发烧的症状?", "不存在发烧的症状", {"发烧": D}),
        ("有没有发现您的宝宝有咳嗽的症状?", "没有发现宝宝咳嗽", {"咳嗽": D}),
        ("您小孩最近肺部湿啰音吗?", "小孩最近没有肺部湿啰音", {"肺部湿啰音": D}),
        ("您的宝宝是否厌食?", "是的", {"厌食": P}),
        ("您的孩子是否咽部不适?", "不是", {"咽部不适": D}),
        ("发烧咳嗽吗？", "没有", {"发烧": D, "咳嗽": D}),
        ("头痛加重了吗？", "没有", {}),  # not worse - not "no headache"
        ("头痛加重了吗？", "是的", {"头痛": P}),
        ("还发烧吗？", "不烧了", {"发烧": P}),
        ("还发烧吗？", "没有了", {"发烧": P}),
        ("Does he have a fever?", "No", {"发烧": D}),
        ("Does he have a fever?", "yes, since yesterday", {"发烧": P}),
        ("建议多喝水，注意休息，如有发烧及时就医。", "嗯", {}),  # advice, not a question
    ],
)
def test_answers_in_the_dxy_style_and_others(question: str, answer: str, expected: dict[str, str]) -> None:
    assert statuses(answer, question=question) == expected


def test_short_answer_takes_trend_and_onset_from_the_answer() -> None:
    facts = extract("昨天开始的", question="宝宝发烧吗？")
    assert [(f.name, f.status, f.onset) for f in facts] == [("发烧", "present", "2026-03-09")]
    facts = extract("是的", question="头痛加重了吗？")
    assert facts[0].trend == "worsening"
    facts = extract("没有了", question="还发烧吗？")
    assert facts[0].trend == "improving"


# --------------------------------------------------------------------------------------
# merge_facts
# --------------------------------------------------------------------------------------


def fact(name: str, status: str = "present", ev: str = "m1", **kw: Any) -> SymptomFact:
    return SymptomFact(name=name, status=status, evidence=[ev], **kw)


def test_merge_newer_status_wins_both_ways() -> None:
    facts = merge_facts([fact("咳嗽")], [fact("咳嗽", "denied", "m2")])
    assert facts[0].status == "denied"
    facts = merge_facts(facts, [fact("咳嗽", "present", "m3")])
    assert facts[0].status == "present"
    assert facts[0].evidence == ["m1", "m2", "m3"]


def test_merge_evidence_is_deduplicated_in_order() -> None:
    facts = merge_facts([fact("咳嗽", ev="m1")], [fact("咳嗽", ev="m2"), fact("咳嗽", ev="m1")])
    assert facts[0].evidence == ["m1", "m2"]


def test_merge_trend_newer_replaces_absent_keeps_denial_clears() -> None:
    facts = merge_facts([fact("头痛", trend="worsening")], [fact("头痛", ev="m2", trend="improving")])
    assert facts[0].trend == "improving"
    facts = merge_facts(facts, [fact("头痛", ev="m3")])
    assert facts[0].trend == "improving"
    facts = merge_facts(facts, [fact("头痛", "denied", "m4")])
    assert facts[0].trend is None


def test_merge_keeps_the_earliest_onset() -> None:
    first = fact("咳嗽", onset="2026-03-07", onset_approximate=True, onset_phrase="三天前")
    earlier = fact("咳嗽", ev="m2", onset="2026-03-02", onset_approximate=True,
                   onset_range=("2026-03-02", "2026-03-08"), onset_phrase="上周起")
    later = fact("咳嗽", ev="m3", onset="2026-03-09", onset_phrase="昨天")
    facts = merge_facts([first], [earlier])
    assert (facts[0].onset, facts[0].onset_range, facts[0].onset_phrase) == (
        "2026-03-02", ("2026-03-02", "2026-03-08"), "上周起")
    facts = merge_facts(facts, [later, fact("咳嗽", ev="m4")])
    assert facts[0].onset == "2026-03-02" and facts[0].onset_phrase == "上周起"
    assert merge_facts([fact("发烧")], [later.model_copy(update={"name": "发烧"})])[0].onset == "2026-03-09"


def test_merge_order_is_stable_and_inputs_untouched() -> None:
    current = [fact("头痛"), fact("怕冷")]
    new = [fact("发烧", ev="m2"), fact("头痛", "denied", "m2"), fact("无汗", ev="m2")]
    before = [f.model_dump() for f in current] + [f.model_dump() for f in new]
    merged = merge_facts(current, new)
    assert [f.name for f in merged] == ["头痛", "怕冷", "发烧", "无汗"]
    assert [f.model_dump() for f in current] + [f.model_dump() for f in new] == before
    assert merge_facts([], []) == []


# --------------------------------------------------------------------------------------
# Prompt block and lexicon
# --------------------------------------------------------------------------------------


def test_facts_block_is_compact_and_complete() -> None:
    facts = merge_facts(
        RULES.extract("孩子昨天开始发烧，上周起咳嗽，没有呕吐", message_id="m1", at_local=B11_AT),
        RULES.extract("咳嗽加重了", message_id="m2", at_local=B11_AT),
    )
    block = facts_block(facts)
    lines = block.splitlines()
    assert lines[1:] == [
        "- 发烧: 有, 起病 2026-03-09 (昨天开始)",
        "- 咳嗽: 有, 加重, 起病约 2026-03-02~2026-03-08 (上周起)",
        "- 呕吐: 无 (否认)",
    ]
    assert facts_block([]) == ""


def test_every_lexicon_name_is_producible() -> None:
    lexicon = load_lexicon()
    for name in lexicon.label_names:
        assert name in {f.name for f in extract(f"孩子{name}")}, name
    # The extra file loads on top of the packaged DXY lexicon: TCM / adult names exist too.
    assert {"怕冷", "无汗", "乏力", "口干"} <= set(lexicon.names)


@pytest.mark.skipif(not DXY.is_file(), reason=f"{DXY} not present")
def test_every_label_name_of_the_data_is_in_the_vocabulary() -> None:
    names = set()
    for line in DXY.read_text("utf-8").splitlines():
        row = json.loads(line)
        names |= set(row["explicit_symptoms"]) | set(row["implicit_symptoms"])
    assert names <= load_lexicon().label_names


def test_extraction_is_deterministic_and_fast_enough_for_long_messages() -> None:
    text = ("孩子昨天开始发烧，没有咳嗽，流鼻涕，精神不好。" * 150)[:3000]
    first = extract(text)
    assert first == extract(text)
    assert {f.name: f.status for f in first} == {"发烧": P, "咳嗽": D, "流涕": P, "精神萎靡": P}


@pytest.mark.skipif(not DXY.is_file(), reason=f"{DXY} not present")
def test_bench_figures_on_a_slice_of_the_data() -> None:
    from bench.symptoms import load, score

    figures = score(load(DXY)[:40], RULES).figures()
    assert set(figures) == {"symptom_recall_present", "symptom_recall_denied", "symptom_flip_rate", "symptom_precision"}
    assert figures["symptom_recall_present"] >= 0.95
    assert figures["symptom_recall_denied"] >= 0.95
    assert figures["symptom_flip_rate"] <= 0.01
