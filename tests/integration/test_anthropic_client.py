"""The Anthropic adapter: the real ``anthropic`` SDK against the local Messages-API server (it
opens sockets, on 127.0.0.1 only): the deadline (no attempt, no retry and no backoff sleep past
it), overload / rate limits / bad requests mapped to the domain errors, a tool call cut by
max_tokens reported as such, and the API key read from Secrets Manager (moto). The
``messages_api`` fixture comes from ``tests.support.fixtures`` through ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import pytest

from agent_memory.adapters.llm.anthropic import AnthropicClient, load_api_key
from agent_memory.domain.errors import LLMBadRequest, LLMDeadlineExceeded, LLMUnavailable
from agent_memory.domain.llm import LLMRequest, SystemBlock, ToolSpec
from tests.support.messages_api import (
    MessagesAPIServer,
    invalid_request,
    overloaded,
    rate_limited,
    slow,
    step,
    text_reply,
    tool_use_reply,
    truncated_tool_use_reply,
)

API_KEY = "sk-ant-test-key-0123456789"
PROMPT_SECRET = "患者主诉头痛三天-PROMPT-MARKER"

CLASSIFY = ToolSpec(
    name="classify",
    description="Classify the message intents.",
    input_schema={
        "type": "object",
        "properties": {"intents": {"type": "array", "items": {"type": "string"}}},
        "required": ["intents"],
    },
)


def _client(server: MessagesAPIServer, *, max_retries: int = 2) -> AnthropicClient:
    return AnthropicClient(API_KEY, base_url=server.base_url, max_retries=max_retries)


def _request(*, deadline_in_s: float | None = 10.0, **overrides: Any) -> LLMRequest:
    fields: dict[str, Any] = {
        "model": "claude-sonnet-test",
        "system": [
            SystemBlock("instructions", "You are the IIT project assistant.", cache=True),
            SystemBlock("hot_memory", "- [PI] 回答用中文", cache=True),
            SystemBlock("session", "facts: none"),
        ],
        "messages": [{"role": "user", "content": PROMPT_SECRET}],
        "max_tokens": 256,
        "deadline": None if deadline_in_s is None else time.monotonic() + deadline_in_s,
    }
    fields.update(overrides)
    return LLMRequest(**fields)


# --- what is sent -----------------------------------------------------------------------------


def test_system_blocks_carry_cache_control_exactly_where_marked(messages_api: MessagesAPIServer) -> None:
    _client(messages_api).complete(_request())

    body = messages_api.requests[0].body
    assert body["system"] == [
        {
            "type": "text",
            "text": "You are the IIT project assistant.",
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "text", "text": "- [PI] 回答用中文", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "facts: none"},
    ]


def test_model_max_tokens_and_messages_are_sent_as_given(messages_api: MessagesAPIServer) -> None:
    messages = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "earlier", "cache_control": {"type": "ephemeral"}}],
        },
        {"role": "assistant", "content": "noted"},
        {"role": "user", "content": "now"},
    ]
    _client(messages_api).complete(_request(messages=messages, model="claude-haiku-test", max_tokens=77))

    sent = messages_api.requests[0]
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.body["model"] == "claude-haiku-test"
    assert sent.body["max_tokens"] == 77
    assert sent.body["messages"] == messages
    assert "tools" not in sent.body and "tool_choice" not in sent.body and "metadata" not in sent.body


def test_tools_and_forced_tool_choice_are_sent(messages_api: MessagesAPIServer) -> None:
    messages_api.script(tool_use_reply("classify", {"intents": ["QUERY_DATA"]}))
    choice = {"type": "tool", "name": "classify"}

    reply = _client(messages_api).complete(_request(tools=[CLASSIFY], tool_choice=choice, purpose="intent"))

    body = messages_api.requests[0].body
    assert body["tools"] == [
        {"name": "classify", "description": CLASSIFY.description, "input_schema": CLASSIFY.input_schema}
    ]
    assert body["tool_choice"] == choice
    assert reply.stop_reason == "tool_use"
    assert reply.tool_uses[0]["name"] == "classify"
    assert reply.tool_uses[0]["input"] == {"intents": ["QUERY_DATA"]}


def test_key_and_api_version_headers(messages_api: MessagesAPIServer) -> None:
    _client(messages_api).complete(_request())

    headers = messages_api.requests[0].headers
    # anthropic 2.x sends the API key as a bearer token (1.x sent it as `x-api-key`).
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert headers.get("x-api-key") in (None, API_KEY)
    assert headers["anthropic-version"]


def test_reply_maps_content_stop_reason_model_and_cache_usage(messages_api: MessagesAPIServer) -> None:
    usage = {
        "input_tokens": 12,
        "output_tokens": 3,
        "cache_creation_input_tokens": 900,
        "cache_read_input_tokens": 0,
    }
    messages_api.script(text_reply("你好", model="claude-sonnet-test-20260101", usage=usage))

    reply = _client(messages_api).complete(_request())

    assert reply.provider == "anthropic"
    assert reply.content == [{"type": "text", "text": "你好"}]
    assert reply.text == "你好"
    assert reply.stop_reason == "end_turn"
    assert reply.model == "claude-sonnet-test-20260101"
    assert reply.usage is not None and reply.usage.as_dict() == usage


def test_prompt_reply_and_key_are_not_logged(
    messages_api: MessagesAPIServer, caplog: pytest.LogCaptureFixture
) -> None:
    messages_api.script(overloaded(retry_after=0.05), text_reply("REPLY-MARKER"))
    caplog.set_level(logging.DEBUG)

    _client(messages_api).complete(_request())

    assert caplog.records, "the call should log something (outcome, timing)"
    assert PROMPT_SECRET not in caplog.text
    assert "REPLY-MARKER" not in caplog.text
    assert API_KEY not in caplog.text


# --- overload, rate limits, bad requests ------------------------------------------------------


def test_b21_overloaded_then_ok_makes_two_requests(messages_api: MessagesAPIServer) -> None:
    messages_api.script(overloaded(), text_reply("好的"))

    reply = _client(messages_api).complete(_request())

    assert reply.text == "好的"
    assert len(messages_api.requests) == 2


def test_b21_rate_limited_with_retry_after_then_ok(messages_api: MessagesAPIServer) -> None:
    messages_api.script(rate_limited(retry_after=2), text_reply("ok"))
    request = _request(deadline_in_s=8.0)
    assert request.deadline is not None

    reply = _client(messages_api).complete(request)

    first, second = messages_api.requests
    assert reply.text == "ok"
    assert second.arrived - first.arrived >= 1.9
    assert time.monotonic() < request.deadline


def test_b21_invalid_request_makes_one_request_and_maps_to_bad_request(
    messages_api: MessagesAPIServer,
) -> None:
    messages_api.script(invalid_request("messages.0.content: bad"))

    with pytest.raises(LLMBadRequest) as caught:
        _client(messages_api).complete(_request())

    assert len(messages_api.requests) == 1
    assert not caught.value.retryable
    assert "bad" not in caught.value.reason  # the API's message is not echoed to clients


def test_b21_persistent_overload_maps_to_unavailable_with_retry_after(
    messages_api: MessagesAPIServer,
) -> None:
    messages_api.script(overloaded(retry_after=0.4))

    with pytest.raises(LLMUnavailable) as caught:
        _client(messages_api, max_retries=2).complete(_request())

    assert len(messages_api.requests) == 1 + 2
    assert caught.value.retryable
    assert caught.value.retry_after_s == pytest.approx(0.4)


def test_b21_persistent_overload_without_retry_after_suggests_the_backoff(
    messages_api: MessagesAPIServer,
) -> None:
    messages_api.script(overloaded())

    with pytest.raises(LLMUnavailable) as caught:
        _client(messages_api, max_retries=0).complete(_request())

    assert len(messages_api.requests) == 1
    assert caught.value.retry_after_s is not None and caught.value.retry_after_s > 0


def test_b21_server_error_then_ok_is_retried(messages_api: MessagesAPIServer) -> None:
    messages_api.script(
        step(500, {"type": "error", "error": {"type": "api_error", "message": "x"}}), text_reply()
    )

    assert _client(messages_api).complete(_request()).text == "ok"
    assert len(messages_api.requests) == 2


def test_b21_unreachable_api_maps_to_unavailable() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = AnthropicClient(API_KEY, base_url=f"http://127.0.0.1:{port}", max_retries=0)

    with pytest.raises(LLMUnavailable):
        client.complete(_request())


# --- the deadline ------------------------------------------------------------------------------


def test_b16_slow_llm_stops_at_deadline(messages_api: MessagesAPIServer) -> None:
    messages_api.script(slow(text_reply("too late"), 35.0))
    request = _request(deadline_in_s=3.0)
    assert request.deadline is not None

    with pytest.raises(LLMDeadlineExceeded):
        _client(messages_api).complete(request)

    assert time.monotonic() <= request.deadline + 1.0
    assert len(messages_api.requests) == 1  # a timeout at the deadline is not retried


def _record_sdk_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record (and skip) every sleep of the SDK's retry loop: whether it slept is then a
    fact, not a timing, so the test holds on a loaded machine."""
    import anthropic._base_client as base_client

    sleeps: list[float] = []

    def record(self: object, *args: object, **kwargs: object) -> None:
        sleeps.append(1.0)

    monkeypatch.setattr(base_client.SyncAPIClient, "_sleep_for_retry", record)
    return sleeps


def test_b16_retry_after_beyond_deadline_is_not_slept(
    messages_api: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages_api.script(rate_limited(retry_after=30))
    client = _client(messages_api)
    sleeps = _record_sdk_sleeps(monkeypatch)
    started = time.monotonic()

    with pytest.raises(LLMUnavailable) as caught:
        client.complete(_request(deadline_in_s=3.0))

    assert sleeps == []
    assert time.monotonic() - started < 3.0
    assert caught.value.retry_after_s == pytest.approx(30)
    assert len(messages_api.requests) == 1


def test_b16_backoff_beyond_deadline_is_not_slept(
    messages_api: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages_api.script(overloaded())  # no retry-after: the SDK would back off ~0.5 s
    client = _client(messages_api)
    sleeps = _record_sdk_sleeps(monkeypatch)

    with pytest.raises(LLMUnavailable):
        client.complete(_request(deadline_in_s=0.8))

    assert sleeps == []
    assert len(messages_api.requests) == 1


def test_b16_no_attempt_when_the_deadline_has_passed(messages_api: MessagesAPIServer) -> None:
    with pytest.raises(LLMDeadlineExceeded):
        _client(messages_api).complete(_request(deadline_in_s=0.1))

    assert messages_api.requests == []


def test_b16_attempt_timeout_derives_from_the_remaining_budget(messages_api: MessagesAPIServer) -> None:
    _client(messages_api).complete(_request(deadline_in_s=5.0))

    # the SDK announces each attempt's read timeout; ours is the time left before the deadline
    assert 4.0 < float(messages_api.requests[0].headers["x-stainless-read-timeout"]) <= 5.0


# --- max_tokens in the middle of a tool call ---------------------------------------------------


def test_b22_truncated_tool_call_is_reported(messages_api: MessagesAPIServer) -> None:
    messages_api.script(truncated_tool_use_reply("classify"))

    reply = _client(messages_api).complete(
        _request(tools=[CLASSIFY], tool_choice={"type": "tool", "name": "classify"})
    )

    assert reply.stop_reason == "max_tokens"
    assert [b["name"] for b in reply.tool_uses] == ["classify"]
    assert reply.tool_uses[0]["input"] == {}


# --- the key, from Secrets Manager --------------------------------------------------------------


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Any:
    from aws_lambda_powertools.utilities import parameters
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    parameters.clear_caches()
    with mock_aws():
        import boto3

        yield boto3.client("secretsmanager", region_name="us-east-1")
    parameters.clear_caches()


def test_load_api_key_reads_a_plain_secret(secrets: Any) -> None:
    secrets.create_secret(Name="am/plain", SecretString=API_KEY)

    assert load_api_key("am/plain") == API_KEY


def test_load_api_key_reads_a_json_secret(secrets: Any) -> None:
    secrets.create_secret(Name="am/json", SecretString=json.dumps({"api_key": API_KEY}))

    assert load_api_key("am/json") == API_KEY


def test_load_api_key_rejects_json_without_a_key(secrets: Any) -> None:
    secrets.create_secret(Name="am/nokey", SecretString=json.dumps({"other": "x"}))

    with pytest.raises(ValueError, match="api_key"):
        load_api_key("am/nokey")


# --- the factory ------------------------------------------------------------------------------


def test_factory_builds_the_anthropic_client_from_the_secret(
    secrets: Any, messages_api: MessagesAPIServer
) -> None:
    from agent_memory.config import Settings
    from agent_memory.wiring import build_llm

    secrets.create_secret(Name="am/factory", SecretString=json.dumps({"api_key": API_KEY}))
    settings = Settings.model_validate({
        "FLOW_LOG_TABLE": "f",
        "MEMORY_TABLE": "m",
        "SESSIONS_TABLE": "s",
        "LLM_PROVIDER": "anthropic",
        "ANTHROPIC_SECRET_NAME": "am/factory",
        "ANTHROPIC_BASE_URL": messages_api.base_url,
        "LLM_MAX_RETRIES": 0,
    })

    llm = build_llm(settings)
    llm.complete(_request())

    assert isinstance(llm, AnthropicClient)
    assert messages_api.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
