"""``infra/wecom_say.py`` end to end, over HTTP: its signed, encrypted message reaches a callback
(a stand-in for phase 2's route: the crypto adapter opens it and the API client answers through
the WeCom emulator), and the script prints the answer the member received, every part of it."""

from __future__ import annotations

from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from pydantic import SecretStr
from tenacity import wait_none

from agent_memory.adapters.wecom.api import AccessTokenCache, WeComApi
from agent_memory.adapters.wecom.crypto import WeComCallbackCrypto
from agent_memory.domain.errors import DomainError
from agent_memory.domain.wecom import WeComChannelSettings
from infra.local.background_server import BackgroundServer
from infra.local.wecom_emulator import EmulatedApp, WeComEmulator
from infra.wecom_say import main

SETTINGS = WeComChannelSettings(
    corp_id="ww1234567890abcdef", agent_id=1000002, token=SecretStr("Tk7pQ2mZ9x"),
    encoding_aes_key=SecretStr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456"),
    secret=SecretStr("S3cr3t-app_secret-0123456789abcdefghijklmno"),
)
CHANNEL_ARGS = ["--corp-id", SETTINGS.corp_id, "--agent-id", str(SETTINGS.agent_id),
                "--token", SETTINGS.token.get_secret_value(),
                "--aes-key", SETTINGS.encoding_aes_key.get_secret_value()]


class _Callback:
    """Answers each opened text with an echo (long ones in parts); records refusals' statuses."""

    def __init__(self, api: WeComApi) -> None:
        self.api = api
        self.crypto = WeComCallbackCrypto.from_settings(SETTINGS)
        self.paths: list[str] = []

    def handle(self, path: str, query: dict[str, str], body: bytes) -> int:
        self.paths.append(path)
        try:
            message = self.crypto.open_message(query.get("msg_signature", ""), query.get("timestamp", ""),
                                               query.get("nonce", ""), body)
        except DomainError:
            return 401
        self.api.send_to_member(SETTINGS, message.from_userid, f"收到：{message.content}")
        return 200


@pytest.fixture
def wecom() -> Iterator[WeComEmulator]:
    app = EmulatedApp(SETTINGS.corp_id, SETTINGS.agent_id, SETTINGS.secret.get_secret_value())
    with WeComEmulator([app]) as emulator:
        yield emulator


@pytest.fixture
def callback(wecom: WeComEmulator) -> Iterator[tuple[str, _Callback]]:
    target = _Callback(WeComApi(base_url=wecom.base_url, tokens=AccessTokenCache(), wait=wait_none()))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            parts = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status = target.handle(parts.path, dict(parse_qsl(parts.query)), body)
            self.send_response(status)
            self.send_header("Content-Length", "7")
            self.end_headers()
            self.wfile.write(b"success")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    with BackgroundServer(Handler, name="wecom-callback") as server:
        yield server.origin, target


def test_say_prints_the_answer_the_member_received(
    wecom: WeComEmulator, callback: tuple[str, _Callback], capsys: pytest.CaptureFixture[str]
) -> None:
    api_url, target = callback
    # When: crc.li says something through the script
    code = main(["--api-url", api_url, "--project", "demo-iit", "--emulator-url", wecom.base_url,
                 "--user", "crc.li", "--text", "P001 入组了吗？", "--timeout", "10", *CHANNEL_ARGS])
    # Then: the project's callback path got it, and the answer is printed
    assert code == 0
    assert target.paths == ["/v1/wecom/demo-iit/callback"]
    assert capsys.readouterr().out == "收到：P001 入组了吗？\n"


def test_say_prints_every_part_of_a_long_answer(
    wecom: WeComEmulator, callback: tuple[str, _Callback], capsys: pytest.CaptureFixture[str]
) -> None:
    api_url, _ = callback
    text = "受试者P001已于今日完成入组，随访计划已按方案生成。" * 40  # the echo needs two messages
    code = main(["--api-url", api_url, "--emulator-url", wecom.base_url, "--user", "pi.wang", "--text", text,
                 "--timeout", "10", *CHANNEL_ARGS])
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and [line[:6] for line in out] == ["(1/2) ", "(2/2) "]


def test_say_reports_a_refused_callback(
    wecom: WeComEmulator, callback: tuple[str, _Callback], capsys: pytest.CaptureFixture[str]
) -> None:
    # Given: the script holding another token than the project's
    api_url, _ = callback
    args = [*CHANNEL_ARGS]
    args[args.index("--token") + 1] = "NotTheToken1"
    # When
    code = main(["--api-url", api_url, "--emulator-url", wecom.base_url, "--user", "crc.li", "--text", "hi",
                 "--timeout", "1", *args])
    # Then: the refusal is reported and nothing was sent to the member
    assert code == 1 and "HTTP 401" in capsys.readouterr().err
    assert wecom.messages_to("crc.li") == []
