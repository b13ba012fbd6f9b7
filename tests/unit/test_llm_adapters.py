"""The LLM adapters' pure parts: the turn's deadline from the Lambda context and API Gateway's
timeout, the offline provider built without importing the ``anthropic`` SDK, the request the
Anthropic adapter builds (output_config, no forced tool choice for current models, nothing a
current model rejects), the response it accepts (blocks exactly as received; anything else is a
bad response), its status mapping, and the LLM settings (defaults, effort, minimum cacheable
lengths). The Anthropic client itself (HTTP to a local server) is tested in
``tests/integration/test_anthropic_client.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import urllib3  # noqa: F401 - imported at collection: its import probes IPv6 with a socket (the Bedrock client loads it)

from agent_memory.config import Settings, min_cacheable_tokens, model_family
from agent_memory.domain.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMBadResponse,
    LLMModelNotFound,
    LLMUnavailable,
)
from agent_memory.domain.llm import LLMRequest, SystemBlock, ToolSpec
from agent_memory.http.deadline import deadline_from_context

REPO = Path(__file__).resolve().parents[2]


class _FakeLambdaContext:
    def __init__(self, remaining_ms: int) -> None:
        self._remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self._remaining_ms


@pytest.mark.parametrize(
    ("remaining_ms", "expected"),
    [
        (60_000, 100.0 + 30.0 - 3.0),  # Lambda has 60 s left: API Gateway's 30 s binds
        (10_000, 105.0 + 10.0 - 3.0),  # Lambda has 10 s left: the Lambda binds
    ],
)
def test_b16_deadline_from_context_picks_the_smaller_budget(remaining_ms: int, expected: float) -> None:
    deadline = deadline_from_context(
        _FakeLambdaContext(remaining_ms),
        started_monotonic=100.0,
        api_gateway_timeout_s=30.0,
        reserve_s=3.0,
        now=lambda: 105.0,
    )

    assert deadline == pytest.approx(expected)


def test_factory_offline_provider_never_imports_anthropic() -> None:
    code = (
        "import sys\n"
        "from agent_memory.config import Settings\n"
        "from agent_memory.wiring import build_llm\n"
        "llm = build_llm(Settings(FLOW_LOG_TABLE='f', MEMORY_TABLE='m', SESSIONS_TABLE='s'))\n"
        "print(llm.provider, 'anthropic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO / "layers" / "shared"), "PATH": "", "LLM_PROVIDER": "offline"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "offline False"


# --- the request ------------------------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"intents": {"type": "array"}}, "required": ["intents"]}
TOOL = ToolSpec(name="classify", description="Classify.", input_schema=SCHEMA)


def _request(**overrides: Any) -> LLMRequest:
    fields: dict[str, Any] = {
        "model": "claude-haiku-5-5",
        "system": [SystemBlock("instructions", "Classify.", cache=True)],
        "messages": [{"role": "user", "content": "P001 入组了吗？"}],
        "max_tokens": 2048,
    }
    fields.update(overrides)
    return LLMRequest(**fields)


def test_structured_output_and_effort_become_output_config() -> None:
    from agent_memory.adapters.llm.anthropic import _to_wire_request

    wire = _to_wire_request(_request(output_schema=SCHEMA, effort="low"))

    assert wire == {
        "model": "claude-haiku-5-5",
        "max_tokens": 2048,
        "messages": [{"role": "user", "content": "P001 入组了吗？"}],
        "system": [{"type": "text", "text": "Classify.", "cache_control": {"type": "ephemeral"}}],
        "output_config": {"format": {"type": "json_schema", "schema": SCHEMA}, "effort": "low"},
    }


@pytest.mark.parametrize(
    ("model", "choice", "sent"),
    [
        ("claude-haiku-5-5", {"type": "tool", "name": "classify"}, {"type": "auto"}),
        ("claude-sonnet-5-5", {"type": "any", "disable_parallel_tool_use": True},
         {"type": "auto", "disable_parallel_tool_use": True}),
        ("eu.anthropic.claude-sonnet-5-5", {"type": "tool", "name": "classify"}, {"type": "auto"}),
        ("claude-sonnet-5-5", {"type": "auto"}, {"type": "auto"}),
        ("claude-sonnet-5-5", {"type": "none"}, {"type": "none"}),
        ("claude-haiku-4-5", {"type": "tool", "name": "classify"}, {"type": "tool", "name": "classify"}),
        ("claude-test-model", {"type": "tool", "name": "classify"}, {"type": "tool", "name": "classify"}),
    ],
)
def test_a_forced_tool_choice_is_sent_only_to_models_that_accept_it(
    model: str, choice: dict[str, Any], sent: dict[str, Any]
) -> None:
    from agent_memory.adapters.llm.anthropic import _to_wire_request

    assert _to_wire_request(_request(model=model, tools=[TOOL], tool_choice=choice))["tool_choice"] == sent


def test_nothing_a_current_model_rejects_is_ever_sent() -> None:
    from agent_memory.adapters.llm.anthropic import _to_wire_request

    wire = _to_wire_request(_request(tools=[TOOL], tool_choice={"type": "tool", "name": "classify"}, effort="max"))

    assert {"temperature", "top_p", "top_k", "thinking"}.isdisjoint(wire)
    assert wire["messages"][-1]["role"] == "user"
    assert wire["tool_choice"] == {"type": "auto"}


# --- the response -----------------------------------------------------------------------------------

BLOCKS = [
    {"type": "thinking", "thinking": "先查数据。", "signature": "sig_1"},
    {"type": "redacted_thinking", "data": "opaque"},
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}},
    {"type": "text", "text": "好的", "citations": None, "unknown": [1, 2]},
    {"type": "tool_use", "id": "toolu_1", "name": "classify", "input": {"intents": []}},
]


def _message(**overrides: Any) -> bytes:
    body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
            "content": BLOCKS, "stop_reason": "tool_use", "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 22, "cache_creation_input_tokens": 33,
                      "cache_read_input_tokens": 44, "service_tier": "standard"}}
    body.update(overrides)
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def test_blocks_come_back_exactly_as_received_with_the_usage() -> None:
    from agent_memory.adapters.llm.anthropic import _parse_message

    response = _parse_message(_message(), _request(), "anthropic")

    assert response.content == BLOCKS
    assert (response.stop_reason, response.model, response.provider) == ("tool_use", "claude-haiku-5-5", "anthropic")
    assert response.usage is not None and response.usage.as_dict() == {
        "input_tokens": 11, "output_tokens": 22, "cache_creation_input_tokens": 33, "cache_read_input_tokens": 44}


def test_refusal_and_pause_turn_keep_their_stop_reason() -> None:
    from agent_memory.adapters.llm.anthropic import _parse_message

    refusal = _parse_message(_message(content=[], stop_reason="refusal"), _request(), "bedrock")
    paused = _parse_message(_message(content=BLOCKS[2:3], stop_reason="pause_turn"), _request(), "anthropic")

    assert (refusal.refused, refusal.text, refusal.provider) == (True, "", "bedrock")
    assert (paused.stop_reason, paused.content) == ("pause_turn", BLOCKS[2:3])


@pytest.mark.parametrize(
    "body",
    [
        b"<html>busy</html>",
        _message()[:40],
        b"\xff\xfe",
        json.dumps({"type": "error", "error": {"type": "api_error"}}).encode(),
        json.dumps(["not", "an", "object"]).encode(),
        _message(content="text"),
        _message(content=[{"text": "no type"}]),
        _message(content=[{"type": "text"}]),
        _message(content=[{"type": "tool_use", "id": "t", "name": "classify", "input": "not an object"}]),
        _message(content=[{"type": "thinking", "thinking": "x"}]),
        _message(stop_reason=None),
    ],
    ids=["html", "truncated", "not-utf8", "error-object", "list", "content-str", "block-untyped",
         "text-without-text", "tool-input-str", "thinking-without-signature", "no-stop-reason"],
)
def test_anything_else_is_a_bad_response(body: bytes) -> None:
    from agent_memory.adapters.llm.anthropic import _parse_message

    with pytest.raises(LLMBadResponse) as caught:
        _parse_message(body, _request(), "anthropic")
    assert not caught.value.retryable
    assert "busy" not in caught.value.reason  # nothing of the body is echoed


@pytest.mark.parametrize(
    ("status", "error_type", "expected"),
    [
        (401, "authentication_error", LLMAuthError),
        (403, "permission_error", LLMAuthError),
        (404, "not_found_error", LLMModelNotFound),
        (400, "invalid_request_error", LLMBadRequest),
        (413, "request_too_large", LLMBadRequest),
        (429, "rate_limit_error", LLMUnavailable),
        (529, "overloaded_error", LLMUnavailable),
        (500, "api_error", LLMUnavailable),
    ],
)
def test_status_mapping(status: int, error_type: str, expected: type[Exception]) -> None:
    import anthropic
    import httpx2

    from agent_memory.adapters.llm.anthropic import _map_status_error

    request = httpx2.Request("POST", "https://api.anthropic.invalid/v1/messages")
    body = {"type": "error", "error": {"type": error_type, "message": "m"}}
    response = httpx2.Response(status, request=request, json=body)
    err = anthropic.APIStatusError("m", response=response, body=body)

    assert type(_map_status_error(err, fallback_retry_after_s=1.0)) is expected


def test_current_generation_rule() -> None:
    from agent_memory.adapters.llm.anthropic import rejects_forced_tool_choice

    assert all(map(rejects_forced_tool_choice, ["claude-sonnet-5-5", "claude-haiku-5-5", "claude-opus-5-5",
                                                "claude-sonnet-5", "global.anthropic.claude-haiku-5-5"]))
    assert not any(map(rejects_forced_tool_choice, ["claude-haiku-4-5", "claude-opus-4-8", "claude-test-model"]))


# --- the settings -----------------------------------------------------------------------------------

BASE = {"FLOW_LOG_TABLE": "f", "MEMORY_TABLE": "m", "SESSIONS_TABLE": "s"}


def test_llm_defaults_are_the_current_models_with_room_for_thinking() -> None:
    settings = Settings.model_validate(BASE)

    assert (settings.chat_model_id, settings.fast_model_id) == ("claude-sonnet-5-5", "claude-haiku-5-5")
    assert settings.llm_max_output_tokens >= 4096
    assert settings.anthropic_secret_max_age_s == 300
    assert (settings.llm_effort_chat, settings.llm_effort_intent, settings.llm_effort_distill) == (
        "medium", "low", "medium")


def test_effort_settings_accept_the_api_values_and_none() -> None:
    settings = Settings.model_validate({**BASE, "LLM_EFFORT_CHAT": "", "LLM_EFFORT_INTENT": "default",
                                        "LLM_EFFORT_SYMPTOMS": "HIGH", "LLM_EFFORT_ARCHIVE": "xhigh"})

    assert (settings.llm_effort_chat, settings.llm_effort_intent) == (None, None)
    assert (settings.llm_effort_symptoms, settings.llm_effort_archive) == ("high", "xhigh")
    with pytest.raises(ValueError, match="LLM_EFFORT_CHAT"):
        Settings.model_validate({**BASE, "LLM_EFFORT_CHAT": "extreme"})
    with pytest.raises(ValueError, match="LLM_MAX_OUTPUT_TOKENS"):
        Settings.model_validate({**BASE, "LLM_MAX_OUTPUT_TOKENS": "256"})  # no room for thinking


def test_bedrock_is_a_provider() -> None:
    settings = Settings.model_validate({**BASE, "LLM_PROVIDER": "bedrock", "ANTHROPIC_BEDROCK_BASE_URL": "",
                                        "BEDROCK_REGION": "eu-central-1"})

    assert (settings.llm_provider, settings.bedrock_base_url, settings.bedrock_region) == (
        "bedrock", None, "eu-central-1")


@pytest.mark.parametrize(
    ("model", "tokens"),
    [
        ("claude-sonnet-5-5", 1024),
        ("claude-sonnet-5", 1024),
        ("claude-haiku-5-5", 4096),
        ("claude-opus-5-5", 512),
        ("claude-opus-5", 512),
        ("claude-fable-5-1", 512),
        ("claude-mythos-5", 512),
        ("claude-opus-4-8", 1024),
        ("claude-opus-4-7", 2048),
        ("claude-opus-4-6", 4096),
        ("claude-opus-4-5-20251101", 4096),
        ("claude-haiku-4-5", 4096),
        ("claude-sonnet-4-6", 1024),
        ("claude-opus-4-20250514", 1024),
        ("eu.anthropic.claude-sonnet-5-5", 1024),
        ("global.anthropic.claude-haiku-5-5", 4096),
        ("claude-test-model", 4096),
    ],
)
def test_min_cacheable_tokens_per_model(model: str, tokens: int) -> None:
    assert min_cacheable_tokens(model) == tokens


def test_model_family_parses_api_and_bedrock_ids() -> None:
    assert model_family("claude-sonnet-5-5") == ("sonnet", 5, 5)
    assert model_family("anthropic.claude-haiku-4-5-20251001-v1:0") == ("haiku", 4, 5)
    assert model_family("claude-opus-4-20250514") == ("opus", 4, 0)
    assert model_family("gpt-6") is None


def test_build_llm_bedrock_needs_no_key_and_anthropic_needs_a_secret_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_memory.adapters.llm.anthropic import BedrockClient
    from agent_memory.wiring import build_llm

    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    llm = build_llm(Settings.model_validate({**BASE, "LLM_PROVIDER": "bedrock", "BEDROCK_REGION": "eu-west-1"}))
    assert isinstance(llm, BedrockClient) and llm.provider == "bedrock"
    with pytest.raises(ValueError, match="ANTHROPIC_SECRET_NAME"):
        build_llm(Settings.model_validate({**BASE, "LLM_PROVIDER": "anthropic"}))
