"""The chat Lambda handler end to end with the REAL ``anthropic`` SDK.

``functions/chat/app.py`` is imported fresh per test inside moto (tables from template.yaml,
the API key in moto Secrets Manager) with ``LLM_PROVIDER=anthropic`` and
``ANTHROPIC_BASE_URL`` pointing at the local scripted Messages-API server, and is driven
with API Gateway HTTP API (payload 2.0) events. The tests assert on what was SENT to the
Messages API, on the HTTP responses, and on what was stored.

Covered: the messages sent start with a user message and alternate; a slow LLM ends in our own
JSON error before the gateway timeout; overload, rate limits and bad requests; a reply cut by
max_tokens is flagged truncated; an over-size message is 413 with nothing written; the
Idempotency-Key and input validation; with the default chat model on the strict server: thinking
blocks sent back in the tool loop, cache breakpoints only where the prefix is cacheable (and the
server's cache reads on the following turns), ``calls[].usage`` carrying the server's figures, and
the provider's faults (a malformed 200, an empty reply, a refusal, 401, 404) answered through the
one error map with only the failed question written.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agent_memory.chat.agent import REFUSAL_REPLY
from agent_memory.config import DEFAULT_CHAT_MODEL_ID
from infra.local.events import build_http_api_event
from tests.conftest import FakeLambdaContext
from tests.support.auth import add_member
from tests.support.messages_api import (
    MessagesAPIServer,
    RecordedRequest,
    authentication_failed,
    empty_reply,
    invalid_request,
    model_not_found,
    non_json_reply,
    not_a_message_reply,
    overloaded,
    pause_turn_reply,
    permission_denied,
    rate_limited,
    refusal_reply,
    slow,
    text_reply,
    tool_use_reply,
    truncated_json_reply,
)
from tests.unit.chat_support import hot_line, seed_project

REPO = Path(__file__).resolve().parents[2]
CHAT_APP = REPO / "functions" / "chat" / "app.py"
API_KEY = "sk-ant-handler-test-0123456789"
SECRET_NAME = "agent-memory/test/anthropic"
CHAT_MODEL = DEFAULT_CHAT_MODEL_ID  # the strict server applies the current API's rules to it
PROJECT = "demo-iit"  # the demo clinical data knows its subjects (P001 ...)
USER = "user-pi-1"
_module_ids = itertools.count(1)

pytestmark = [
    pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning"),
    pytest.mark.filterwarnings("ignore:Disabling idempotency:UserWarning"),
]


@dataclass
class ChatEnv:
    """One fresh chat function wired to moto and the stub."""

    app: ModuleType
    api: MessagesAPIServer
    tables: dict[str, str]
    repo: Any
    dynamodb: Any

    def post(
        self,
        content: str | None = "你好",
        *,
        session: str = "s-1",
        project: str = PROJECT,
        key: str | None = None,
        body: Any = None,
        raw_body: str | None = None,
        context: FakeLambdaContext | None = None,
        request_id: str | None = None,
    ) -> dict[str, Any]:
        """POST a message through ``lambda_handler``; returns the raw proxy response."""
        if raw_body is None:
            raw_body = json.dumps({"content": content} if body is None else body, ensure_ascii=False)
        headers = {"content-type": "application/json", "host": "api.local", "user-agent": "pytest"}
        if key:
            headers["idempotency-key"] = key
        event = build_http_api_event(
            "POST",
            f"/v1/projects/{project}/sessions/{session}/messages",
            headers,
            "",
            raw_body.encode("utf-8"),
            "POST /v1/projects/{project_id}/sessions/{session_id}/messages",
            {"project_id": project, "session_id": session},
            {"sub": USER, "custom:projects": f"{PROJECT}:member,no-such-project:member"},
            request_id,
        )
        result: dict[str, Any] = self.app.lambda_handler(event, context or FakeLambdaContext())
        return result

    # --- what was stored ------------------------------------------------------------------
    def scan(self, logical_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self.tables[logical_id], "ConsistentRead": True}
        while True:
            page = self.dynamodb.scan(**kwargs)
            items.extend(page["Items"])
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def snapshot(self) -> dict[str, list[dict[str, Any]]]:
        return {logical: self.scan(logical) for logical in self.tables}

    def messages(self, session: str = "s-1") -> list[dict[str, Any]]:
        pk = f"{PROJECT}#{session}"
        return [
            i for i in self.scan("SessionsTable") if i["pk"]["S"] == pk and i["sk"]["S"].startswith("MSG#")
        ]

    def flow_log(self) -> list[dict[str, Any]]:
        return self.scan("FlowLogTable")


def _load_chat_app() -> ModuleType:
    name = f"chat_app_under_test_{next(_module_ids)}"
    spec = importlib.util.spec_from_file_location(name, CHAT_APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def _chat_env(
    messages_api: MessagesAPIServer,
    monkeypatch: pytest.MonkeyPatch,
    *,
    idempotency: bool,
    env: dict[str, str],
) -> Iterator[ChatEnv]:
    import boto3
    from aws_lambda_powertools.utilities.parameters.base import clear_caches
    from moto import mock_aws

    from agent_memory.adapters.dynamo.chat import ChatRepository
    from agent_memory.config import get_settings
    from infra.local.stack import DEMO_CLINICAL_DATA_FILE
    from infra.template_model import create_tables, load_template

    region = os.environ["AWS_REGION"]
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=region)
        tables = create_tables(dynamodb, load_template())
        boto3.client("secretsmanager", region_name=region).create_secret(
            Name=SECRET_NAME, SecretString=json.dumps({"api_key": API_KEY})
        )
        settings_env = {
            "AWS_DEFAULT_REGION": region,
            "FLOW_LOG_TABLE": tables["FlowLogTable"],
            "MEMORY_TABLE": tables["MemoryTable"],
            "SESSIONS_TABLE": tables["SessionsTable"],
            "IDEMPOTENCY_TABLE": tables["IdempotencyTable"],
            "LLM_PROVIDER": "anthropic",
            "INTENT_CLASSIFIER": "rules",
            "CHAT_MODEL_ID": CHAT_MODEL,
            "ANTHROPIC_SECRET_NAME": SECRET_NAME,
            "ANTHROPIC_BASE_URL": messages_api.base_url,
            "LLM_MAX_RETRIES": "2",
            "CLINICAL_DATA_FILE": str(DEMO_CLINICAL_DATA_FILE),
            # the local REDCap server is plain http on loopback: the local runtime's egress policy
            "EGRESS_LOCAL_RUNTIME": "true",
            **env,
        }
        for k, v in settings_env.items():
            monkeypatch.setenv(k, v)
        if idempotency:
            monkeypatch.delenv("POWERTOOLS_IDEMPOTENCY_DISABLED", raising=False)
        else:
            monkeypatch.setenv("POWERTOOLS_IDEMPOTENCY_DISABLED", "true")
        clear_caches()
        get_settings.cache_clear()
        try:
            app = _load_chat_app()
            repo = ChatRepository()
            seed_project(repo, PROJECT, weeks=3)
            add_member(repo, PROJECT, USER, study_role="PI")
            yield ChatEnv(app=app, api=messages_api, tables=tables, repo=repo, dynamodb=dynamodb)
        finally:
            get_settings.cache_clear()
            clear_caches()


MakeChat = Callable[..., ChatEnv]


@pytest.fixture
def make_chat(messages_api: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeChat]:
    """``make_chat(idempotency=False, **env)``: a fresh chat function (cold start) with extra
    environment variables (e.g. ``API_GATEWAY_TIMEOUT_S="4"``)."""
    with ExitStack() as stack:

        def make(*, idempotency: bool = False, **env: str) -> ChatEnv:
            return stack.enter_context(_chat_env(messages_api, monkeypatch, idempotency=idempotency, env=env))

        yield make


@pytest.fixture
def chat(make_chat: MakeChat) -> ChatEnv:
    """The chat function with Powertools idempotency disabled (no Idempotency-Key sent)."""
    return make_chat()


@pytest.fixture
def chat_idem(make_chat: MakeChat) -> ChatEnv:
    """The chat function with Powertools idempotency enabled (IdempotencyTable in moto)."""
    return make_chat(idempotency=True)


# --- helpers ------------------------------------------------------------------------------------

ADMIN_RULE = "严禁在未授权情况下删除数据"
HOT_TAG = '<hot_memory project="'
HISTORY_TAG = '<history_book weeks="'  # the instructions mention "<history_book>" by name only


def _json(response: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(response["body"])
    return body


def _status(response: dict[str, Any]) -> int:
    return int(response["statusCode"])


def _header(response: dict[str, Any], name: str) -> str | None:
    for k, v in (response.get("headers") or {}).items():
        if k.lower() == name.lower():
            return str(v)
    for k, values in (response.get("multiValueHeaders") or {}).items():
        if k.lower() == name.lower() and values:
            return str(values[0])
    return None


def _system(req: RecordedRequest) -> list[dict[str, Any]]:
    system: list[dict[str, Any]] = req.body["system"]
    return system


def _block_with(req: RecordedRequest, marker: str) -> list[int]:
    return [i for i, b in enumerate(_system(req)) if marker in b["text"]]


def _breakpoints(body: dict[str, Any]) -> list[str]:
    """Where ``cache_control`` sits: ``system[i]``, ``messages[i][j]``, ``tools[i]``."""
    found = [f"system[{i}]" for i, b in enumerate(body.get("system") or []) if "cache_control" in b]
    for i, m in enumerate(body["messages"]):
        content = m["content"] if isinstance(m["content"], list) else []
        found += [f"messages[{i}][{j}]" for j, b in enumerate(content) if "cache_control" in b]
    found += [f"tools[{i}]" for i, t in enumerate(body.get("tools") or []) if "cache_control" in t]
    return found


def _assert_error_body(response: dict[str, Any], status: int, *, secret: str | None = None) -> dict[str, Any]:
    assert _status(response) == status, response
    assert (_header(response, "content-type") or "").startswith("application/json")
    body = _json(response)
    assert isinstance(body.get("error"), str) and body["error"]
    assert isinstance(body.get("reason"), str) and body["reason"]
    if secret is not None:
        assert secret not in response["body"]
    return body


def _assert_alternating_from_user(messages: list[dict[str, Any]]) -> None:
    """Starts with a user message, roles alternate, every tool_result follows its tool_use."""
    assert messages and messages[0]["role"] == "user"
    for prev, cur in itertools.pairwise(messages):
        assert prev["role"] != cur["role"], [m["role"] for m in messages]
    for i, m in enumerate(messages):
        for block in m["content"] if isinstance(m["content"], list) else []:
            if block.get("type") == "tool_result":
                assert i > 0 and messages[i - 1]["role"] == "assistant"
                uses = {b["id"] for b in messages[i - 1]["content"] if b.get("type") == "tool_use"}
                assert block["tool_use_id"] in uses


def _question_only(messages: list[dict[str, Any]], question: str) -> None:
    """A first turn's messages: one user message, the session memory (the asker), the session block,
    then the question."""
    assert len(messages) == 1 and messages[0]["role"] == "user", messages
    memory, session_block, asked = messages[0]["content"]
    assert memory["type"] == "text" and memory["text"].startswith("<conversation_memory>\nAsker: ")
    assert session_block["type"] == "text" and session_block["text"].startswith("<session id=")
    assert asked == {"type": "text", "text": question}


def _session_text(body: dict[str, Any]) -> str:
    """The session block a request carries (the text of its last message opening ``<session id=``)."""
    (text,) = [b["text"] for b in body["messages"][-1]["content"] if b["text"].startswith("<session id=")]
    assert isinstance(text, str)
    return text


def _user_words(message: dict[str, Any]) -> list[str]:
    """The user's words in a user message (the session block and the session memory left out)."""
    return [b["text"] for b in message["content"]
            if b.get("type") == "text" and not b["text"].startswith(("<session", "<conversation_memory>"))]


def _flow_items_for(env: ChatEnv, message_id: str) -> list[dict[str, Any]]:
    return [i for i in env.flow_log() if i["message_id"]["S"] == message_id]


def _texts(items: list[dict[str, Any]]) -> list[str]:
    return [i["content"]["S"] for i in items]


# --- what was sent ------------------------------------------------------------------------------

DATA_Q = "P001 入组了吗"
QC_Q = "帮我做一下数据质控"
MEMORY_Q = "我上次跟你说的规矩你记得吗"
HISTORY_Q = "我们之前为什么暂停筛选"
TREND_Q = "回顾一下入组趋势"
QC_AND_TREND_Q = "帮我做一下数据质控，顺便回顾下入组趋势"


ROUTING = [  # (message, its intent, whether the history book must be sent)
    (DATA_Q, "QUERY_DATA", False),
    (QC_Q, "QC_TASK", False),
    (MEMORY_Q, "MEMORY_RECALL", False),
    (HISTORY_Q, "QUERY_HISTORY", True),
    (TREND_Q, "ANALYZE_TREND", True),
]


def test_hot_memory_always_sent_history_only_for_history_intents(chat: ChatEnv) -> None:
    chat.api.script(text_reply("好的"))
    for n, (content, intent, with_history) in enumerate(ROUTING):
        chat.api.clear()

        response = chat.post(content, session=f"s-route-{n}")

        assert _status(response) == 200, (content, response)
        body = _json(response)
        assert body["intents"] == [intent]
        assert body["provider"] == "anthropic"
        assert len(chat.api.requests) == 1
        req = chat.api.requests[0]
        assert req.path.startswith("/v1/messages")
        # the key came from Secrets Manager (anthropic 2.x sends it as a bearer token)
        assert req.headers["authorization"] == f"Bearer {API_KEY}"
        assert req.body["model"] == CHAT_MODEL
        system = _system(req)
        assert all(b["type"] == "text" for b in system)
        # hot memory: its own delimited block right after the instructions, admin rule inside
        assert _block_with(req, HOT_TAG) == [1], content
        hot = system[1]["text"]
        assert ADMIN_RULE in hot and hot.rstrip().endswith("</hot_memory>")
        assert ADMIN_RULE not in system[0]["text"]
        sent = json.dumps(req.body, ensure_ascii=False)
        if with_history:
            assert _block_with(req, HISTORY_TAG) == [2], content
            assert "2026-W03" in system[2]["text"]
            assert body["calls"][0]["history_weeks"] == 3
        else:
            assert HISTORY_TAG not in sent and "2026-W01" not in sent, content
            assert body["calls"][0]["history_weeks"] == 0
        _question_only(req.body["messages"], content)


def test_qc_plus_history_message_runs_two_conversations_qc_without_history(chat: ChatEnv) -> None:
    chat.api.script(text_reply("质控：数据完整"), text_reply("趋势：入组逐周增加"))

    response = chat.post(QC_AND_TREND_Q)

    assert _status(response) == 200, response
    body = _json(response)
    assert set(body["intents"]) == {"QC_TASK", "ANALYZE_TREND"}
    assert len(chat.api.requests) == 2
    qc, hist = (r.body for r in chat.api.requests)
    assert "QC_TASK" in _session_text(qc)  # the session block's task note
    for req in chat.api.requests:
        assert _block_with(req, HOT_TAG) == [1]
        assert ADMIN_RULE in _system(req)[1]["text"]
        assert req.body["model"] == CHAT_MODEL
    qc_text = json.dumps(qc, ensure_ascii=False)
    assert HISTORY_TAG not in qc_text and "2026-W0" not in qc_text
    assert _block_with(chat.api.requests[1], HISTORY_TAG) == [2]
    assert "QC_TASK" not in _session_text(hist)
    assert [c["history_weeks"] for c in body["calls"]] == [0, 3]
    assert "质控：数据完整" in body["reply"] and "趋势：入组逐周增加" in body["reply"]
    # the second conversation starts afresh: it is not a continuation of the QC one
    _question_only(hist["messages"], QC_AND_TREND_Q)


#: A hot memory that makes the prefix up to it (tools, instructions, hot memory) cacheable for the
#: default chat model: 12 admin rules of about 40 estimated tokens each.
LARGE_RULE = "严禁在未经数据管理员书面授权的情况下修改或删除任何受试者的源数据记录"
LARGE_HOT_MEMORY = [hot_line(f"r{k:02d}", "System Rules", f"第{k}条规则：{LARGE_RULE}") for k in range(12)]


def _seed_large_hot_memory(env: ChatEnv) -> None:
    from agent_memory.domain.models import HotMemory

    current = env.repo.projects.load_hot_memory(PROJECT)
    env.repo.projects.save_hot_memory(
        HotMemory(project_id=PROJECT, lines=[*current.lines, *LARGE_HOT_MEMORY]),
        expected_version=current.version, actor="seed", reason="seed", now=current.lines[0].created_at, tokens=0,
    )


def test_cache_breakpoints_on_hot_memory_history_and_last_recent_turn(chat: ChatEnv) -> None:
    _seed_large_hot_memory(chat)
    chat.api.script(text_reply("第一轮回答"), text_reply("第二轮回答"), text_reply("第三轮回答"))
    assert _status(chat.post("你好")) == 200
    assert _status(chat.post(MEMORY_Q)) == 200

    response = chat.post(TREND_Q)

    assert _status(response) == 200, response
    first, second, third = (r.body for r in chat.api.requests)
    # first turn: no recent turns -> hot memory and the session memory leading the question's message
    assert _breakpoints(first) == ["system[1]", "messages[0][0]"]
    assert first["messages"][0]["content"][0]["text"].startswith("<conversation_memory>")
    # second: hot memory, the same session memory (now leading the replayed turn) and the last block
    # of the last recent turn (the assistant reply)
    assert _breakpoints(second) == ["system[1]", "messages[0][0]", "messages[1][0]"]
    assert second["messages"][0]["content"][0] == first["messages"][0]["content"][0]
    assert second["messages"][1]["content"][0]["text"] == "第一轮回答"
    # third (history): hot memory, history, session memory, last recent turn; never the new user message
    assert _breakpoints(third) == ["system[1]", "system[2]", "messages[0][0]", "messages[3][0]"]
    assert HISTORY_TAG in third["system"][2]["text"]
    assert third["messages"][3] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "第二轮回答", "cache_control": {"type": "ephemeral"}}],
    }
    # the session block (it changes every turn) and the question come after the last breakpoint
    assert "cache_control" not in json.dumps(third["messages"][-1])
    assert [b["type"] for b in third["messages"][-1]["content"]] == ["text", "text"]
    assert all('<session id="' not in b["text"] for b in third["system"])
    for body in (first, second, third):
        assert len(_breakpoints(body)) <= 4
        for b in body["system"]:
            assert b.get("cache_control", {"type": "ephemeral"}) == {"type": "ephemeral"}


def test_every_breakpoint_placed_is_written_then_read(chat: ChatEnv) -> None:
    # the instructions and tools with the small seeded hot memory reach the default model's minimum
    # cacheable length (a prefix under it carries no breakpoint: tests/unit/test_prompt.py)
    chat.api.script(text_reply("好的"))
    usages = []
    for k in range(4):
        response = chat.post(f"第{k}轮：好的")
        assert _status(response) == 200, response
        usages.append(_json(response)["calls"][0]["usage"])

    # one on hot memory, one on the session memory, and from the second turn on one on the previous turn
    assert [_breakpoints(r.body) for r in chat.api.requests] == [
        ["system[1]", "messages[0][0]"], ["system[1]", "messages[0][0]", "messages[1][0]"],
        ["system[1]", "messages[0][0]", "messages[3][0]"], ["system[1]", "messages[0][0]", "messages[5][0]"]]
    # and every breakpoint placed is honoured: turn 1 writes, each later turn reads what the one before wrote
    first, *later = usages
    assert first["cache_creation_input_tokens"] > 0 and first["cache_read_input_tokens"] == 0
    assert all(u["cache_read_input_tokens"] > 0 for u in later)
    reads = [u["cache_read_input_tokens"] for u in later]
    assert reads == sorted(reads) and reads[0] == first["cache_creation_input_tokens"]


def test_ten_turns_read_the_cache_from_the_second_turn_on(chat: ChatEnv) -> None:
    # a hot memory large enough to be cached, and the server reporting usage from what it sees
    _seed_large_hot_memory(chat)
    chat.api.script(text_reply("好的，记下了。"))
    usages = []
    for k in range(10):
        response = chat.post(f"第{k}轮：请记下今天的随访安排。")
        assert _status(response) == 200, response
        (call,) = _json(response)["calls"]
        assert call["model_calls"] == 1
        usages.append(call["usage"])

    # turn 1 writes the cached prefix; every later turn reads it (the prefix through hot memory, and
    # from turn 3 on the previous turns as well: the read grows)
    assert usages[0]["cache_creation_input_tokens"] > 0 and usages[0]["cache_read_input_tokens"] == 0
    reads = [u["cache_read_input_tokens"] for u in usages[1:]]
    assert all(r > 0 for r in reads)
    assert reads[-1] > reads[0]


def test_tool_use_reply_runs_the_react_loop_and_returns_the_final_text(chat: ChatEnv) -> None:
    chat.api.script(
        tool_use_reply("read_clinical_data", {"subject_id": "P001"}, text="我先查一下数据。"),
        text_reply("P001 已入组。"),
    )

    response = chat.post(DATA_Q)

    assert _status(response) == 200, response
    assert _json(response)["reply"] == "P001 已入组。"
    assert len(chat.api.requests) == 2
    first, second = (r.body for r in chat.api.requests)
    assert [t["name"] for t in first["tools"]] == ["read_clinical_data", "read_history"]
    assert first["tool_choice"] == {"type": "auto"}
    # nothing before the reply's thinking block changed: same system, tools and tool_choice
    assert second["system"] == first["system"] and second["model"] == CHAT_MODEL
    assert second["tools"] == first["tools"] and second["tool_choice"] == first["tool_choice"]
    msgs = second["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    # the assistant turn went back as the server sent it: its signed thinking block first (the strict
    # server answers 400 to one altered or missing), then the text and the tool call
    assert [b["type"] for b in msgs[1]["content"]] == ["thinking", "text", "tool_use"]
    assert isinstance(msgs[1]["content"][0]["signature"], str) and msgs[1]["content"][0]["signature"]
    tool_use = next(b for b in msgs[1]["content"] if b["type"] == "tool_use")
    assert tool_use["name"] == "read_clinical_data" and tool_use["input"] == {"subject_id": "P001"}
    (result,) = msgs[2]["content"]
    assert result["type"] == "tool_result" and result["tool_use_id"] == tool_use["id"]
    assert result["is_error"] is False and '"P001"' in result["content"]
    _assert_alternating_from_user(msgs)
    # the stored assistant message keeps the tool call (so later turns can replay it)
    (assistant,) = [m for m in chat.messages() if m["role"]["S"] == "assistant"]
    assert assistant["content"]["S"] == "P001 已入组。"
    assert tool_use["id"] in assistant["tool_calls"]["S"]
    assert msgs[1]["content"][0]["signature"] not in json.dumps(assistant)  # thinking is never stored


def test_a_history_question_routed_elsewhere_reads_history_through_the_tool(chat: ChatEnv) -> None:
    # Given: a question about the project's past that the rules do not send to history
    chat.api.script(
        tool_use_reply("read_history", {"from_week": "2026-W02", "to_week": "2026-W03"}, thinking="查周报"),
        text_reply("2026-W02：第2周决定事项 2；2026-W03：第3周决定事项 3。"),
    )

    response = chat.post("那段日子里定过些啥")

    # Then: no history block, the tool offered and run on the strict server, the reports sent back
    assert _status(response) == 200, response
    body = _json(response)
    assert body["calls"][0]["history_weeks"] == 0 and body["calls"][0]["history_tool_weeks"] == 2
    first, second = (r.body for r in chat.api.requests)
    assert HISTORY_TAG not in json.dumps(first, ensure_ascii=False)
    assert [t["name"] for t in first["tools"]] == ["read_clinical_data", "read_history"]
    (result,) = second["messages"][-1]["content"]
    assert result["type"] == "tool_result" and result["is_error"] is False
    assert result["content"].startswith("[2026-W02] ") and "[2026-W03] " in result["content"]
    assert "2026-W01" not in result["content"]
    assert body["reply"].startswith("2026-W02")


def test_an_invalid_read_history_call_gets_an_error_result_and_the_turn_answers(chat: ChatEnv) -> None:
    # Given: the model asks for more than 50 weeks
    chat.api.script(
        tool_use_reply("read_history", {"from_week": "2025-W01", "to_week": "2026-W03"}),
        text_reply("范围太大，请缩小。"),
    )

    response = chat.post("那段日子里定过些啥")

    # Then: an error tool_result naming the cap; nothing read; the reply is the model's
    assert _status(response) == 200, response
    (result,) = chat.api.requests[1].body["messages"][-1]["content"]
    assert result["is_error"] is True and "at most 50" in result["content"]
    assert _json(response)["calls"][0]["history_tool_weeks"] == 0


# --- usage and the provider's faults ------------------------------------------------------------

SERVER_USAGE = {"input_tokens": 812, "output_tokens": 57, "cache_creation_input_tokens": 1340,
                "cache_read_input_tokens": 2210}


def test_calls_usage_carries_the_servers_figures(chat: ChatEnv) -> None:
    chat.api.script(
        tool_use_reply("read_clinical_data", {"subject_id": "P001"}, usage=SERVER_USAGE),
        text_reply("P001 已入组。", usage={**SERVER_USAGE, "output_tokens": 9, "cache_creation_input_tokens": 0}),
    )

    response = chat.post(DATA_Q)

    assert _status(response) == 200, response
    (call,) = _json(response)["calls"]
    assert call["model_calls"] == 2
    assert call["usage"] == {"input_tokens": 1624, "output_tokens": 66, "cache_creation_input_tokens": 1340,
                             "cache_read_input_tokens": 4420}


def _assert_only_the_failed_question(env: ChatEnv, question: str) -> None:
    (user,) = env.messages()
    assert (user["role"]["S"], user["status"]["S"], user["content"]["S"]) == ("user", "failed", question)
    flow = env.flow_log()
    assert _texts(flow) == [question] and flow[0]["status"]["S"] == "failed"


@pytest.mark.parametrize("malformed", [non_json_reply(), truncated_json_reply(), not_a_message_reply()],
                         ids=["html", "truncated-json", "not-a-message"])
def test_a_malformed_200_is_502_llm_bad_response(chat: ChatEnv, malformed: dict[str, Any]) -> None:
    chat.api.script(malformed)

    response = chat.post(DATA_Q)

    body = _assert_error_body(response, 502, secret=DATA_Q)
    assert body["error"] == "llm_bad_response" and body["retryable"] is False
    _assert_only_the_failed_question(chat, DATA_Q)


def test_an_empty_reply_is_asked_for_once_more_then_502_llm_empty_reply(chat: ChatEnv) -> None:
    chat.api.script(empty_reply(thinking="..."))  # every answer: a thinking block and no text

    response = chat.post(MEMORY_Q)

    body = _assert_error_body(response, 502, secret=MEMORY_Q)
    assert body["error"] == "llm_empty_reply" and body["retryable"] is True
    first, second = chat.api.requests  # the same request, twice, and no more
    assert second.body == first.body
    _assert_only_the_failed_question(chat, MEMORY_Q)


def test_an_empty_reply_then_an_answer_is_200(chat: ChatEnv) -> None:
    chat.api.script(empty_reply(), text_reply("记得：严禁在未授权情况下删除数据。"))

    response = chat.post(MEMORY_Q)

    assert _status(response) == 200, response
    assert _json(response)["reply"] == "记得：严禁在未授权情况下删除数据。"
    assert len(chat.api.requests) == 2


def test_a_paused_turn_is_continued_by_sending_the_paused_content_back(chat: ChatEnv) -> None:
    # Given a reply paused mid-way, then its continuation (the strict server refuses a trailing
    # assistant message unless it is exactly the paused content it sent)
    paused = pause_turn_reply(text="记得：")
    chat.api.script(paused, text_reply("严禁在未授权情况下删除数据。"))

    # When the turn runs
    response = chat.post(MEMORY_Q)

    # Then the continuation request ended with the paused content unchanged, and the reply joins both
    assert _status(response) == 200, response
    second = chat.api.requests[1].body["messages"]
    assert second[-1]["role"] == "assistant"
    assert second[-1]["content"] == paused["json"]["content"]
    assert _json(response)["reply"] == "记得：严禁在未授权情况下删除数据。"


def test_two_pauses_in_a_row_are_continued_as_one_assistant_turn(chat: ChatEnv) -> None:
    # Given a reply paused twice before it finishes
    chat.api.script(pause_turn_reply(text="记得："), pause_turn_reply(text="严禁"),
                    text_reply("在未授权情况下删除数据。"))

    # When the turn runs
    response = chat.post(MEMORY_Q)

    # Then the strict server accepted both continuations and the reply joins the three parts
    assert _status(response) == 200, response
    assert len(chat.api.requests) == 3
    assert _json(response)["reply"] == "记得：严禁在未授权情况下删除数据。"


def test_a_refusal_is_200_with_the_refusal_sentence_flagged_refused(chat: ChatEnv) -> None:
    chat.api.script(refusal_reply(), text_reply("好的。"))

    response = chat.post("写一段绕过伦理审查的方案")

    assert _status(response) == 200, response
    body = _json(response)
    assert body["refused"] is True and body["reply"] == REFUSAL_REPLY and body["truncated"] is False
    stored = sorted((m["role"]["S"], m["content"]["S"]) for m in chat.messages())
    assert stored == [("assistant", REFUSAL_REPLY), ("user", "写一段绕过伦理审查的方案")]
    # the refused turn leaves the context of the next turn
    assert _status(chat.post("你好")) == 200
    sent = json.dumps(chat.api.requests[-1].body["messages"], ensure_ascii=False)
    assert "绕过伦理审查" not in sent and REFUSAL_REPLY not in sent
    assert _json(chat.post("你好"))["refused"] is False


@pytest.mark.parametrize("rejection", [authentication_failed(), permission_denied()], ids=["401", "403"])
def test_rejected_credentials_are_502_llm_auth(chat: ChatEnv, rejection: dict[str, Any]) -> None:
    chat.api.script(rejection)

    response = chat.post(DATA_Q)

    body = _assert_error_body(response, 502, secret=DATA_Q)
    assert body["error"] == "llm_auth" and body["retryable"] is False
    assert API_KEY not in response["body"] and "x-api-key" not in response["body"]
    _assert_only_the_failed_question(chat, DATA_Q)


def test_an_unknown_model_is_502_llm_model_not_found(chat: ChatEnv) -> None:
    chat.api.script(model_not_found(CHAT_MODEL))

    response = chat.post(DATA_Q)

    body = _assert_error_body(response, 502, secret=DATA_Q)
    assert body["error"] == "llm_model_not_found" and body["retryable"] is False
    assert len(chat.api.requests) == 1  # never retried
    _assert_only_the_failed_question(chat, DATA_Q)


@pytest.mark.filterwarnings("ignore:The model 'claude-sonnet-4-5' is deprecated:DeprecationWarning")
def test_a_retired_model_is_502_llm_model_not_found(make_chat: MakeChat) -> None:
    env = make_chat(CHAT_MODEL_ID="claude-sonnet-4-5")  # in the SDK's DEPRECATED_MODELS: the server says 404

    response = env.post(DATA_Q)

    body = _assert_error_body(response, 502, secret=DATA_Q)
    assert body["error"] == "llm_model_not_found"
    assert env.api.requests[0].body["model"] == "claude-sonnet-4-5"
    _assert_only_the_failed_question(env, DATA_Q)


# --- failures: overload, deadline, truncation, message order -----------------------------------


def test_b21_overloaded_then_ok(chat: ChatEnv) -> None:
    chat.api.script(overloaded(), text_reply("稍后的回答"))

    response = chat.post(DATA_Q)

    assert _status(response) == 200, response
    assert _json(response)["reply"] == "稍后的回答"
    assert len(chat.api.requests) == 2
    assert chat.api.requests[1].headers.get("x-stainless-retry-count") == "1"
    assert sorted(_texts(chat.flow_log())) == sorted([DATA_Q, "稍后的回答"])


def test_b21_rate_limited_retry_after_then_ok(chat: ChatEnv) -> None:
    chat.api.script(rate_limited(2), text_reply("限流后的回答"))

    response = chat.post(DATA_Q)

    assert _status(response) == 200, response
    assert _json(response)["reply"] == "限流后的回答"
    first, second = chat.api.requests
    assert second.arrived - first.arrived >= 1.9  # retry-after honoured
    assert len(chat.messages()) == 2


def test_b21_invalid_request_maps_to_502_one_request(chat: ChatEnv) -> None:
    chat.api.script(invalid_request("messages.0: bad"))

    response = chat.post(DATA_Q)

    body = _assert_error_body(response, 502, secret=DATA_Q)
    assert body["error"] == "llm_bad_request" and body["retryable"] is False
    assert "messages.0: bad" not in response["body"]
    assert len(chat.api.requests) == 1
    (user,) = chat.messages()
    assert user["role"]["S"] == "user" and user["status"]["S"] == "failed"


def test_b21_persistent_overload_gives_503_with_retry_after(chat: ChatEnv) -> None:
    chat.api.script(overloaded())  # always 529

    started = time.monotonic()
    response = chat.post(DATA_Q, request_id="req-overload-1")
    elapsed = time.monotonic() - started

    body = _assert_error_body(response, 503, secret=DATA_Q)
    assert body["error"] == "llm_unavailable"
    assert body["retryable"] is True
    assert body["request_id"] == "req-overload-1"
    retry_after = _header(response, "Retry-After")
    assert retry_after is not None and int(retry_after) >= 1
    assert len(chat.api.requests) == 3  # 1 + LLM_MAX_RETRIES
    assert elapsed < 27  # inside the deadline (30 s gateway - 3 s reserve)
    flow = chat.flow_log()
    assert _texts(flow) == [DATA_Q]
    assert flow[0]["status"]["S"] == "failed" and flow[0]["role"]["S"] == "user"
    messages = chat.messages()
    assert [(m["role"]["S"], m["status"]["S"]) for m in messages] == [("user", "failed")]


def test_b21_retries_never_push_past_the_deadline(make_chat: MakeChat) -> None:
    env = make_chat(API_GATEWAY_TIMEOUT_S="4", RESPONSE_RESERVE_S="1")  # LLM deadline: 3 s
    env.api.script(overloaded(retry_after=2))  # always 529, each asking for 2 s

    started = time.monotonic()
    response = env.post(DATA_Q)
    elapsed = time.monotonic() - started

    # attempt 1 at ~0 s, the 2 s wait fits; attempt 2 at ~2 s, another 2 s would not
    # (on a loaded machine a slow first attempt leaves no room for the wait: then 1 request)
    assert len(env.api.requests) in (1, 2)
    assert elapsed < 3.0, elapsed
    body = _assert_error_body(response, 503, secret=DATA_Q)
    assert body["retryable"] is True
    assert int(_header(response, "Retry-After") or 0) >= 2
    assert _texts(env.flow_log()) == [DATA_Q]


def _assert_no_assistant(env: ChatEnv) -> None:
    assert [m for m in env.messages() if m["role"]["S"] == "assistant"] == []
    assert [f for f in env.flow_log() if f["role"]["S"] == "assistant"] == []


def test_b16_slow_llm_answers_before_the_gateway_timeout(make_chat: MakeChat) -> None:
    env = make_chat(API_GATEWAY_TIMEOUT_S="4", RESPONSE_RESERVE_S="1")
    env.api.script(slow(text_reply("太迟的回答"), 35))

    started = time.monotonic()
    response = env.post(DATA_Q, context=FakeLambdaContext(timeout_s=60), request_id="req-slow-1")
    elapsed = time.monotonic() - started

    assert elapsed < 4.0, elapsed  # before API Gateway would answer by itself
    assert elapsed > 2.5, elapsed  # the LLM got the time until the deadline (4 - 1 s)
    assert _status(response) in (503, 504)
    body = _assert_error_body(response, _status(response), secret=DATA_Q)
    assert body["retryable"] is True and body["request_id"] == "req-slow-1"
    assert _header(response, "Retry-After") is not None
    assert len(env.api.requests) == 1  # no retry past the deadline
    assert float(env.api.requests[0].headers["x-stainless-timeout"]) <= 3.0
    flow = env.flow_log()
    assert _texts(flow) == [DATA_Q] and flow[0]["status"]["S"] == "failed"
    _assert_no_assistant(env)
    time.sleep(0.5)  # nothing lands later either
    _assert_no_assistant(env)
    assert len(env.flow_log()) == 1 and len(env.messages()) == 1


def test_b16_deadline_derives_from_the_remaining_lambda_time(make_chat: MakeChat) -> None:
    env = make_chat(RESPONSE_RESERVE_S="1")  # gateway budget stays 30 s
    env.api.script(slow(text_reply("太迟的回答"), 35))

    started = time.monotonic()
    response = env.post(DATA_Q, context=FakeLambdaContext(timeout_s=3.0))
    elapsed = time.monotonic() - started

    # The deadline sent to the SDK is what stops the call (checked exactly below); wall time
    # only shows the 35 s reply was not awaited (a loaded CI machine adds seconds of set-up).
    assert elapsed < 20.0, elapsed
    assert _status(response) in (503, 504)
    assert _json(response)["retryable"] is True
    assert float(env.api.requests[0].headers["x-stainless-timeout"]) <= 2.0
    assert _texts(env.flow_log()) == [DATA_Q]
    _assert_no_assistant(env)


def test_b22_truncated_text_reply_is_flagged(chat: ChatEnv) -> None:
    chat.api.script(text_reply("P001 于 2026-02-05 入组，目前", stop_reason="max_tokens"))

    response = chat.post(DATA_Q)

    assert _status(response) == 200, response
    body = _json(response)
    assert body["truncated"] is True
    assert body["reply"] == "P001 于 2026-02-05 入组，目前"
    (assistant,) = [m for m in chat.messages() if m["role"]["S"] == "assistant"]
    assert assistant["truncated"]["N"] == "1"


def test_b13_messages_sent_start_with_user_and_alternate(chat: ChatEnv) -> None:
    chat.api.script(
        text_reply("你好，我是项目助手。"),  # turn 1
        overloaded(retry_after=60),  # turn 2 -> 503 at once
        tool_use_reply("read_clinical_data", {"subject_id": "P001"}),  # turn 3 (tool call)
        text_reply("P001 已入组。"),
        text_reply("记得：严禁在未授权情况下删除数据。"),  # turn 4
        text_reply("质控完成。"),  # turn 5
    )
    assert _status(chat.post("你好")) == 200
    failed = chat.post(QC_Q)
    assert _status(failed) == 503 and _header(failed, "Retry-After") == "60"
    assert _status(chat.post(DATA_Q)) == 200
    assert _status(chat.post(MEMORY_Q)) == 200
    assert _status(chat.post("再检查一下数据质量")) == 200

    requests = chat.api.requests
    assert len(requests) == 6
    for req in requests:
        _assert_alternating_from_user(req.body["messages"])
        assert req.body["messages"][-1]["role"] == "user"
    # the failed turn's message is never replayed as history (it got no answer)
    for req in requests[2:]:
        assert QC_Q not in json.dumps(req.body["messages"], ensure_ascii=False)
    last = requests[-1].body["messages"]
    assert [m["role"] for m in last] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert [b["type"] for b in last[3]["content"]] == ["tool_use"]
    assert [b["type"] for b in last[4]["content"]] == ["tool_result"]
    assert last[2]["content"][0]["text"] == DATA_Q
    # all messages are kept in DynamoDB, the failed one included
    statuses = sorted((m["role"]["S"], m["status"]["S"]) for m in chat.messages())
    assert statuses.count(("user", "failed")) == 1 and len(statuses) == 9


# --- Idempotency-Key -----------------------------------------------------------------------------


def test_same_idempotency_key_twice_returns_the_first_answer_and_writes_nothing(chat_idem: ChatEnv) -> None:
    chat_idem.api.script(text_reply("第一次的回答"), text_reply("不该出现的第二次回答"))
    first = chat_idem.post(DATA_Q, key="key-0001")
    assert _status(first) == 200, first
    before = chat_idem.snapshot()

    second = chat_idem.post(DATA_Q, key="key-0001")

    assert _status(second) == 200, second
    assert _json(second) == _json(first)
    assert len(chat_idem.api.requests) == 1
    assert chat_idem.snapshot() == before
    assert len(before["IdempotencyTable"]) == 1
    assert DATA_Q not in json.dumps(before["IdempotencyTable"], ensure_ascii=False)  # only hashes


def test_same_idempotency_key_with_another_body_is_422(chat_idem: ChatEnv) -> None:
    chat_idem.api.script(text_reply("第一次的回答"))
    assert _status(chat_idem.post(DATA_Q, key="key-0002")) == 200
    before = chat_idem.snapshot()

    response = chat_idem.post("P002 入组了吗", key="key-0002")

    body = _assert_error_body(response, 422, secret="P002 入组了吗")
    assert body["error"] == "idempotency_key_reused"
    assert len(chat_idem.api.requests) == 1
    assert chat_idem.snapshot() == before


def test_retry_after_503_with_the_same_key_stores_the_user_message_once(chat_idem: ChatEnv) -> None:
    chat_idem.api.script(overloaded(retry_after=30), text_reply("重试成功的回答"))
    first = chat_idem.post(DATA_Q, key="key-0003")
    assert _status(first) == 503, first
    (failed,) = chat_idem.messages()
    user_id = failed["message_id"]["S"]

    retry = chat_idem.post(DATA_Q, key="key-0003")

    assert _status(retry) == 200, retry
    body = _json(retry)
    assert body["reply"] == "重试成功的回答" and body["user_message_id"] == user_id
    users = [m for m in chat_idem.messages() if m["role"]["S"] == "user"]
    assert [u["message_id"]["S"] for u in users] == [user_id]
    assert users[0]["status"]["S"] == "ok"  # answered now
    assert len(_flow_items_for(chat_idem, user_id)) == 1
    assert sorted(_texts(chat_idem.flow_log())) == sorted([DATA_Q, "重试成功的回答"])
    # the retry's prompt does not carry the message twice
    assert (
        json.dumps(chat_idem.api.requests[1].body["messages"], ensure_ascii=False).count("P001 入组了吗") == 1
    )
    # and a third call with the key replays the stored answer
    assert _json(chat_idem.post(DATA_Q, key="key-0003")) == body
    assert len(chat_idem.api.requests) == 2


def test_retry_of_a_failed_turn_after_another_turn_keeps_question_and_answer_together(
    chat_idem: ChatEnv,
) -> None:
    chat_idem.api.script(
        overloaded(retry_after=30), text_reply("B 的回答"), text_reply("A 的回答"), text_reply("C 的回答")
    )
    assert _status(chat_idem.post(DATA_Q, key="key-A")) == 503  # turn A fails
    assert _status(chat_idem.post(MEMORY_Q, key="key-B")) == 200  # turn B succeeds meanwhile
    assert _status(chat_idem.post(DATA_Q, key="key-A")) == 200  # A is retried and answered

    assert _status(chat_idem.post("你好", key="key-C")) == 200

    messages = chat_idem.api.requests[-1].body["messages"]
    _assert_alternating_from_user(messages)
    pairs = [(m["role"], _user_words(m) if m["role"] == "user" else [b["text"] for b in m["content"]])
             for m in messages]
    assert pairs == [
        ("user", [DATA_Q]),
        ("assistant", ["A 的回答"]),
        ("user", [MEMORY_Q]),
        ("assistant", ["B 的回答"]),
        ("user", ["你好"]),
    ]


# --- validation ----------------------------------------------------------------------------------

SECRET_TEXT = "张三胸痛三天-不可回显"


def _assert_nothing_written(env: ChatEnv, before: dict[str, list[dict[str, Any]]]) -> None:
    assert env.snapshot() == before
    assert env.api.requests == []


def test_invalid_json_is_4xx_with_a_reason(chat: ChatEnv) -> None:
    before = chat.snapshot()
    response = chat.post(raw_body='{"content": "' + SECRET_TEXT)

    body = _assert_error_body(response, _status(response), secret=SECRET_TEXT)
    assert 400 <= _status(response) < 500
    assert body["retryable"] is False
    _assert_nothing_written(chat, before)


INVALID_BODIES = {
    "missing-content": {"patient_id": "pt-1"},
    "extra-field": {"content": SECRET_TEXT, "extra": SECRET_TEXT},
    "empty-content": {"content": ""},
    "blank-content": {"content": "   "},
    "content-not-a-string": {"content": 42},
    "bad-patient-id": {"content": SECRET_TEXT, "patient_id": "../" + SECRET_TEXT},
    "not-an-object": [SECRET_TEXT],
}


def test_invalid_bodies_are_422_and_write_nothing(chat: ChatEnv) -> None:
    before = chat.snapshot()
    for name, payload in INVALID_BODIES.items():
        response = chat.post(body=payload)

        body = _assert_error_body(response, 422, secret=SECRET_TEXT)
        assert body["retryable"] is False, name
    _assert_nothing_written(chat, before)


def test_overlong_idempotency_key_is_422_and_writes_nothing(chat: ChatEnv) -> None:
    before = chat.snapshot()

    response = chat.post(SECRET_TEXT, key="k" * 129)

    body = _assert_error_body(response, 422, secret=SECRET_TEXT)
    assert body["error"] == "validation_error" and "idempotency-key" in body["reason"]
    _assert_nothing_written(chat, before)


def test_b14c_420kb_message_is_413_and_nothing_is_written(chat: ChatEnv) -> None:
    content = "患" * 140_000
    assert len(content.encode("utf-8")) == 420_000
    before = chat.snapshot()

    response = chat.post(content)

    body = _assert_error_body(response, 413)
    assert body["error"] == "payload_too_large"
    assert body["limit_bytes"] == 32_768 and body["actual_bytes"] == 420_000
    assert "患患" not in response["body"]
    _assert_nothing_written(chat, before)


def test_unknown_project_is_403_as_for_any_non_member_and_nothing_is_written(chat: ChatEnv) -> None:
    # the caller is a member of the demo project only: an unknown project id is refused like any
    # project they may not use (which ids exist is not told to non-members)
    before = chat.snapshot()

    response = chat.post(SECRET_TEXT, project="no-such-project")

    body = _assert_error_body(response, 403, secret=SECRET_TEXT)
    assert body["error"] == "forbidden"
    _assert_nothing_written(chat, before)


def test_a_redcap_project_sends_claude_the_three_tools_and_no_identifier(chat: ChatEnv) -> None:
    # Given demo-iit pointed at the local REDCap server, its token in its own (moto) secret
    import boto3
    import redcap

    from agent_memory.domain.models import ClinicalDataSource
    from infra.local.demo.redcap_project import DEMO_TOKEN
    from infra.local.redcap_server import demo_server

    with demo_server() as server:
        boto3.client("secretsmanager", region_name=os.environ["AWS_REGION"]).create_secret(
            Name=f"agent-memory/redcap/{PROJECT}", SecretString=json.dumps({"token": DEMO_TOKEN,
                                                                            "api_url": server.api_url}))
        project = chat.repo.get_project(PROJECT)
        chat.repo.projects.put_project(project.model_copy(update={"clinical_data": ClinicalDataSource(
            source="redcap", api_url=server.api_url, token_set=True)}))
        identifiers = redcap.Project(server.api_url, DEMO_TOKEN).export_records(
            records=["P005"], fields=["subj_name", "resident_id", "phone", "email"], events=["screening_arm_1"])[0]
        chat.api.script(
            tool_use_reply("read_clinical_data", {"subject_id": "P005", "fields": ["screening", "enrolment_date"]}),
            text_reply("P005 于 2026-03-05 入组。"),
        )

        # When Claude reads P005's screening form through the tool
        response = chat.post("P005 的筛选信息和入组日期？")

    # Then Claude was offered the three tools, got the data without any identifier value, and the
    # response counts what was withheld
    assert _status(response) == 200, response
    first, second = (r.body for r in chat.api.requests)
    assert [t["name"] for t in first["tools"]][:3] == ["read_clinical_data", "list_subjects", "qc_check"]
    (result,) = second["messages"][-1]["content"]
    assert result["is_error"] is False and "2026-03-05" in result["content"]
    # the values are P005's own (the subject identifier index knows them): the placeholders say whose
    assert "[P005's resident ID withheld]" in result["content"] and "[P005's e-mail withheld]" in result["content"]
    sent = json.dumps([r.body for r in chat.api.requests], ensure_ascii=False)
    stored = json.dumps(chat.snapshot(), ensure_ascii=False)
    for field in ("subj_name", "resident_id", "phone", "email"):
        assert identifiers[field] not in sent and identifiers[field] not in stored
    withheld = _json(response)["calls"][0]["redactions"]
    assert withheld == {"email": 1, "identifier_fields": 4, "phone": 1, "resident_id": 1}
