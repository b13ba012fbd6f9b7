"""The local Messages-API test server itself (``tests.support.messages_api``), over HTTP on
127.0.0.1: in its strict mode (the default) it answers like the current API — 400 for what current
models reject, 404 for deprecated models, signed thinking on tool turns that must come back
unchanged, usage with cache fields from repeated prefixes, the Bedrock invoke path — and its
scripting API still works as the other suites use it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests
from anthropic.resources.messages.messages import DEPRECATED_MODELS

from tests.support.messages_api import (
    MessagesAPIServer,
    empty_reply,
    is_current_model,
    json_reply,
    non_json_reply,
    pause_turn_reply,
    refusal_reply,
    text_reply,
    tool_use_reply,
    truncated_json_reply,
)

CURRENT = ["claude-sonnet-5-5", "claude-haiku-5-5", "claude-opus-5-5", "claude-sonnet-5",
           "global.anthropic.claude-sonnet-5-5"]
TOOL = {"name": "read_clinical_data", "description": "Read a subject.",
        "input_schema": {"type": "object", "properties": {"subject_id": {"type": "string"}}}}


def _post(server: MessagesAPIServer, body: dict[str, Any], *, path: str = "/v1/messages") -> requests.Response:
    return requests.post(server.base_url + path, json=body, timeout=10)


def _body(model: str = "claude-sonnet-5-5", **extra: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": 4096, "messages": [{"role": "user", "content": "P001 入组了吗？"}], **extra}


def _assert_invalid_request(response: requests.Response, fragment: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "error" and body["request_id"].startswith("req_")
    assert body["error"]["type"] == "invalid_request_error"
    assert fragment in body["error"]["message"]


# --- what current models reject ------------------------------------------------------------------

REJECTED = [
    ({"tool_choice": {"type": "tool", "name": "read_clinical_data"}, "tools": [TOOL]}, "forced tool use"),
    ({"tool_choice": {"type": "any"}, "tools": [TOOL]}, "forced tool use"),
    ({"temperature": 0.2}, "`temperature`"),
    ({"top_p": 0.9}, "`top_p`"),
    ({"top_k": 40}, "`top_k`"),
    ({"thinking": {"type": "disabled"}}, "`disabled`"),
    ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, "thinking budgets"),
    ({"output_config": {"effort": "extreme"}}, "output_config.effort"),
    ({"output_config": {"format": {"type": "json_object"}}}, "output_config.format"),
]


@pytest.mark.parametrize("model", CURRENT)
@pytest.mark.parametrize(("extra", "fragment"), REJECTED, ids=[r[1] + str(i) for i, r in enumerate(REJECTED)])
def test_current_models_reject_like_the_api(
    messages_api: MessagesAPIServer, model: str, extra: dict[str, Any], fragment: str
) -> None:
    _assert_invalid_request(_post(messages_api, _body(model, **extra)), fragment)


@pytest.mark.parametrize("model", CURRENT)
def test_current_models_reject_an_assistant_prefill(messages_api: MessagesAPIServer, model: str) -> None:
    body = _body(model)
    body["messages"].append({"role": "assistant", "content": "{"})
    _assert_invalid_request(_post(messages_api, body), "prefill")


def test_a_rejected_request_takes_no_script_step(messages_api: MessagesAPIServer) -> None:
    messages_api.script(text_reply("scripted"))
    assert _post(messages_api, _body(temperature=0)).status_code == 400
    assert _post(messages_api, _body()).json()["content"] == [{"type": "text", "text": "scripted"}]


def test_allowed_settings_pass(messages_api: MessagesAPIServer) -> None:
    allowed = _body(tools=[TOOL], tool_choice={"type": "auto"}, thinking={"type": "adaptive"},
                    output_config={"effort": "xhigh", "format": {"type": "json_schema", "schema": {"type": "object"}}})
    assert _post(messages_api, allowed).status_code == 200


def test_older_models_and_the_lenient_mode_accept_them(messages_api: MessagesAPIServer) -> None:
    legacy = _body("claude-haiku-4-5", temperature=0.2, tool_choice={"type": "any"}, tools=[TOOL])
    assert _post(messages_api, legacy).status_code == 200
    messages_api.strict = False
    assert _post(messages_api, _body(temperature=0.2)).status_code == 200
    assert _post(messages_api, _body("claude-sonnet-4-5")).status_code == 200


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "claude-sonnet-4-5-20250929", "claude-3-7-sonnet-latest",
                                   "claude-opus-4-0"])
def test_deprecated_models_are_not_found(messages_api: MessagesAPIServer, model: str) -> None:
    assert model in DEPRECATED_MODELS
    response = _post(messages_api, _body(model))
    assert response.status_code == 404
    assert response.json()["error"] == {"type": "not_found_error", "message": f"model: {model}"}


def test_generation_rule() -> None:
    assert all(is_current_model(m) for m in CURRENT)
    assert not any(is_current_model(m) for m in ("claude-haiku-4-5", "claude-sonnet-4-5", "claude-test-model"))


# --- thinking on tool turns -----------------------------------------------------------------------


def _tool_turn(server: MessagesAPIServer, model: str = "claude-sonnet-5-5") -> dict[str, Any]:
    server.script(tool_use_reply("read_clinical_data", {"subject_id": "P001"}), text_reply("P001 已入组。"))
    reply: dict[str, Any] = _post(server, _body(model, tools=[TOOL])).json()
    return reply


def _continue(server: MessagesAPIServer, content: list[dict[str, Any]], model: str = "claude-sonnet-5-5",
              history: list[dict[str, Any]] | None = None) -> requests.Response:
    tool_use = next(b for b in content if b["type"] == "tool_use")
    messages = [
        *(history or []),
        {"role": "user", "content": "P001 入组了吗？"},
        {"role": "assistant", "content": content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use["id"], "content": "{}"}]},
    ]
    return _post(server, {"model": model, "max_tokens": 4096, "tools": [TOOL], "messages": messages})


def test_tool_turns_start_with_signed_thinking_that_must_come_back_unchanged(messages_api: MessagesAPIServer) -> None:
    reply = _tool_turn(messages_api)
    thinking, tool_use = reply["content"]
    assert thinking["type"] == "thinking" and thinking["signature"].startswith("sig_") and thinking["thinking"]
    assert tool_use["type"] == "tool_use"

    assert _continue(messages_api, reply["content"]).json()["content"][0]["text"] == "P001 已入组。"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda c: [c[1]], "Expected `thinking` or `redacted_thinking`, but found `tool_use`"),
        (lambda c: [{**c[0], "signature": "sig_forged"}, c[1]], "Invalid `signature`"),
        (lambda c: [{**c[0], "thinking": "rewritten"}, c[1]], "Invalid `signature`"),
        (lambda c: [{k: v for k, v in c[0].items() if k != "signature"}, c[1]], "Invalid `signature`"),
    ],
    ids=["missing", "forged-signature", "altered-text", "stripped-signature"],
)
def test_thinking_altered_or_missing_is_rejected(messages_api: MessagesAPIServer, change: Any, fragment: str) -> None:
    reply = _tool_turn(messages_api)
    _assert_invalid_request(_continue(messages_api, change(reply["content"])), fragment)


def test_thinking_is_bound_to_the_model_that_wrote_it(messages_api: MessagesAPIServer) -> None:
    reply = _tool_turn(messages_api, "claude-sonnet-5-5")
    _assert_invalid_request(_continue(messages_api, reply["content"], model="claude-opus-5-5"), "another model")


def test_earlier_turns_may_omit_their_thinking(messages_api: MessagesAPIServer) -> None:
    earlier = _tool_turn(messages_api)["content"]
    tool_use = earlier[1]
    history: list[dict[str, Any]] = [
                {"role": "user", "content": "P002?"}, {"role": "assistant", "content": [tool_use]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use["id"], "content": "{}"}]},
                {"role": "assistant", "content": "P002 未入组。"}]
    messages_api.script(tool_use_reply("read_clinical_data", {"subject_id": "P001"}), text_reply("ok"))
    current = _post(messages_api, {"model": "claude-sonnet-5-5", "max_tokens": 4096, "tools": [TOOL],
                                   "messages": [*history, {"role": "user", "content": "P001 入组了吗？"}]}).json()
    assert _continue(messages_api, current["content"], history=history).status_code == 200


def test_older_models_get_no_thinking(messages_api: MessagesAPIServer) -> None:
    reply = _tool_turn(messages_api, "claude-haiku-4-5")
    assert [b["type"] for b in reply["content"]] == ["tool_use"]


# --- usage and the prompt cache ---------------------------------------------------------------------


def _usage(server: MessagesAPIServer, body: dict[str, Any]) -> dict[str, int]:
    usage: dict[str, int] = _post(server, body).json()["usage"]
    return usage


def _system(tokens: int) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "规" * tokens, "cache_control": {"type": "ephemeral"}}]


def test_a_new_prefix_at_the_minimum_is_written_then_read(messages_api: MessagesAPIServer) -> None:
    body = _body(system=_system(1024))  # Sonnet 5.5: 1,024 tokens
    first, second = _usage(messages_api, body), _usage(messages_api, body)
    assert (first["cache_creation_input_tokens"], first["cache_read_input_tokens"]) == (1024, 0)
    assert (second["cache_creation_input_tokens"], second["cache_read_input_tokens"]) == (0, 1024)
    assert first["input_tokens"] == second["input_tokens"] > 0


def test_below_the_minimum_nothing_is_cached(messages_api: MessagesAPIServer) -> None:
    body = _body(system=_system(1023))
    for _ in range(2):
        usage = _usage(messages_api, body)
        assert (usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"]) == (0, 0)
        assert usage["input_tokens"] >= 1023


def test_the_cache_is_per_model_and_reset(messages_api: MessagesAPIServer) -> None:
    _usage(messages_api, _body(system=_system(1200)))
    assert _usage(messages_api, _body("claude-opus-5-5", system=_system(1200)))["cache_read_input_tokens"] == 0
    messages_api.reset_cache()
    assert _usage(messages_api, _body(system=_system(1200)))["cache_creation_input_tokens"] == 1200


def test_a_growing_conversation_reads_the_previous_breakpoint_and_writes_the_new_one(
    messages_api: MessagesAPIServer,
) -> None:
    # Given a conversation whose last message carries the breakpoint (moving forward each turn),
    turns: list[dict[str, Any]] = []
    usages = []
    for n in range(3):
        turns.append({"role": "user", "content": [{"type": "text", "text": f"问题{n}" + "细" * 200}]})
        marked = [dict(m, content=[dict(b) for b in m["content"]]) for m in turns]
        marked[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        usages.append(_usage(messages_api, {"model": "claude-sonnet-5-5", "max_tokens": 1024,
                                            "system": [{"type": "text", "text": "规" * 1100}], "messages": marked}))
        turns.append({"role": "assistant", "content": [{"type": "text", "text": f"回答{n}"}]})
    # Then each later turn reads what the previous one wrote (looked up within 20 blocks back),
    assert usages[0]["cache_read_input_tokens"] == 0 and usages[0]["cache_creation_input_tokens"] > 1100
    for before, after in zip(usages, usages[1:], strict=False):
        assert after["cache_read_input_tokens"] == before["cache_read_input_tokens"] + before[
            "cache_creation_input_tokens"]
        assert after["cache_creation_input_tokens"] > 0


def test_top_level_cache_control_caches_up_to_the_last_block(messages_api: MessagesAPIServer) -> None:
    body = _body(system=[{"type": "text", "text": "规" * 1100}], cache_control={"type": "ephemeral"})
    first, second = _usage(messages_api, body), _usage(messages_api, body)
    assert first["cache_creation_input_tokens"] > 1100 and first["input_tokens"] == 0
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]


def test_scripted_usage_is_kept(messages_api: MessagesAPIServer) -> None:
    usage = {"input_tokens": 1, "output_tokens": 2, "cache_creation_input_tokens": 3, "cache_read_input_tokens": 4}
    messages_api.script(text_reply("x", usage=usage))
    assert _usage(messages_api, _body()) == usage


# --- replies and routes -------------------------------------------------------------------------------


def test_structured_requests_get_scripted_json_or_an_empty_object(messages_api: MessagesAPIServer) -> None:
    structured = _body(output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}})
    assert _post(messages_api, structured).json()["content"] == [{"type": "text", "text": "{}"}]
    messages_api.script(json_reply({"intents": ["QUERY_DATA"], "备注": "中文"}))
    text = _post(messages_api, structured).json()["content"][0]["text"]
    assert json.loads(text) == {"intents": ["QUERY_DATA"], "备注": "中文"}


def test_reply_helpers(messages_api: MessagesAPIServer) -> None:
    messages_api.script(refusal_reply(), empty_reply(), pause_turn_reply(text="检索中"))
    refusal, empty, paused = (_post(messages_api, _body()).json() for _ in range(3))
    assert (refusal["stop_reason"], refusal["content"], refusal["stop_details"]["type"]) == ("refusal", [], "refusal")
    assert (empty["stop_reason"], empty["content"]) == ("end_turn", [])
    assert paused["stop_reason"] == "pause_turn"
    assert [b["type"] for b in paused["content"]] == ["text", "server_tool_use"]
    assert refusal["model"] == "claude-sonnet-5-5"  # the request's model


def test_malformed_body_helpers(messages_api: MessagesAPIServer) -> None:
    messages_api.script(non_json_reply(), truncated_json_reply())
    html, truncated = _post(messages_api, _body()), _post(messages_api, _body())
    assert html.status_code == 200 and html.headers["content-type"] == "text/html" and html.text.startswith("<html>")
    assert truncated.status_code == 200
    with pytest.raises(ValueError):
        json.loads(truncated.text)


def test_bedrock_invoke_path_is_answered_with_the_model_from_the_url(messages_api: MessagesAPIServer) -> None:
    body = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 256,
            "messages": [{"role": "user", "content": "hi"}]}
    ok = _post(messages_api, body, path="/model/eu.anthropic.claude-haiku-5-5/invoke")
    rejected = _post(messages_api, {**body, "temperature": 1}, path="/model/anthropic.claude-haiku-5-5/invoke")
    retired = _post(messages_api, body, path="/model/anthropic.claude-sonnet-4-5-20250929-v1:0/invoke")
    assert (ok.status_code, ok.json()["model"]) == (200, "eu.anthropic.claude-haiku-5-5")
    assert (rejected.status_code, retired.status_code) == (400, 404)
    assert [(r.route, r.model) for r in messages_api.requests][0] == ("bedrock", "eu.anthropic.claude-haiku-5-5")
    assert _post(messages_api, body, path="/v1/other").status_code == 404


def test_the_scripting_api_still_repeats_the_last_step(messages_api: MessagesAPIServer) -> None:
    messages_api.script(text_reply("a"))
    messages_api.enqueue(text_reply("b"))
    texts = [_post(messages_api, _body("claude-test-model")).json()["content"][0]["text"] for _ in range(3)]
    assert texts == ["a", "b", "b"]
    assert len(messages_api.requests) == 3
    messages_api.clear()
    assert messages_api.requests == []
