"""The WeCom API client against the local WeCom emulator (infra/local/wecom_emulator.py), over HTTP:
access tokens cached and refreshed once when refused, application messages and the group robot,
transient faults retried then raised as retryable, WeCom's other errcodes not retried, long answers
split, the egress check before every request, and no token, secret or text in logs or errors."""

from __future__ import annotations

import socket
import traceback
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr
from tenacity import wait_none

from agent_memory.adapters.wecom.api import AccessTokenCache, WeComApi
from agent_memory.adapters.wecom.queues import outbound_parts
from agent_memory.domain.errors import ExternalServiceError
from agent_memory.domain.wecom import WeComChannelSettings, WeComOutbound
from infra.local.wecom_emulator import EmulatedApp, WeComEmulator

CORP_ID, AGENT_ID, SECRET = "ww1234567890abcdef", 1000002, "S3cr3t-app_secret-0123456789abcdefghijklmno"
ROBOT_KEY = "693a91f6-7a1c-4bc4-97a0-0ec2a1fa5aaa"
SETTINGS = WeComChannelSettings(
    corp_id=CORP_ID, agent_id=AGENT_ID, token=SecretStr("Tk7pQ2mZ9x"),
    encoding_aes_key=SecretStr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456"), secret=SecretStr(SECRET),
    robot_webhook_key=SecretStr(ROBOT_KEY),
)
SENTENCE = "受试者P001已于今日完成入组，随访计划已按方案生成。"


@pytest.fixture
def wecom() -> Iterator[WeComEmulator]:
    apps = [EmulatedApp(CORP_ID, AGENT_ID, SECRET, users=frozenset({"CRC.Li", "pi.wang"}))]
    with WeComEmulator(apps, robot_keys=[ROBOT_KEY]) as emulator:
        yield emulator


def _api(wecom: WeComEmulator, **kwargs: Any) -> WeComApi:
    """A client with its own token cache and no waits between tries."""
    return WeComApi(base_url=wecom.base_url, tokens=AccessTokenCache(), wait=wait_none(), **kwargs)


def test_an_answer_reaches_the_member_and_the_token_is_fetched_once(wecom: WeComEmulator) -> None:
    # Given: one client
    api = _api(wecom)
    # When: two answers to the same member (user ids ignore case)
    assert api.send_to_member(SETTINGS, "crc.li", "P001 已入组。") == 1
    assert api.send_to_member(SETTINGS, "CRC.Li", "**随访** 第 3 天", markdown=True) == 1
    # Then: both arrived in order, with one gettoken
    assert [(m["msgtype"], m["content"]) for m in wecom.messages_to("crc.li")] == [
        ("text", "P001 已入组。"), ("markdown", "**随访** 第 3 天")]
    assert wecom.calls == ["/cgi-bin/gettoken", "/cgi-bin/message/send", "/cgi-bin/message/send"]


def test_an_expired_token_is_replaced_once_and_the_message_delivered(wecom: WeComEmulator) -> None:
    # Given: a cached token that WeCom has since expired
    api = _api(wecom)
    api.send_to_member(SETTINGS, "crc.li", "第一条")
    wecom.expire_tokens()
    # When
    api.send_to_member(SETTINGS, "crc.li", "第二条")
    # Then: 42001, a new token, the same message again: delivered once
    assert [m["content"] for m in wecom.messages_to("crc.li")] == ["第一条", "第二条"]
    assert wecom.calls[2:] == ["/cgi-bin/message/send", "/cgi-bin/gettoken", "/cgi-bin/message/send"]


def test_a_token_refused_twice_is_a_retryable_failure(wecom: WeComEmulator) -> None:
    api = _api(wecom)
    api.access_token(SETTINGS)
    wecom.fail_next(errcode=40014, times=2, path="/cgi-bin/message/send")
    with pytest.raises(ExternalServiceError) as caught:
        api.send_to_member(SETTINGS, "crc.li", "hi")
    assert (caught.value.service, caught.value.retryable) == ("wecom", True)
    assert wecom.messages_to("crc.li") == []


@pytest.mark.parametrize("errcode", [-1, 45009])
def test_system_busy_and_rate_limits_are_retried(wecom: WeComEmulator, errcode: int) -> None:
    # Given: WeCom busy for two calls
    api = _api(wecom)
    api.access_token(SETTINGS)
    wecom.fail_next(errcode=errcode, times=2)
    # When
    api.send_to_member(SETTINGS, "crc.li", "P001 已入组。")
    # Then: delivered on the third try
    assert [m["content"] for m in wecom.messages_to("crc.li")] == ["P001 已入组。"]
    assert wecom.calls.count("/cgi-bin/message/send") == 3


def test_server_errors_past_the_attempts_are_a_retryable_failure(wecom: WeComEmulator) -> None:
    api = _api(wecom, max_attempts=3)
    api.access_token(SETTINGS)
    wecom.fail_next(http_status=503, times=3)
    with pytest.raises(ExternalServiceError) as caught:
        api.send_to_member(SETTINGS, "crc.li", "hi")
    assert (caught.value.code, caught.value.retryable) == ("HTTP503", True)
    assert wecom.calls.count("/cgi-bin/message/send") == 3


@pytest.mark.parametrize(
    ("settings_change", "userid", "code"),
    [({"secret": SecretStr("wrong-secret")}, "crc.li", "40001"),
     ({"corp_id": "wwffffffffffffffff"}, "crc.li", "40013"),
     ({}, "outsider", "81013")],
)
def test_wecom_refusals_are_not_retried(
    wecom: WeComEmulator, settings_change: dict[str, Any], userid: str, code: str
) -> None:
    # Given: a wrong secret, a wrong corp id, or a user outside the application's range
    settings = SETTINGS.model_copy(update=settings_change)
    # When / Then: one call each, a non-retryable failure naming WeCom's errcode
    with pytest.raises(ExternalServiceError) as caught:
        _api(wecom).send_to_member(settings, userid, "hi")
    assert (caught.value.code, caught.value.retryable) == (code, False)
    assert len(wecom.calls) == (1 if code != "81013" else 2)


def test_tokens_are_cached_per_secret(wecom: WeComEmulator) -> None:
    # Given: a shared cache holding the real application's token
    tokens = AccessTokenCache()
    WeComApi(base_url=wecom.base_url, tokens=tokens, wait=wait_none()).access_token(SETTINGS)
    impostor = SETTINGS.model_copy(update={"secret": SecretStr("not-the-secret")})
    # When / Then: the same corp and agent with another secret never gets that token
    with pytest.raises(ExternalServiceError, match="40001"):
        WeComApi(base_url=wecom.base_url, tokens=tokens, wait=wait_none()).send_to_member(impostor, "crc.li", "x")
    assert wecom.messages_to("crc.li") == []


def test_a_long_answer_arrives_in_numbered_parts_within_the_limit(wecom: WeComEmulator) -> None:
    # Given: an answer of 7,200 bytes
    text = SENTENCE * 100
    # When
    parts = _api(wecom).send_to_member(SETTINGS, "pi.wang", text)
    # Then: 4 messages the emulator accepted (it refuses more than 2,048 bytes), in order
    received = [m["content"] for m in wecom.messages_to("pi.wang")]
    assert parts == 4 and [r[:6] for r in received] == ["(1/4) ", "(2/4) ", "(3/4) ", "(4/4) "]
    assert "".join(r[6:] for r in received) == text


def test_an_outbox_part_goes_to_its_member_or_to_the_robot(wecom: WeComEmulator) -> None:
    # Given: the parts the outbox queued for a member (2 of a long answer) and for the robot
    member_parts = outbound_parts(WeComOutbound(project_id="p1", to_userid="CRC.Li", text=SENTENCE * 40,
                                                dedupe_key="answer#p1#msg#1"))
    robot_part = outbound_parts(WeComOutbound(project_id="p1", to_userid=None, text="**周报** 已生成",
                                              dedupe_key="alert#p1#a1"))[0]
    api = _api(wecom)
    # When: each part is sent on its own (as the sender consumes them), the second part first
    for part in [member_parts[1], member_parts[0], robot_part]:
        api.send_part(SETTINGS, part)
    # Then: each arrived once as its type says: member parts as text, the robot's as Markdown
    assert [(m["msgtype"], m["content"][:6]) for m in wecom.messages_to("crc.li")] == [
        ("text", "(2/2) "), ("text", "(1/2) ")]
    assert [(m["msgtype"], m["content"]) for m in wecom.robot_messages(ROBOT_KEY)] == [("markdown", "**周报** 已生成")]


def test_a_robot_part_of_a_channel_without_robot_is_refused_not_retried(wecom: WeComEmulator) -> None:
    part = outbound_parts(WeComOutbound(project_id="p1", to_userid=None, text="x", dedupe_key="k"))[0]
    with pytest.raises(ExternalServiceError) as caught:
        _api(wecom).send_part(SETTINGS.model_copy(update={"robot_webhook_key": None}), part)
    assert caught.value.code == "no_robot" and caught.value.retryable is False and wecom.calls == []


def test_the_group_robot_gets_markdown_split_at_4096_bytes(wecom: WeComEmulator) -> None:
    # Given: a weekly summary of about 9 KB of Markdown
    text = "\n\n".join(f"## 第{n}周\n\n" + "\n".join(f"- {SENTENCE}" for _ in range(40)) for n in (1, 2, 3))
    # When
    parts = _api(wecom).send_to_robot(SETTINGS.robot_webhook_key or SecretStr(""), text)
    # Then
    received = wecom.robot_messages(ROBOT_KEY)
    assert parts == 3 and [m["msgtype"] for m in received] == ["markdown"] * 3
    assert [m["content"].split("\n")[:2] for m in received] == [[f"({n}/3)", f"## 第{n}周"] for n in (1, 2, 3)]


def test_an_unknown_robot_key_is_refused(wecom: WeComEmulator) -> None:
    with pytest.raises(ExternalServiceError) as caught:
        _api(wecom).send_to_robot(SecretStr("no-such-robot"), "hello", markdown=False)
    assert (caught.value.code, caught.value.retryable) == ("93000", False)


def test_every_request_passes_the_egress_check_without_its_query(wecom: WeComEmulator) -> None:
    # Given: a check that records what it saw
    seen: list[str] = []
    api = _api(wecom, check_url=seen.append)
    # When
    api.send_to_member(SETTINGS, "crc.li", "hi")
    api.send_to_robot(SecretStr(ROBOT_KEY), "hi")
    # Then: every URL, none with a token, secret or key
    assert seen == [f"{wecom.base_url}/cgi-bin/gettoken", f"{wecom.base_url}/cgi-bin/message/send",
                    f"{wecom.base_url}/cgi-bin/webhook/send"]


def test_a_refused_url_is_never_requested(wecom: WeComEmulator) -> None:
    class Refused(Exception):
        pass

    def refuse(url: str) -> None:
        raise Refused(url)

    with pytest.raises(Refused):
        _api(wecom, check_url=refuse).send_to_member(SETTINGS, "crc.li", "hi")
    assert wecom.calls == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_failures_never_show_the_token_secret_key_or_text(
    wecom: WeComEmulator, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given: a token in the cache, then WeCom unreachable, busy, or refusing
    tokens = AccessTokenCache()
    token = WeComApi(base_url=wecom.base_url, tokens=tokens).access_token(SETTINGS)
    unreachable = WeComApi(base_url=f"http://127.0.0.1:{_closed_port()}", tokens=tokens, wait=wait_none(),
                           max_attempts=2)
    text = f"P001 血压 150/95 {uuid.uuid4().hex}"  # the hex appears nowhere else (not in source lines)
    failures: list[BaseException] = []
    for call in (
        lambda: unreachable.send_to_member(SETTINGS, "crc.li", text),
        lambda: unreachable.send_to_robot(SecretStr(ROBOT_KEY), text),
        lambda: _api(wecom).send_to_member(SETTINGS.model_copy(update={"agent_id": 7}), "crc.li", text),
    ):
        with pytest.raises(ExternalServiceError) as caught:
            call()
        failures.append(caught.value)
    # Then: neither the errors with their tracebacks nor the logs hold a secret or the text
    shown = "".join("".join(traceback.format_exception(f)) for f in failures) + "".join(capsys.readouterr())
    assert [f.code for f in failures] == [None, None, "40056"]  # type: ignore[attr-defined]
    for secret in (token, SECRET, ROBOT_KEY, text.split()[-1]):
        assert secret not in shown


def test_the_services_wecom_client_reaches_wecoms_host_and_no_other(wecom: WeComEmulator) -> None:
    # Given: the client the sender function builds, WeCom's base URL being the emulator (local runtime)
    from agent_memory.config import Settings
    from agent_memory.domain.errors import EgressBlocked, EgressRefused
    from agent_memory.wiring import build_wecom_api

    settings = Settings.model_validate({"FLOW_LOG_TABLE": "f", "MEMORY_TABLE": "m", "SESSIONS_TABLE": "s",
                                        "WECOM_API_BASE_URL": wecom.base_url, "EGRESS_LOCAL_RUNTIME": "true"})
    api = build_wecom_api(settings)
    # When / Then: a message reaches WeCom through the guarded transport
    assert api.send_to_member(SETTINGS, "crc.li", "P001 已入组。") == 1
    assert [m["content"] for m in wecom.messages_to("crc.li")] == ["P001 已入组。"]
    # and the check before each request refuses any other host, port or scheme (nothing requested)
    port = int(wecom.base_url.rsplit(":", 1)[1])
    for elsewhere in (f"http://127.0.0.1:{port + 1}/cgi-bin/message/send", "https://qyapi.weixin.qq.com/cgi-bin/gettoken",
                      f"http://localhost:{port}/cgi-bin/gettoken"):
        with pytest.raises(EgressBlocked):
            api._check_url(elsewhere)  # the egress check the client runs before every request
    # and outside the local runtime a plain-http WeCom URL is refused when the function starts
    with pytest.raises(EgressRefused):
        build_wecom_api(settings.model_copy(update={"egress_local_runtime": False}))
