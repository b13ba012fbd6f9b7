"""WeCom (企业微信) channel types: a project's channel settings, a member's WeCom user id and an
inbound message (docs/architecture.md, "WeCom").

The settings' ``token``, ``encoding_aes_key``, ``secret`` and ``robot_webhook_key`` are write-only:
they are :class:`pydantic.SecretStr` (``**********`` in ``repr``, ``str``, ``model_dump_json``), and
a validation error never echoes the value it refused (``hide_input_in_errors``). What an admin may
read back is :class:`WeComChannelView`.

Format rules, as WeCom's admin console and API define them:

- user id (成员 UserID): 1-64 bytes of ``0-9 A-Z a-z _ - @ .``, the first a letter or digit; WeCom
  compares user ids ignoring case (its API answers them in lower case), so a member's id is looked
  up by :func:`wecom_userid_key`;
- callback ``token``: letters and digits, at most 32;
- ``encoding_aes_key``: exactly 43 characters of ``a-z A-Z 0-9`` (the Base64 of the 32-byte AES
  key without its ``=``);
- ``agent_id``: the application's positive integer id.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr

_USERID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_\-@.]{0,63}")
_CORP_ID = re.compile(r"[0-9A-Za-z]{1,64}")
_TOKEN = re.compile(r"[0-9A-Za-z]{1,32}")
_AES_KEY = re.compile(r"[0-9A-Za-z]{43}")
_APP_SECRET = re.compile(r"[\x21-\x7e]{1,128}")
_ROBOT_KEY = re.compile(r"[0-9A-Za-z\-]{1,64}")

#: Largest agent id WeCom issues (a signed 32-bit integer).
MAX_AGENT_ID = 2**31 - 1


def _userid(value: str) -> str:
    if not _USERID.fullmatch(value):
        raise ValueError(
            "a WeCom user id is 1-64 characters of letters, digits and _ - @ . starting with a letter or digit"
        )
    return value


def _corp_id(value: str) -> str:
    if not _CORP_ID.fullmatch(value):
        raise ValueError("a WeCom corp id is 1-64 letters and digits")
    return value


def _secret_rule(pattern: re.Pattern[str], rule: str) -> AfterValidator:
    """A validator of a ``SecretStr`` whose error names the rule, never the value."""

    def check(value: SecretStr) -> SecretStr:
        if not pattern.fullmatch(value.get_secret_value()):
            raise ValueError(rule)
        return value

    return AfterValidator(check)


#: A WeCom member user id (成员 UserID), as written by the admin (case kept).
WeComUserId = Annotated[str, AfterValidator(_userid)]
#: A WeCom corp id (企业 ID), the ``receiveid`` of every callback's plaintext.
WeComCorpId = Annotated[str, AfterValidator(_corp_id)]


def wecom_userid_key(userid: str) -> str:
    """The form a WeCom user id is stored and looked up in: lower case (WeCom ignores case)."""
    return userid.lower()


class WeComChannelSettings(BaseModel):
    """What an admin sets for a project's WeCom channel (``PUT .../channels/wecom``).

    Attributes:
        corp_id: the corp id (企业 ID); every callback's plaintext must name it.
        agent_id: the self-built application's AgentId; replies are sent as that application.
        token: the callback Token (signs callbacks: SHA-1 over token, timestamp, nonce, ciphertext).
        encoding_aes_key: the callback EncodingAESKey (43 characters; AES-256 key of the callbacks).
        secret: the application's Secret (``gettoken`` exchanges it for an access token).
        robot_webhook_key: the key of a group robot's webhook (``webhook/send?key=``), if any.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    corp_id: WeComCorpId
    agent_id: int = Field(ge=1, le=MAX_AGENT_ID)
    token: Annotated[SecretStr, _secret_rule(_TOKEN, "the callback token is 1-32 letters and digits")]
    encoding_aes_key: Annotated[
        SecretStr, _secret_rule(_AES_KEY, "the EncodingAESKey is exactly 43 letters and digits")
    ]
    secret: Annotated[SecretStr, _secret_rule(_APP_SECRET, "the secret is 1-128 visible ASCII characters")]
    robot_webhook_key: (
        Annotated[SecretStr, _secret_rule(_ROBOT_KEY, "the robot webhook key is 1-64 letters, digits and -")]
        | None
    ) = None

    def view(self) -> WeComChannelView:
        """What ``GET .../channels/wecom`` shows: no secret, only whether a robot is set."""
        return WeComChannelView(
            corp_id=self.corp_id, agent_id=self.agent_id, robot_webhook=self.robot_webhook_key is not None
        )


class WeComChannelView(BaseModel):
    """The readable part of a project's WeCom channel (the secrets are never returned)."""

    model_config = ConfigDict(frozen=True)

    corp_id: str
    agent_id: int
    robot_webhook: bool


class WeComInboundMessage(BaseModel):
    """One message or event a WeCom callback delivered, decrypted and checked.

    Attributes:
        msg_id: WeCom's ``MsgId`` (a 64-bit integer, as decimal text); None for events, which have none.
        from_userid: ``FromUserName``: the sender's WeCom user id.
        corp_id: ``ToUserName``: the corp id the message was sent to.
        agent_id: ``AgentID``: the application it was sent to (None when absent).
        msg_type: ``MsgType``: ``text``, ``image``, ``voice``, ``event``, ...
        event: ``Event`` of an event (``enter_agent``, ``subscribe``, ...), else None.
        content: ``Content`` of a text message, else None; left out of ``repr``.
        created_at: ``CreateTime`` (UTC).
    """

    model_config = ConfigDict(frozen=True)

    msg_id: str | None
    from_userid: str = Field(min_length=1, max_length=256)
    corp_id: str = Field(min_length=1, max_length=64)
    agent_id: int | None
    msg_type: str = Field(min_length=1, max_length=64)
    event: str | None = None
    content: str | None = Field(default=None, repr=False)
    created_at: datetime

    @property
    def dedupe_key(self) -> str:
        """What identifies a delivery across WeCom's retries: the ``MsgId``; an event has none, so
        its sender, ``CreateTime`` and event name (as WeCom advises for events)."""
        if self.msg_id is not None:
            return f"msg#{self.msg_id}"
        return f"event#{wecom_userid_key(self.from_userid)}#{int(self.created_at.timestamp())}#{self.event or ''}"


__all__ = [
    "MAX_AGENT_ID",
    "WeComChannelSettings",
    "WeComChannelView",
    "WeComCorpId",
    "WeComInboundMessage",
    "WeComUserId",
    "wecom_userid_key",
]
