"""``make run`` against any Messages-API server: ``ANTHROPIC_BASE_URL`` + ``ANTHROPIC_API_KEY`` in the
shell point the local stack (started the way ``make run`` starts it, in a child process) at the
strict local Messages-API server, with the default current chat model.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from infra.local.stack import free_port
from tests.support.messages_api import MessagesAPIServer, text_reply

REPO_ROOT = Path(__file__).resolve().parents[2]
API_KEY = "sk-ant-local-run-0123456789"


@pytest.fixture
def local_run(messages_api: MessagesAPIServer, tmp_path: Path) -> Iterator[str]:
    """``python -m infra.local.server`` with the key and the base URL in its environment; yields its URL."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("AWS_ENDPOINT_URL", "LLM_PROVIDER")}
    env.update({
        "PORT": str(port),
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_BASE_URL": messages_api.base_url,
        "LOCAL_STACK_FILE": str(tmp_path / "stack.json"),
        "REDCAP_PORT": "0",
    })
    process = subprocess.Popen(
        [sys.executable, "-m", "infra.local.server"], cwd=REPO_ROOT, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, encoding="utf-8",
    )
    try:
        banner: list[str] = []
        deadline = time.monotonic() + 90
        assert process.stdout is not None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            banner.append(line)
            if "Ctrl-C" in line:
                break
        assert "anthropic" in "".join(banner), "".join(banner)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.mark.slow
def test_make_run_sends_chat_turns_to_the_configured_messages_api(
    messages_api: MessagesAPIServer, local_run: str
) -> None:
    messages_api.script(text_reply("您好，我是项目助手。"))

    # make run runs in another process: the membership is made as make token makes it, through the API
    from infra.local.token import add_memberships, mint_token

    add_memberships(local_run, "dev", {"demo-iit": "admin"}, study_role=None, display_name=None)
    response = requests.post(
        f"{local_run}/v1/projects/demo-iit/sessions/local-claude-1/messages",
        json={"content": "你好"}, headers={"Authorization": f"Bearer {mint_token('dev')}"}, timeout=60,
    )

    assert response.status_code == 200, response.text
    assert response.json()["reply"] == "您好，我是项目助手。"
    chat_calls = [r for r in messages_api.requests if r.model == "claude-sonnet-5-5"]
    assert chat_calls, [r.model for r in messages_api.requests]
    sent = chat_calls[-1]
    # the key went through the local Secrets Manager, the model is the current default, and nothing
    # a current model rejects was sent.
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert {"temperature", "top_p", "top_k", "thinking"}.isdisjoint(sent.body)
