"""The chat Lambda handler end to end with the REAL ``anthropic`` SDK.

``functions/chat/app.py`` is imported fresh per test inside moto (tables from template.yaml,
the API key in moto Secrets Manager) with ``LLM_PROVIDER=anthropic`` and
``ANTHROPIC_BASE_URL`` pointing at the local scripted Messages-API server, and is driven
with API Gateway HTTP API (payload 2.0) events. The tests assert on what was SENT to the
Messages API, on the HTTP responses, and on what was stored.

Cases: B13 (messages start with user and alternate), B16 (slow LLM -> our own JSON error
before the gateway timeout), B21 (overload / rate limits / bad requests), B22 (truncated
text flagged), B14c (413, nothing written), plus Idempotency-Key and validation.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import FakeLambdaContext
from tests.support.http_api_events import build_http_api_event
from tests.support.messages_api import (
    MessagesAPIServer,
    RecordedRequest,
    invalid_request,
    overloaded,
    rate_limited,
    slow,
    text_reply,
    tool_use_reply,
)
from tests.unit.chat_support import seed_project

REPO = Path(__file__).resolve().parents[2]
CHAT_APP = REPO / "functions" / "chat" / "app.py"
API_KEY = "sk-ant-handler-test-0123456789"
SECRET_NAME = "agent-memory/test/anthropic"
CHAT_MODEL = "claude-chat-under-test"
PROJECT = "p1"
USER = "user-pi-1"
_module_ids = itertools.count(1)


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
        if body is None and raw_body is None:
            body = {"content": content}
        headers = {"idempotency-key": key} if key else {}
        path = f"/v1/projects/{project}/sessions/{session}/messages"
        event = build_http_api_event(
            "POST", path, body=body, raw_body=raw_body, headers=headers,
            claims={"sub": USER, "cognito:groups": "pi"},
            route_key="POST /v1/projects/{project_id}/sessions/{session_id}/messages",
            path_parameters={"project_id": project, "session_id": session},
            request_id=request_id,
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
        return [i for i in self.scan("SessionsTable") if i["pk"]["S"] == pk and i["sk"]["S"].startswith("MSG#")]

    def flow_log(self) -> list[dict[str, Any]]:
        return self.scan("FlowLogTable")


def _load_chat_app() -> ModuleType:
    name = f"chat_app_under_test_{next(_module_ids)}"
    spec = importlib.util.spec_from_file_location(name, CHAT_APP)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _make_env(
    messages_api: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch, *, idempotency: bool, **env: str
) -> Iterator[ChatEnv]:
    import boto3
    from aws_lambda_powertools.utilities.parameters.base import clear_caches
    from moto import mock_aws

    from agent_memory.config import get_settings
    from agent_memory.data.repository import DynamoRepository
    from infra.template_model import create_tables, load_template

    region = os.environ["AWS_REGION"]
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=region)
        tables = create_tables(dynamodb, load_template())
        boto3.client("secretsmanager", region_name=region).create_secret(
            Name=SECRET_NAME, SecretString=json.dumps({"api_key": API_KEY})
        )
        settings_env = {
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
            repo = DynamoRepository()
            seed_project(repo, PROJECT, weeks=3)
            yield ChatEnv(app=app, api=messages_api, tables=tables, repo=repo, dynamodb=dynamodb)
        finally:
            get_settings.cache_clear()
            clear_caches()


@pytest.fixture
def chat(messages_api: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatEnv]:
    """The chat function with idempotency disabled (tests that send no Idempotency-Key)."""
    yield from _make_env(messages_api, monkeypatch, idempotency=False)


@pytest.fixture
def chat_idem(messages_api: MessagesAPIServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatEnv]:
    """The chat function with Powertools idempotency enabled (IdempotencyTable in moto)."""
    yield from _make_env(messages_api, monkeypatch, idempotency=True)


def _json(response: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(response["body"])
    return body


def _header(response: dict[str, Any], name: str) -> str | None:
    for k, v in (response.get("headers") or {}).items():
        if k.lower() == name.lower():
            return str(v)
    for k, values in (response.get("multiValueHeaders") or {}).items():
        if k.lower() == name.lower() and values:
            return str(values[0])
    return None


def _system_texts(req: RecordedRequest) -> list[str]:
    return [b["text"] for b in req.body["system"]]


def test_smoke(chat: ChatEnv) -> None:
    chat.api.script(text_reply("收到"))
    r = chat.post("P001 入组了吗")
    print(r)
    print(json.dumps(chat.api.requests[0].body, ensure_ascii=False, indent=1)[:3000])
    assert r["statusCode"] == 200
