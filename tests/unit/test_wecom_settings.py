"""A project's WeCom channel settings: WeCom's format rules as 422 reasons, write-only secrets that no
repr, str, dump or validation error shows, and the member user id's rules."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import SecretStr, TypeAdapter, ValidationError

from agent_memory.domain.errors import SecretUnreadable
from agent_memory.domain.wecom import WeComChannelSettings, WeComUserId, wecom_userid_key

SECRETS = {
    "token": "Tk7pQ2mZ9x",
    "encoding_aes_key": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456",
    "secret": "S3cr3t-app_secret-0123456789abcdefghijklmno",
    "robot_webhook_key": "693a91f6-7a1c-4bc4-97a0-0ec2a1fa5aaa",
}
VALID: dict[str, Any] = {"corp_id": "ww1234567890abcdef", "agent_id": 1000002, **SECRETS}
NOW = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)


def _refusal(**changes: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        WeComChannelSettings.model_validate({**VALID, **changes})
    return caught.value


def _errors(**changes: Any) -> list[Any]:
    return list(_refusal(**changes).errors())


def test_valid_settings_keep_their_values_for_the_adapters() -> None:
    settings = WeComChannelSettings.model_validate(VALID)
    assert settings.corp_id == "ww1234567890abcdef" and settings.agent_id == 1000002
    assert settings.encoding_aes_key.get_secret_value() == SECRETS["encoding_aes_key"]
    assert settings.robot_webhook_key is not None
    assert settings.robot_webhook_key.get_secret_value() == SECRETS["robot_webhook_key"]


def test_secrets_never_appear_in_repr_str_or_dumps() -> None:
    # Given: settings holding four secrets
    settings = WeComChannelSettings.model_validate(VALID)
    # When: shown every way a log line or an answer could show it
    view = settings.record("p1", actor="pi-1", now=NOW).view()
    shown = [repr(settings), str(settings), settings.model_dump_json(), json.dumps(settings.model_dump(mode="json")),
             view.model_dump_json()]
    # Then: none holds a secret; what GET shows names the secrets set
    assert not [s for s in shown for secret in SECRETS.values() if secret in s]
    assert json.loads(view.model_dump_json()) == {
        "project_id": "p1", "corp_id": "ww1234567890abcdef", "agent_id": 1000002, "robot_webhook": True,
        "updated_at": "2026-03-10T02:00:00Z", "updated_by": "pi-1", "callback_path": "/v1/wecom/p1/callback",
        "secrets_set": ["token", "encoding_aes_key", "secret", "robot_webhook_key"]}


def test_the_stored_secret_reads_back_as_the_same_settings() -> None:
    settings = WeComChannelSettings.model_validate(VALID)
    assert WeComChannelSettings.from_secret(settings.to_secret()) == settings


def test_a_stored_secret_not_in_the_service_format_is_unreadable_without_its_value() -> None:
    with pytest.raises(SecretUnreadable) as caught:
        WeComChannelSettings.from_secret(SecretStr('{"corp_id": "ww1", "token": "leaky-value"}'))
    assert "leaky-value" not in str(caught.value)


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("encoding_aes_key", "abc", "exactly 43 letters and digits"),
        ("encoding_aes_key", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ012345+", "exactly 43 letters and digits"),
        ("token", "tok en", "1-32 letters and digits"),
        ("token", "t" * 33, "1-32 letters and digits"),
        ("secret", "has space", "visible ASCII"),
        ("robot_webhook_key", "key/with/slashes", "letters, digits and -"),
        ("corp_id", "ww 123", "1-64 letters and digits"),
    ],
)
def test_each_rule_is_a_reason_that_never_echoes_the_value(field: str, value: str, reason: str) -> None:
    # Given / When: a value breaking one rule
    refusal = _refusal(**{field: value})
    errors = refusal.errors()
    # Then: the field and the rule; what a log line (str) or the 422 body (loc, msg) shows omits the value
    assert [e["loc"] for e in errors] == [(field,)]
    assert reason in errors[0]["msg"]
    assert value not in str(refusal) and value not in errors[0]["msg"]


@pytest.mark.parametrize("agent_id", [0, -1, 2**31])
def test_agent_id_is_a_positive_32_bit_integer(agent_id: int) -> None:
    assert [e["loc"] for e in _errors(agent_id=agent_id)] == [("agent_id",)]


def test_unknown_fields_and_missing_secret_are_refused() -> None:
    assert {e["loc"] for e in _errors(agnet_id=1)} == {("agnet_id",)}
    with pytest.raises(ValidationError) as caught:
        WeComChannelSettings.model_validate({k: v for k, v in VALID.items() if k != "secret"})
    assert [e["loc"] for e in caught.value.errors()] == [("secret",)]


def test_robot_webhook_is_optional() -> None:
    settings = WeComChannelSettings.model_validate({k: v for k, v in VALID.items() if k != "robot_webhook_key"})
    view = settings.record("p1", actor="pi-1", now=NOW).view()
    assert settings.robot_webhook_key is None and view.robot_webhook is False
    assert view.secrets_set == ["token", "encoding_aes_key", "secret"]


USERID = TypeAdapter(WeComUserId)


@pytest.mark.parametrize("userid", ["LiMing", "crc.li", "zhang_san-01", "a", "1abc@site.cn", "x" * 64])
def test_wecom_userid_accepts_wecom_formats(userid: str) -> None:
    assert USERID.validate_python(userid) == userid


@pytest.mark.parametrize("userid", ["", "_lead", ".dot", "x" * 65, "李明", "a b", "a/b", "a+b"])
def test_wecom_userid_refuses_what_wecom_never_issues(userid: str) -> None:
    with pytest.raises(ValidationError):
        USERID.validate_python(userid)


def test_userid_key_ignores_case_as_wecom_does() -> None:
    assert wecom_userid_key("CRC.Li") == wecom_userid_key("crc.li") == "crc.li"
