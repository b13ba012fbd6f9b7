"""The one structured LLM call (agent_memory.structured): schemas reduced to what structured outputs
accept, replies parsed and validated with the same Pydantic model, typed failures, and the usage
and fallback metrics."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from anthropic.lib._parse._transform import transform_schema
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from agent_memory.chat.intents import IntentOutput
from agent_memory.consultation.symptoms import SymptomOutput
from agent_memory.domain.errors import LLMTruncated, LLMUnavailable
from agent_memory.domain.llm import LLMResponse, SystemBlock, Usage
from agent_memory.domain.models import Intent
from agent_memory.jobs.llm_tasks import CompactOutput, ExtractOutput, ReportOutput
from agent_memory.structured import (
    StructuredInvalidJSON,
    StructuredNoText,
    StructuredOutputError,
    StructuredOutputInvalid,
    StructuredRefused,
    StructuredTruncated,
    UsageTally,
    call_structured,
    failure_reason,
    failure_usage,
    output_schema,
    parse_reply,
    record_fallback,
    record_usage,
    reduce_schema,
    schema_problems,
    structured_request,
)
from tests.fakes import ScriptedLLM, json_reply, text_reply
from tests.unit.structured_support import emitted, fallbacks, usage_metrics

USAGE = Usage(input_tokens=10, output_tokens=20, cache_creation_input_tokens=30, cache_read_input_tokens=40)


class Inner(BaseModel):
    """An inner object."""

    count: int = Field(ge=0, le=9)
    tags: list[str] = Field(default_factory=list, max_length=3)


class Outer(BaseModel):
    """An outer object."""

    name: str = Field(min_length=1, max_length=40, description="a name")
    kind: Literal["a", "b"]
    note: str | None = None
    when: str = Field(json_schema_extra={"format": "date"})
    pattern_field: str = Field(pattern=r"^P\d{3}$")
    inner: Inner
    inners: list[Inner] = Field(min_length=2)


def _walk(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found += _walk(value)
    elif isinstance(node, list):
        for value in node:
            found += _walk(value)
    return found


# ------------------------------------------------------------------ schema
def test_every_object_forbids_additional_properties_and_requires_every_property() -> None:
    schema = output_schema(Outer)
    objects = [n for n in _walk(schema) if n.get("type") == "object"]
    assert len(objects) == 3  # Outer, inner, inners[]
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    assert schema["required"] == ["name", "kind", "note", "when", "pattern_field", "inner", "inners"]


def test_refs_are_inlined_and_titles_and_defaults_dropped() -> None:
    schema = output_schema(Outer)
    keys = {k for n in _walk(schema) for k in n}
    assert not keys & {"$ref", "$defs", "title", "default"}
    assert schema["properties"]["inner"]["properties"]["count"]["type"] == "integer"


def test_unsupported_constraints_move_into_the_description() -> None:
    props = output_schema(Outer)["properties"]
    # lengths, bounds, patterns, maxItems and minItems > 1: not sent as keywords, stated for the model
    assert props["name"] == {"type": "string", "description": "a name\n\n{maxLength: 40, minLength: 1}"}
    assert props["pattern_field"] == {"type": "string", "description": '{pattern: "^P\\\\d{3}$"}'}
    assert props["inner"]["properties"]["count"] == {"type": "integer", "description": "{maximum: 9, minimum: 0}"}
    assert props["inner"]["properties"]["tags"]["description"] == "{maxItems: 3}"
    assert "minItems" not in props["inners"] and props["inners"]["description"] == "{minItems: 2}"
    # supported: a date format, an enum of primitives, a nullable union
    assert props["when"] == {"type": "string", "format": "date"}
    assert props["kind"] == {"enum": ["a", "b"]}
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_one_of_becomes_any_of_and_min_items_one_is_kept() -> None:
    reduced = reduce_schema({
        "type": "object",
        "properties": {
            "v": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "xs": {"type": "array", "items": {"type": "string", "format": "hex"}, "minItems": 1, "uniqueItems": True},
        },
    })
    assert reduced["properties"]["v"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert reduced["properties"]["xs"] == {
        "type": "array", "items": {"type": "string", "description": '{format: "hex"}'}, "minItems": 1,
        "description": "{uniqueItems: true}",
    }


def test_a_recursive_schema_is_refused() -> None:
    class Node(BaseModel):
        children: list[Node]

    with pytest.raises(ValueError, match="recursive schema"):
        output_schema(Node)


@pytest.mark.parametrize("model", [IntentOutput, SymptomOutput, ExtractOutput, CompactOutput, ReportOutput, Outer])
def test_every_structured_output_schema_is_accepted(model: type[BaseModel]) -> None:
    schema = output_schema(model)
    assert schema_problems(schema) == []
    Draft202012Validator.check_schema(schema)
    # the SDK's own reduction finds nothing to strip or add
    assert transform_schema(schema) == schema


def test_schema_problems_names_what_would_be_rejected() -> None:
    bad = {
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": 1}, "b": {"type": "array", "minItems": 2}},
        "required": ["a"],
    }
    assert schema_problems(bad) == [
        "$: additionalProperties is not false",
        "$: required does not list every property",
        "$.a: keyword 'minLength' not supported",
        "$.b: minItems 2 (only 0 or 1)",
    ]


# ------------------------------------------------------------------ request and reply
def test_structured_request_forces_no_tool() -> None:
    request = structured_request(
        IntentOutput, task="intent", model="m", system=[SystemBlock("s", "x")], content="hi", max_tokens=99,
        effort="low", deadline=5.0,
    )
    assert (request.tool_choice, request.tools, request.purpose, request.effort, request.deadline) == (
        None, [], "intent", "low", 5.0
    )
    assert request.output_schema == output_schema(IntentOutput)
    assert request.messages == [{"role": "user", "content": "hi"}]


def test_valid_reply_is_validated_with_the_model() -> None:
    reply = json_reply({"intents": ["QUERY_DATA"]}, usage=USAGE)
    assert parse_reply(reply, IntentOutput) == IntentOutput(intents=[Intent.QUERY_DATA])


@pytest.mark.parametrize(
    ("reply", "error", "reason"),
    [
        (json_reply({"intents": ["QUERY_DATA"]}, stop_reason="max_tokens", usage=USAGE), StructuredTruncated,
         "truncated"),
        (json_reply({"intents": ["QUERY_DATA"]}, stop_reason="model_context_window_exceeded", usage=USAGE),
         StructuredTruncated, "truncated"),
        (text_reply('{"intents": ["QUERY_DATA"]}', stop_reason="refusal"), StructuredRefused, "refused"),
        (LLMResponse(content=[{"type": "thinking", "thinking": "x", "signature": "s"}], stop_reason="end_turn",
                     provider="anthropic", model="m"), StructuredNoText, "no_text"),
        (text_reply("```json\n{}\n```"), StructuredInvalidJSON, "invalid_json"),
        (text_reply('{"intents": ["QUERY_DATA"]'), StructuredInvalidJSON, "invalid_json"),
        (json_reply({"intents": []}), StructuredOutputInvalid, "invalid_output"),
        (json_reply(None), StructuredOutputInvalid, "invalid_output"),
    ],
    ids=["max-tokens", "context-window", "refusal", "no-text", "fenced", "cut-json", "empty-list", "null"],
)
def test_unusable_replies_raise_typed_failures(reply: LLMResponse, error: type[Exception], reason: str) -> None:
    reply.usage = reply.usage or USAGE
    with pytest.raises(error) as caught:
        parse_reply(reply, IntentOutput)
    assert failure_reason(caught.value) == reason
    assert failure_usage(caught.value) == USAGE
    assert isinstance(caught.value, StructuredOutputError | LLMTruncated)


def test_failure_reason_of_a_failed_call_names_its_class() -> None:
    assert failure_reason(LLMUnavailable("overloaded")) == "llm_error:LLMUnavailable"
    assert failure_reason(RuntimeError("boom")) == "llm_error:RuntimeError"
    assert failure_usage(RuntimeError("boom")) is None


def test_call_structured_records_usage_under_the_task(capsys: pytest.CaptureFixture[str]) -> None:
    llm = ScriptedLLM(json_reply({"intents": ["QC_TASK"]}, usage=USAGE))
    request = structured_request(IntentOutput, task="intent", model="m", system=[], content="x", max_tokens=64)
    answer = call_structured(llm, request, IntentOutput)
    assert [i.value for i in answer.value.intents] == ["QC_TASK"]
    assert answer.usage == USAGE
    assert usage_metrics(capsys.readouterr().out) == {"intent": {
        "LLMInputTokens": 10.0, "LLMOutputTokens": 20.0, "LLMCacheWriteTokens": 30.0, "LLMCacheReadTokens": 40.0,
    }}


def test_call_structured_records_the_usage_of_a_cut_reply_too(capsys: pytest.CaptureFixture[str]) -> None:
    llm = ScriptedLLM(json_reply({"intents": ["QC_TASK"]}, stop_reason="max_tokens", usage=USAGE))
    request = structured_request(IntentOutput, task="intent", model="m", system=[], content="x", max_tokens=64)
    with pytest.raises(StructuredTruncated):
        call_structured(llm, request, IntentOutput)
    assert usage_metrics(capsys.readouterr().out)["intent"]["LLMOutputTokens"] == 20.0


# ------------------------------------------------------------------ metrics
def test_record_usage_without_usage_emits_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    record_usage("chat", None)
    assert emitted(capsys.readouterr().out) == []


def test_record_usage_emits_four_metrics_with_the_task_dimension(capsys: pytest.CaptureFixture[str]) -> None:
    record_usage("chat", USAGE)
    docs = emitted(capsys.readouterr().out)
    assert [(d["task"], next(k for k in d if k.startswith("LLM"))) for d in docs] == [
        ("chat", "LLMInputTokens"), ("chat", "LLMOutputTokens"), ("chat", "LLMCacheReadTokens"),
        ("chat", "LLMCacheWriteTokens"),
    ]
    assert all(d["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"] == "Count" for d in docs)


def test_record_fallback_emits_one_count_and_logs_no_text(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    record_fallback("distill", "invalid_json")
    assert fallbacks(capsys.readouterr().out) == [("distill", "invalid_json")]
    (record,) = [r for r in caplog.records if hasattr(r, "fallback_reason")]
    assert (record.task, record.fallback_reason) == ("distill", "invalid_json")  # type: ignore[attr-defined]  # extra=


def test_usage_tally_sums_the_calls() -> None:
    tally = UsageTally()
    assert tally.details() == {"llm_calls": 0, "llm_usage": None}
    tally.add(None)
    assert tally.details() == {"llm_calls": 1, "llm_usage": None}
    tally.add(USAGE)
    tally.add(USAGE)
    assert tally.details() == {"llm_calls": 3, "llm_usage": {
        "input_tokens": 20, "output_tokens": 40, "cache_creation_input_tokens": 60, "cache_read_input_tokens": 80,
    }}
