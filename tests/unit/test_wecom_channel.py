"""A project's WeCom channel (agent_memory.channels.wecom): the settings an admin sets (the
credentials write-only in the project's own secret, the record what GET shows), WeCom's callbacks
with that secret (a message queued, an event dropped, every refusal with nothing queued, a project
without a channel indistinguishable from a bad signature), and the delivery of a queued part."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import xmltodict
from pydantic import SecretStr

from agent_memory.adapters.wecom.crypto import WeComCallbackCrypto, WeComCallbacks
from agent_memory.channels.wecom import (
    WeComCallbackDeps,
    WeComDeliveryDeps,
    WeComSettingsDeps,
    accept_callback,
    delete_wecom_channel,
    deliver_part,
    get_wecom_channel,
    put_wecom_channel,
    verify_callback_url,
)
from agent_memory.domain.errors import (
    ExternalServiceError,
    NotFound,
    WeComCallbackStale,
    WeComReceiverMismatch,
    WeComSignatureInvalid,
)
from agent_memory.domain.secrets import SecretNaming
from agent_memory.domain.wecom import WeComCallbackParams, WeComChannelSettings, WeComOutboundPart
from infra.wecom_say import text_message_xml
from tests.fakes import InMemorySecrets, InMemoryWeComChannels, RecordingInboundQueue, RecordingWeComSender

NOW = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)
NAMING = SecretNaming()
SETTINGS = WeComChannelSettings(
    corp_id="ww1234567890abcdef", agent_id=1000002, token=SecretStr("Tk7pQ2mZ9x"),
    encoding_aes_key=SecretStr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456"),
    secret=SecretStr("S3cr3t-app_secret-0123456789abcdefghijklmno"),
    robot_webhook_key=SecretStr("693a91f6-7a1c-4bc4-97a0-0ec2a1fa5aaa"),
)
SECRET_VALUES = ("Tk7pQ2mZ9x", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456",
                 "S3cr3t-app_secret-0123456789abcdefghijklmno", "693a91f6-7a1c-4bc4-97a0-0ec2a1fa5aaa")


def _settings_deps() -> tuple[WeComSettingsDeps, InMemoryWeComChannels, InMemorySecrets]:
    channels, secrets = InMemoryWeComChannels(), InMemorySecrets()
    return WeComSettingsDeps(store=channels, secrets=secrets, naming=NAMING), channels, secrets


# ------------------------------------------------------------------------------------ settings
def test_put_stores_the_credentials_in_the_projects_own_secret_before_the_record() -> None:
    # Given: no channel yet
    deps, channels, secrets = _settings_deps()
    # When: an admin sets it
    view = put_wecom_channel(deps, "p1", SETTINGS, actor="pi-1", now=NOW)
    # Then: the secret the service named holds every credential, written before the record
    assert secrets.log == [("put", "agent-memory/channel/p1/wecom")]
    stored = json.loads(secrets.current("agent-memory/channel/p1/wecom") or "{}")
    assert stored["secret"] == SECRET_VALUES[2] and stored["corp_id"] == "ww1234567890abcdef"
    assert secrets.tags["agent-memory/channel/p1/wecom"] == {"project_id": "p1", "purpose": "channel"}
    # and the answer and the record show what is set, never a value
    assert not any(v in view.model_dump_json() for v in SECRET_VALUES)
    assert view.callback_path == "/v1/wecom/p1/callback" and view.updated_by == "pi-1"
    assert get_wecom_channel(channels, "p1") == view


def test_a_failed_secret_write_leaves_no_record() -> None:
    deps, channels, secrets = _settings_deps()
    secrets.fail_puts = True
    with pytest.raises(ExternalServiceError):
        put_wecom_channel(deps, "p1", SETTINGS, actor="pi-1", now=NOW)
    assert channels.records == {}


def test_delete_removes_the_record_then_schedules_the_secret_and_a_second_delete_is_404() -> None:
    deps, channels, secrets = _settings_deps()
    put_wecom_channel(deps, "p1", SETTINGS, actor="pi-1", now=NOW)
    delete_wecom_channel(deps, "p1")
    assert channels.records == {} and secrets.current("agent-memory/channel/p1/wecom") is None
    with pytest.raises(NotFound):
        delete_wecom_channel(deps, "p1")
    with pytest.raises(NotFound):
        get_wecom_channel(channels, "p1")


def test_one_projects_channel_is_never_another_projects() -> None:
    deps, channels, secrets = _settings_deps()
    put_wecom_channel(deps, "p1", SETTINGS, actor="pi-1", now=NOW)
    with pytest.raises(NotFound):
        get_wecom_channel(channels, "p2")
    assert set(secrets.values) == {"agent-memory/channel/p1/wecom"}


# ----------------------------------------------------------------------------------- callbacks
def _callback(now: datetime = NOW) -> tuple[WeComCallbackDeps, RecordingInboundQueue, InMemorySecrets]:
    secrets, queue = InMemorySecrets(), RecordingInboundQueue()
    secrets.put(NAMING.channel("p1", "wecom"), SETTINGS.to_secret())
    protocol = WeComCallbacks(clock=lambda: now.timestamp())
    return WeComCallbackDeps(secrets=secrets, naming=NAMING, protocol=protocol, queue=queue), queue, secrets


def _sealed(
    xml: str, *, at: datetime = NOW, settings: WeComChannelSettings = SETTINGS
) -> tuple[WeComCallbackParams, str]:
    """What WeCom POSTs for the message ``xml`` at ``at`` with ``settings``' Token and key."""
    crypto = WeComCallbackCrypto.from_settings(settings)
    timestamp = str(int(at.timestamp()))
    signature, body = crypto.seal_callback(xml, timestamp=timestamp, nonce="1372623149")
    return WeComCallbackParams(msg_signature=signature, timestamp=timestamp, nonce="1372623149"), body


def _text(user: str = "crc.li", text: str = "P001 入组了吗？", msg_id: str = "7001") -> str:
    return text_message_xml(corp_id=SETTINGS.corp_id, agent_id=SETTINGS.agent_id, user=user, text=text,
                            msg_id=msg_id, created=int(NOW.timestamp()))


def test_a_signed_message_is_queued_decrypted_for_its_project() -> None:
    deps, queue, _ = _callback()
    params, body = _sealed(_text())
    assert accept_callback(deps, "p1", params, body) == "queued"
    (inbound,) = queue.queued
    message = inbound.message
    assert (inbound.project_id, message.from_userid, message.content) == ("p1", "crc.li", "P001 入组了吗？")
    assert inbound.idempotency_key == "p1#msg#7001"


def test_an_event_is_acknowledged_and_dropped() -> None:
    deps, queue, _ = _callback()
    event = (f"<xml><ToUserName>{SETTINGS.corp_id}</ToUserName><FromUserName>crc.li</FromUserName>"
             f"<CreateTime>{int(NOW.timestamp())}</CreateTime><MsgType>event</MsgType><Event>enter_agent</Event>"
             f"<AgentID>{SETTINGS.agent_id}</AgentID></xml>")
    params, body = _sealed(event)
    assert accept_callback(deps, "p1", params, body) == "ignored" and queue.queued == []


def test_url_verification_answers_the_decrypted_echostr() -> None:
    deps, _, _ = _callback()
    crypto = WeComCallbackCrypto.from_settings(SETTINGS)
    signature, body = crypto.seal_callback("<xml/>", timestamp=str(int(NOW.timestamp())), nonce="42")
    # WeCom's verification encrypts a random string the same way: here the envelope's ciphertext
    echostr = xmltodict.parse(body)["xml"]["Encrypt"]
    params = WeComCallbackParams(msg_signature=signature, timestamp=str(int(NOW.timestamp())), nonce="42")
    assert verify_callback_url(deps, "p1", params, echostr) == "<xml/>"


@pytest.mark.parametrize("tamper", ["signature", "body", "token"])
def test_a_bad_signature_is_refused_and_nothing_is_queued(tamper: str) -> None:
    deps, queue, _ = _callback()
    other = SETTINGS.model_copy(update={"token": SecretStr("AnotherToken1")}) if tamper == "token" else SETTINGS
    params, body = _sealed(_text(), settings=other)
    if tamper == "signature":
        params = params.model_copy(update={"msg_signature": "0" * 40})
    if tamper == "body":
        _, body = _sealed(_text(text="another text"))  # another ciphertext under the first signature
    with pytest.raises(WeComSignatureInvalid):
        accept_callback(deps, "p1", params, body)
    assert queue.queued == []


@pytest.mark.parametrize("age", [timedelta(minutes=5, seconds=1), timedelta(hours=-1)])
def test_a_callback_older_or_newer_than_five_minutes_is_refused(age: timedelta) -> None:
    deps, queue, _ = _callback()
    params, body = _sealed(_text(), at=NOW - age)
    with pytest.raises(WeComCallbackStale):
        accept_callback(deps, "p1", params, body)
    assert queue.queued == []


def test_a_callback_within_five_minutes_is_accepted() -> None:
    deps, queue, _ = _callback()
    params, body = _sealed(_text(), at=NOW - timedelta(minutes=4, seconds=59))
    assert accept_callback(deps, "p1", params, body) == "queued"


def test_a_message_for_another_corp_is_refused_403() -> None:
    # Given: a message signed and encrypted with this project's Token and key, for another corp id
    deps, queue, _ = _callback()
    params, body = _sealed(_text(), settings=SETTINGS.model_copy(update={"corp_id": "wwOtherCorp"}))
    with pytest.raises(WeComReceiverMismatch):
        accept_callback(deps, "p1", params, body)
    assert queue.queued == []


def test_a_project_without_channel_answers_as_a_bad_signature() -> None:
    # Given: p2 has no channel (a caller must not learn which projects exist)
    deps, queue, _ = _callback()
    params, body = _sealed(_text())
    with pytest.raises(WeComSignatureInvalid) as no_channel:
        accept_callback(deps, "p2", params, body)
    assert no_channel.value.reason == "the callback signature does not match" and queue.queued == []


def test_an_unreadable_channel_secret_is_a_service_error_not_a_signature_error() -> None:
    deps, _, secrets = _callback()
    secrets.unreadable.add("agent-memory/channel/p1/wecom")
    params, body = _sealed(_text())
    with pytest.raises(ExternalServiceError) as caught:
        accept_callback(deps, "p1", params, body)
    assert caught.value.retryable is False


# ------------------------------------------------------------------------------------ delivery
def _part(to: str | None = "crc.li") -> WeComOutboundPart:
    return WeComOutboundPart(project_id="p1", to_userid=to, content="P001 已入组", dedupe_key="answer#p1#msg#1",
                             part=1, parts=1)


def test_a_part_is_sent_with_the_projects_current_credentials() -> None:
    secrets, sender = InMemorySecrets(), RecordingWeComSender()
    secrets.put(NAMING.channel("p1", "wecom"), SETTINGS.to_secret())
    deps = WeComDeliveryDeps(secrets=secrets, naming=NAMING, sender=sender)
    assert deliver_part(deps, _part()) == "sent"
    assert sender.sent == [("ww1234567890abcdef", 1000002, _part())]


def test_a_part_of_a_removed_channel_or_missing_robot_is_dropped_not_sent() -> None:
    secrets, sender = InMemorySecrets(), RecordingWeComSender()
    deps = WeComDeliveryDeps(secrets=secrets, naming=NAMING, sender=sender)
    assert deliver_part(deps, _part()) == "no_channel"
    secrets.put(NAMING.channel("p1", "wecom"), SETTINGS.model_copy(update={"robot_webhook_key": None}).to_secret())
    assert deliver_part(deps, _part(to=None)) == "no_robot"
    assert sender.sent == []
