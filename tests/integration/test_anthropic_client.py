"""The Anthropic adapter: the real ``anthropic`` SDK against the local Messages-API server (it
opens sockets, on 127.0.0.1 only; strict: it behaves like the current API): the deadline (no
attempt, no retry and no backoff sleep past it), overload / rate limits / bad requests mapped to
the domain errors, a tool call cut by max_tokens reported as such, and the API key read from
Secrets Manager (moto). With the current default models: structured outputs and effort sent as
``output_config``, no forced tool choice, content blocks (thinking and its signature included)
returned exactly as received and accepted back by the strict server, usage with cache fields,
refusal / empty / pause_turn replies, auth errors, retired models and malformed 2xx bodies
mapped to their own errors and metrics, a rotated key used after ``max_age``, and Amazon
Bedrock through ``AnthropicBedrock``. The ``messages_api`` fixture comes from
``tests.support.fixtures`` through ``tests/conftest.py``.
"""

from __future__ import annotations

import json
import logging
import socket
import time
from typing import Any

import pytest

from agent_memory.adapters.llm.anthropic import AnthropicClient, BedrockClient, SecretApiKey, load_api_key
from agent_memory.config import Settings
from agent_memory.domain.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMBadResponse,
    LLMDeadlineExceeded,
    LLMModelNotFound,
    LLMUnavailable,
)
from agent_memory.domain.llm import LLMRequest, SystemBlock, ToolSpec
from tests.support.messages_api import (
    MessagesAPIServer,
    authentication_failed,
    bad_block_reply,
    empty_reply,
    invalid_request,
    json_reply,
    model_not_found,
    non_json_reply,
    not_a_message_reply,
    overloaded,
    pause_turn_reply,
    permission_denied,
    rate_limited,
    refusal_reply,
    slow,
    step,
    text_reply,
    tool_use_reply,
    truncated_json_reply,
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

#: The default models (what a deployment runs): the strict server treats them as current models.
DEFAULT_CHAT = str(Settings.model_fields["chat_model_id"].default)
DEFAULT_FAST = str(Settings.model_fields["fast_model_id"].default)


def _client(server: MessagesAPIServer, *, max_retries: int = 2) -> AnthropicClient:
    return AnthropicClient(API_KEY, base_url=server.base_url, max_retries=max_retries)


def _request(*, deadline_in_s: float | None = 10.0, **overrides: Any) -> LLMRequest:
    fields: dict[str, Any] = {
        "model": DEFAULT_CHAT,
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
    _client(messages_api).complete(_request(messages=messages, model=DEFAULT_FAST, max_tokens=77))

    sent = messages_api.requests[0]
    assert (sent.method, sent.path) == ("POST", "/v1/messages")
    assert sent.body["model"] == DEFAULT_FAST
    assert sent.body["max_tokens"] == 77
    assert sent.body["messages"] == messages
    assert "tools" not in sent.body and "tool_choice" not in sent.body and "metadata" not in sent.body


def test_tools_and_a_forced_tool_choice_are_sent_unchanged_to_an_older_model(messages_api: MessagesAPIServer) -> None:
    # claude-haiku-4-5 (current, not retired, generation 4) still accepts a forced choice
    messages_api.script(tool_use_reply("classify", {"intents": ["QUERY_DATA"]}))
    choice = {"type": "tool", "name": "classify"}

    reply = _client(messages_api).complete(
        _request(model="claude-haiku-4-5", tools=[CLASSIFY], tool_choice=choice, purpose="intent")
    )

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
    assert messages_api.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


# --- current models: what is sent ---------------------------------------------------------------

CHAT_MODEL = "claude-sonnet-5-5"
FAST_MODEL = "claude-haiku-5-5"
INTENT_SCHEMA = {
    "type": "object",
    "properties": {"intents": {"type": "array", "items": {"type": "string"}}},
    "required": ["intents"],
    "additionalProperties": False,
}
READ_DATA = ToolSpec(
    name="read_clinical_data",
    description="Read one subject's record.",
    input_schema={"type": "object", "properties": {"subject_id": {"type": "string"}}},
)
#: What a current model rejects; the adapter never sends any of it.
_NEVER_SENT = {"temperature", "top_p", "top_k", "thinking", "stop_sequences"}


def test_structured_output_and_effort_are_sent_as_output_config(messages_api: MessagesAPIServer) -> None:
    messages_api.script(json_reply({"intents": ["QUERY_DATA"]}))

    reply = _client(messages_api).complete(
        _request(model=FAST_MODEL, output_schema=INTENT_SCHEMA, effort="low", purpose="intent")
    )

    body = messages_api.requests[0].body
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": INTENT_SCHEMA}, "effort": "low"}
    assert _NEVER_SENT.isdisjoint(body) and "tool_choice" not in body
    assert json.loads(reply.text) == {"intents": ["QUERY_DATA"]}
    assert (reply.stop_reason, reply.model) == ("end_turn", FAST_MODEL)


def test_effort_alone_and_nothing_when_neither_is_set(messages_api: MessagesAPIServer) -> None:
    _client(messages_api).complete(_request(model=CHAT_MODEL, effort="medium"))
    _client(messages_api).complete(_request(model=CHAT_MODEL))

    first, second = (r.body for r in messages_api.requests)
    assert first["output_config"] == {"effort": "medium"}
    assert "output_config" not in second
    assert _NEVER_SENT.isdisjoint(first) and _NEVER_SENT.isdisjoint(second)


def test_a_forced_tool_choice_becomes_auto_for_a_current_model(messages_api: MessagesAPIServer) -> None:
    messages_api.script(tool_use_reply("classify", {"intents": ["QUERY_DATA"]}))

    reply = _client(messages_api).complete(_request(
        model=FAST_MODEL, tools=[CLASSIFY], tool_choice={"type": "tool", "name": "classify"}, purpose="intent"
    ))

    assert messages_api.requests[0].body["tool_choice"] == {"type": "auto"}  # the strict server accepted it
    assert reply.tool_uses[0]["input"] == {"intents": ["QUERY_DATA"]}


def test_the_strict_server_rejects_what_the_adapter_no_longer_sends(messages_api: MessagesAPIServer) -> None:
    # The same forced choice sent directly with the SDK: 400, as from the current API.
    import anthropic

    sdk = anthropic.Anthropic(api_key=API_KEY, base_url=messages_api.base_url, max_retries=0)
    with pytest.raises(anthropic.BadRequestError, match="forced tool use"):
        sdk.messages.create(
            model=FAST_MODEL, max_tokens=256, messages=[{"role": "user", "content": "hi"}],
            tools=[{"name": "classify", "description": "x", "input_schema": CLASSIFY.input_schema}],
            tool_choice={"type": "tool", "name": "classify"},
        )


# --- current models: content exactly as received -------------------------------------------------


def _tool_loop_request(reply_content: list[dict[str, Any]], tool_use_id: str, **overrides: Any) -> LLMRequest:
    messages = [
        {"role": "user", "content": "P001 入组了吗？"},
        {"role": "assistant", "content": reply_content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": "{}"}]},
    ]
    return _request(model=CHAT_MODEL, tools=[READ_DATA], messages=messages, **overrides)


def test_thinking_and_its_signature_come_back_and_are_accepted_back(messages_api: MessagesAPIServer) -> None:
    # Given a current model that uses a tool (the strict server thinks first, with a signature),
    messages_api.script(tool_use_reply("read_clinical_data", {"subject_id": "P001"}), text_reply("P001 已入组。"))
    client = _client(messages_api)
    first = client.complete(_request(model=CHAT_MODEL, tools=[READ_DATA],
                                     messages=[{"role": "user", "content": "P001 入组了吗？"}]))
    # Then the reply holds the thinking block with every key, before the tool call,
    thinking, tool_use = first.content
    assert set(thinking) == {"type", "thinking", "signature"} and thinking["signature"].startswith("sig_")
    assert (tool_use["type"], tool_use["name"]) == ("tool_use", "read_clinical_data")
    # and sent back unchanged with the tool result, the server accepts the next step.
    second = client.complete(_tool_loop_request(first.content, tool_use["id"]))
    assert second.text == "P001 已入组。"
    assert messages_api.requests[1].body["messages"][1]["content"] == first.content


@pytest.mark.parametrize("change", ["altered", "dropped"])
def test_thinking_sent_back_altered_or_missing_is_a_400(messages_api: MessagesAPIServer, change: str) -> None:
    messages_api.script(tool_use_reply("read_clinical_data", {"subject_id": "P001"}), text_reply("x"))
    client = _client(messages_api)
    first = client.complete(_request(model=CHAT_MODEL, tools=[READ_DATA],
                                     messages=[{"role": "user", "content": "P001 入组了吗？"}]))
    thinking, tool_use = first.content
    content = [{**thinking, "thinking": thinking["thinking"] + " (edited)"}, tool_use] if change == "altered" \
        else [tool_use]

    with pytest.raises(LLMBadRequest):
        client.complete(_tool_loop_request(content, tool_use["id"]))
    assert len(messages_api.requests) == 2


def test_every_content_block_and_key_is_returned_as_received(messages_api: MessagesAPIServer) -> None:
    blocks = [
        {"type": "thinking", "thinking": "先查数据。", "signature": "sig_given_by_the_api"},
        {"type": "redacted_thinking", "data": "EncryptedOpaqueBlob=="},
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "IIT"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
         "content": [{"type": "web_search_result", "url": "https://example.org", "title": "t",
                      "encrypted_content": "abc", "page_age": None}]},
        {"type": "text", "text": "结论", "citations": None, "future_key": {"kept": True}},
        {"type": "tool_use", "id": "toolu_01", "name": "read_clinical_data", "input": {"subject_id": "P001"},
         "caller": {"type": "direct"}},
    ]
    messages_api.script(step(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": CHAT_MODEL,
                                   "content": blocks, "stop_reason": "tool_use", "stop_sequence": None,
                                   "usage": {"input_tokens": 5, "output_tokens": 7}}))

    reply = _client(messages_api).complete(_request(model=CHAT_MODEL, tools=[READ_DATA]))

    assert reply.content == blocks
    assert reply.tool_uses == [blocks[-1]]


# --- stop reasons --------------------------------------------------------------------------------


def test_refusal_is_returned_as_such(messages_api: MessagesAPIServer) -> None:
    messages_api.script(refusal_reply())

    reply = _client(messages_api).complete(_request(model=CHAT_MODEL))

    assert (reply.stop_reason, reply.refused, reply.content, reply.text) == ("refusal", True, [], "")


def test_empty_reply_is_returned_as_such(messages_api: MessagesAPIServer) -> None:
    messages_api.script(empty_reply(thinking="nothing to say"))

    reply = _client(messages_api).complete(_request(model=CHAT_MODEL))

    assert (reply.stop_reason, reply.text, reply.refused) == ("end_turn", "", False)
    assert [b["type"] for b in reply.content] == ["thinking"]


def test_pause_turn_returns_the_paused_content(messages_api: MessagesAPIServer) -> None:
    messages_api.script(pause_turn_reply(text="正在检索"))

    reply = _client(messages_api).complete(_request(model=CHAT_MODEL))

    assert reply.stop_reason == "pause_turn"
    assert [b["type"] for b in reply.content] == ["text", "server_tool_use"]


# --- provider faults: own errors and metrics ------------------------------------------------------


def _metrics_emitted(capsys: pytest.CaptureFixture[str]) -> list[tuple[str, list[list[str]]]]:
    """(metric name, dimension sets) of every EMF line printed so far."""
    found = []
    for line in capsys.readouterr().out.splitlines():
        try:
            emf = json.loads(line)
        except ValueError:
            continue
        for directive in (emf.get("_aws") or {}).get("CloudWatchMetrics", []):
            for metric in directive["Metrics"]:
                found.append((metric["Name"], directive["Dimensions"]))
    return found


@pytest.mark.parametrize("answer", [authentication_failed(), permission_denied()], ids=["401", "403"])
def test_refused_credentials_are_an_auth_error_with_its_metric(
    messages_api: MessagesAPIServer, capsys: pytest.CaptureFixture[str], answer: dict[str, Any]
) -> None:
    messages_api.script(answer)

    with pytest.raises(LLMAuthError) as caught:
        _client(messages_api).complete(_request(model=CHAT_MODEL))

    assert len(messages_api.requests) == 1 and not caught.value.retryable
    # one count, with the dimension the LLMAuthErrorAlarm watches (service) and no other
    assert _metrics_emitted(capsys) == [("LLMAuthError", [["service"]])]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_retired_default_model_is_model_not_found_with_its_metric(
    messages_api: MessagesAPIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the strict server and the former default chat model (in the SDK's DEPRECATED_MODELS),
    with pytest.raises(LLMModelNotFound):
        _client(messages_api).complete(_request(model="claude-sonnet-4-5"))

    # Then one request, 404 not_found_error, mapped to its own error and counted.
    assert len(messages_api.requests) == 1
    assert _metrics_emitted(capsys) == [("LLMModelNotFound", [["service"]])]


def test_a_scripted_404_is_model_not_found(messages_api: MessagesAPIServer) -> None:
    messages_api.script(model_not_found(CHAT_MODEL))

    with pytest.raises(LLMModelNotFound):
        _client(messages_api).complete(_request(model=CHAT_MODEL))


@pytest.mark.parametrize(
    "answer",
    [non_json_reply(), truncated_json_reply(), not_a_message_reply(), bad_block_reply()],
    ids=["html", "truncated-json", "not-a-message", "text-block-without-text"],
)
def test_a_2xx_that_is_not_a_messages_response_is_a_bad_response(
    messages_api: MessagesAPIServer, capsys: pytest.CaptureFixture[str], answer: dict[str, Any]
) -> None:
    messages_api.script(answer)

    with pytest.raises(LLMBadResponse) as caught:
        _client(messages_api).complete(_request(model=CHAT_MODEL))

    assert len(messages_api.requests) == 1 and not caught.value.retryable
    assert ("LLMBadResponse", [["service"]]) in _metrics_emitted(capsys)


# --- usage and the prompt cache -------------------------------------------------------------------


def _cached_prefix_request(model: str, tokens: int) -> LLMRequest:
    return _request(
        model=model,
        system=[SystemBlock("instructions", "病" * tokens, cache=True), SystemBlock("session", "facts: none")],
        messages=[{"role": "user", "content": "头痛三天"}],
    )


def test_usage_reports_a_cache_write_then_reads(messages_api: MessagesAPIServer) -> None:
    # Given a 1,500-token prefix before a breakpoint (Sonnet 5.5 caches from 1,024 tokens),
    client = _client(messages_api)
    first = client.complete(_cached_prefix_request(CHAT_MODEL, 1500))
    second = client.complete(_cached_prefix_request(CHAT_MODEL, 1500))

    # Then the first call writes the prefix, the second reads it, and the rest is plain input.
    assert first.usage is not None and second.usage is not None
    assert (first.usage.cache_creation_input_tokens, first.usage.cache_read_input_tokens) == (1500, 0)
    assert (second.usage.cache_creation_input_tokens, second.usage.cache_read_input_tokens) == (0, 1500)
    assert first.usage.input_tokens == second.usage.input_tokens > 0
    assert second.usage.output_tokens > 0


def test_usage_reports_no_cache_below_the_model_minimum(messages_api: MessagesAPIServer) -> None:
    # Given the same 1,500-token prefix for Haiku 5.5 (minimum 4,096 tokens),
    client = _client(messages_api)
    usages = [client.complete(_cached_prefix_request(FAST_MODEL, 1500)).usage for _ in range(2)]

    # Then nothing is written or read: the whole prompt is input.
    for usage in usages:
        assert usage is not None
        assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
        assert usage.input_tokens >= 1500


# --- Amazon Bedrock -----------------------------------------------------------------------------


@pytest.fixture
def bedrock(messages_api: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch) -> BedrockClient:
    """The Bedrock client on the local server, signing with the environment's (dummy) AWS keys."""
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return BedrockClient(aws_region="eu-west-1", base_url=messages_api.base_url, max_retries=0)


def test_bedrock_invokes_the_model_path_signed_with_sigv4(
    messages_api: MessagesAPIServer, bedrock: BedrockClient
) -> None:
    messages_api.script(json_reply({"intents": ["QUERY_DATA"]}))

    reply = bedrock.complete(_request(model="eu.anthropic.claude-haiku-5-5", output_schema=INTENT_SCHEMA,
                                      effort="low", purpose="intent"))

    sent = messages_api.requests[0]
    assert (sent.route, sent.path, sent.model) == (
        "bedrock", "/model/eu.anthropic.claude-haiku-5-5/invoke", "eu.anthropic.claude-haiku-5-5")
    assert "model" not in sent.body and sent.body["anthropic_version"]
    assert sent.body["output_config"] == {"format": {"type": "json_schema", "schema": INTENT_SCHEMA},
                                          "effort": "low"}
    assert sent.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
    assert "/eu-west-1/bedrock/aws4_request" in sent.headers["authorization"]
    assert (reply.provider, json.loads(reply.text)) == ("bedrock", {"intents": ["QUERY_DATA"]})


def test_bedrock_follows_the_current_api_rules_and_maps_errors(
    messages_api: MessagesAPIServer, bedrock: BedrockClient
) -> None:
    # a forced tool choice is relaxed (the strict server would answer 400 on the invoke path too),
    bedrock.complete(_request(model="anthropic.claude-sonnet-5-5", tools=[CLASSIFY],
                              tool_choice={"type": "tool", "name": "classify"}))
    assert messages_api.requests[-1].body["tool_choice"] == {"type": "auto"}
    # a retired model is not found, and a denied InvokeModel is an auth error.
    with pytest.raises(LLMModelNotFound):
        bedrock.complete(_request(model="anthropic.claude-sonnet-4-5-20250929-v1:0"))
    messages_api.script(step(403, {"message": "User is not authorized to perform: bedrock:InvokeModel"},
                             headers={"x-amzn-errortype": "AccessDeniedException"}))
    with pytest.raises(LLMAuthError):
        bedrock.complete(_request(model="anthropic.claude-sonnet-5-5"))


def test_factory_builds_the_bedrock_client_without_a_key(
    messages_api: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_memory.config import Settings
    from agent_memory.wiring import build_llm

    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)
    settings = Settings.model_validate({
        "FLOW_LOG_TABLE": "f", "MEMORY_TABLE": "m", "SESSIONS_TABLE": "s",
        "LLM_PROVIDER": "bedrock", "CHAT_MODEL_ID": "anthropic.claude-sonnet-5-5",
        "ANTHROPIC_BEDROCK_BASE_URL": messages_api.base_url, "BEDROCK_REGION": "eu-central-1",
        "LLM_MAX_RETRIES": "0",
    })

    llm = build_llm(settings)
    reply = llm.complete(_request(model=settings.chat_model_id))

    assert isinstance(llm, BedrockClient) and llm.provider == reply.provider == "bedrock"
    assert messages_api.requests[0].path == "/model/anthropic.claude-sonnet-5-5/invoke"
    assert "/eu-central-1/bedrock/" in messages_api.requests[0].headers["authorization"]


# --- the key: rotated in Secrets Manager ----------------------------------------------------------

ROTATED_KEY = "sk-ant-rotated-key-9876543210"


def _keys_sent(server: MessagesAPIServer) -> list[str]:
    return [r.headers["authorization"].removeprefix("Bearer ") for r in server.requests]


def _factory_client(messages_api: MessagesAPIServer, max_age_s: int, secret_name: str = "am/rotating") -> Any:
    from agent_memory.config import Settings
    from agent_memory.wiring import build_llm

    return build_llm(Settings.model_validate({
        "FLOW_LOG_TABLE": "f", "MEMORY_TABLE": "m", "SESSIONS_TABLE": "s", "LLM_PROVIDER": "anthropic",
        "ANTHROPIC_SECRET_NAME": secret_name, "ANTHROPIC_SECRET_MAX_AGE_S": str(max_age_s),
        "ANTHROPIC_BASE_URL": messages_api.base_url, "LLM_MAX_RETRIES": "0",
    }))


def test_a_rotated_key_is_used_once_the_cached_one_is_older_than_max_age(
    secrets: Any, messages_api: MessagesAPIServer
) -> None:
    import time_machine

    secrets.create_secret(Name="am/rotating", SecretString=json.dumps({"api_key": API_KEY}))
    with time_machine.travel(time.time(), tick=True) as clock:
        llm = _factory_client(messages_api, max_age_s=300)
        llm.complete(_request(model=CHAT_MODEL))
        # When the secret is rotated,
        secrets.put_secret_value(SecretId="am/rotating", SecretString=json.dumps({"api_key": ROTATED_KEY}))
        llm.complete(_request(model=CHAT_MODEL))  # still within max_age: the cached key
        clock.shift(301)
        llm.complete(_request(model=CHAT_MODEL))  # past max_age: re-read

    # Then the same client (no new version, no cold start) sends the new key after max_age.
    assert _keys_sent(messages_api) == [API_KEY, API_KEY, ROTATED_KEY]


def test_max_age_zero_reads_the_secret_for_every_call(secrets: Any, messages_api: MessagesAPIServer) -> None:
    secrets.create_secret(Name="am/rotating", SecretString=API_KEY)
    llm = _factory_client(messages_api, max_age_s=0)
    llm.complete(_request(model=CHAT_MODEL))
    secrets.put_secret_value(SecretId="am/rotating", SecretString=ROTATED_KEY)
    llm.complete(_request(model=CHAT_MODEL))

    assert _keys_sent(messages_api) == [API_KEY, ROTATED_KEY]


def test_a_secret_rotated_to_an_unusable_value_is_llm_auth_with_its_metric_not_a_500(
    secrets: Any, messages_api: MessagesAPIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a client reading the key for every call, and the secret rotated to JSON without a key
    secrets.create_secret(Name="am/broken", SecretString=API_KEY)
    llm = _factory_client(messages_api, max_age_s=0, secret_name="am/broken")
    llm.complete(_request(model=CHAT_MODEL))
    secrets.put_secret_value(SecretId="am/broken", SecretString=json.dumps({"api_key": ""}))

    # When the next call runs, Then it is refused as a credentials fault, counted, and never sent
    with pytest.raises(LLMAuthError, match="unusable"):
        llm.complete(_request(model=CHAT_MODEL))
    assert len(messages_api.requests) == 1
    assert '"LLMAuthError"' in capsys.readouterr().out


def test_a_401_rereads_the_secret_and_tries_once_more(
    secrets: Any, messages_api: MessagesAPIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a client whose cached key was rotated away (and revoked) a moment ago,
    secrets.create_secret(Name="am/rotating", SecretString=API_KEY)
    llm = _factory_client(messages_api, max_age_s=300)
    secrets.put_secret_value(SecretId="am/rotating", SecretString=ROTATED_KEY)
    messages_api.script(authentication_failed(), text_reply("ok"))

    # When the API refuses the old key, Then the secret is re-read and the call succeeds with the new one.
    assert llm.complete(_request(model=CHAT_MODEL)).text == "ok"
    assert _keys_sent(messages_api) == [API_KEY, ROTATED_KEY]
    # and, recovered, it is no auth failure for the alarm.
    assert [name for name, _ in _metrics_emitted(capsys)] == []


def test_a_401_with_an_unchanged_key_is_not_retried(secrets: Any, messages_api: MessagesAPIServer) -> None:
    secrets.create_secret(Name="am/rotating", SecretString=API_KEY)
    llm = _factory_client(messages_api, max_age_s=300)
    messages_api.script(authentication_failed())

    with pytest.raises(LLMAuthError):
        llm.complete(_request(model=CHAT_MODEL))
    assert _keys_sent(messages_api) == [API_KEY]


def test_secret_api_key_passes_max_age_to_powertools(secrets: Any) -> None:
    secrets.create_secret(Name="am/plain2", SecretString=API_KEY)
    source = SecretApiKey("am/plain2", max_age_s=42)

    assert (source(), source(force=True), source.max_age_s) == (API_KEY, API_KEY, 42)
