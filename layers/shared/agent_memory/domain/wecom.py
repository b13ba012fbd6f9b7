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

import hashlib
import json
import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, ValidationError

from agent_memory.domain.errors import SecretUnreadable

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


def _schema(pattern: re.Pattern[str]) -> Any:
    """The rule as the JSON schema's anchored ``pattern`` (the OpenAPI document states it)."""
    return Field(json_schema_extra={"pattern": f"^{pattern.pattern}$"})


def _secret_rule(pattern: re.Pattern[str], rule: str) -> AfterValidator:
    """A validator of a ``SecretStr`` whose error names the rule, never the value."""

    def check(value: SecretStr) -> SecretStr:
        if not pattern.fullmatch(value.get_secret_value()):
            raise ValueError(rule)
        return value

    return AfterValidator(check)


#: A WeCom member user id (成员 UserID), as written by the admin (case kept).
WeComUserId = Annotated[str, _schema(_USERID), AfterValidator(_userid)]
#: A WeCom corp id (企业 ID), the ``receiveid`` of every callback's plaintext.
WeComCorpId = Annotated[str, _schema(_CORP_ID), AfterValidator(_corp_id)]


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
    token: Annotated[SecretStr, _schema(_TOKEN), _secret_rule(_TOKEN, "the callback token is 1-32 letters and digits")]
    encoding_aes_key: Annotated[
        SecretStr, _schema(_AES_KEY), _secret_rule(_AES_KEY, "the EncodingAESKey is exactly 43 letters and digits")
    ]
    secret: Annotated[
        SecretStr, _schema(_APP_SECRET), _secret_rule(_APP_SECRET, "the secret is 1-128 visible ASCII characters")
    ]
    robot_webhook_key: (
        Annotated[SecretStr, _schema(_ROBOT_KEY),
                  _secret_rule(_ROBOT_KEY, "the robot webhook key is 1-64 letters, digits and -")]
        | None
    ) = None

    def to_secret(self) -> SecretStr:
        """The project's channel secret: these settings as JSON (the corp id and agent id with the
        credentials, so a reader gets them bound together in one read), itself a ``SecretStr``."""
        values = {name: getattr(self, name) for name in type(self).model_fields}
        plain = {k: v.get_secret_value() if isinstance(v, SecretStr) else v for k, v in values.items()}
        return SecretStr(json.dumps(plain, separators=(",", ":")))

    @classmethod
    def from_secret(cls, raw: SecretStr) -> WeComChannelSettings:
        """Parse a stored channel secret.

        Raises:
            SecretUnreadable: not the JSON the service stores (the reason never holds the value).
        """
        try:
            return cls.model_validate_json(raw.get_secret_value())
        except ValidationError:
            raise SecretUnreadable("the stored WeCom channel secret is not in the service's format") from None

    def record(self, project_id: str, *, actor: str, now: datetime) -> WeComChannel:
        """The readable record of these settings as ``actor`` set them at ``now`` (UTC)."""
        return WeComChannel(project_id=project_id, corp_id=self.corp_id, agent_id=self.agent_id,
                            robot_webhook=self.robot_webhook_key is not None, updated_at=now, updated_by=actor)


def wecom_callback_path(project_id: str) -> str:
    """The path of a project's WeCom callback URL (what the admin enters in WeCom's console)."""
    return f"/v1/wecom/{project_id}/callback"


class WeComChannel(BaseModel):
    """The readable record of a project's WeCom channel (``CHANNEL#wecom`` in its partition): what
    is set, never a secret. Its presence turns the channel on (inbound answers, outbound reminders
    and alerts); the credentials live in the project's channel secret.

    Attributes:
        robot_webhook: a group robot is set (admin alerts go there, and reminders of members
            without a WeCom user id).
        updated_at / updated_by: when (UTC) and by whom it was last set.
    """

    model_config = ConfigDict(frozen=True)

    project_id: str
    corp_id: str
    agent_id: int
    robot_webhook: bool
    updated_at: datetime
    updated_by: str

    def view(self) -> WeComChannelView:
        """What ``GET .../channels/wecom`` answers: the record, the callback path and the secrets set."""
        secrets_set = ["token", "encoding_aes_key", "secret"] + (["robot_webhook_key"] if self.robot_webhook else [])
        return WeComChannelView(**self.model_dump(), callback_path=wecom_callback_path(self.project_id),
                                secrets_set=secrets_set)


class WeComChannelView(WeComChannel):
    """The readable part of a project's WeCom channel: the record's fields, the callback path and
    ``secrets_set``, naming the secrets the service holds (they are never returned)."""

    callback_path: str
    secrets_set: list[str]


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


#: The chat session of a member's WeCom conversation is ``wecom-`` and this many hex characters of
#: the SHA-256 of their lower-cased user id: one per member and project, the id itself not shown.
SESSION_HASH_CHARS = 24


def wecom_session_id(userid: str) -> str:
    """The session a member's WeCom messages go to (``wecom-{hash}``; an id of the path pattern)."""
    digest = hashlib.sha256(wecom_userid_key(userid).encode("utf-8")).hexdigest()
    return f"wecom-{digest[:SESSION_HASH_CHARS]}"


class WeComCallbackParams(BaseModel):
    """The query parameters WeCom signs every callback with (``msg_signature``, ``timestamp``:
    epoch seconds as text, ``nonce``); checked by the protocol adapter, not here."""

    model_config = ConfigDict(frozen=True)

    msg_signature: str
    timestamp: str
    nonce: str


class WeComInbound(BaseModel):
    """What the callback puts on the inbound queue: the project and the checked, decrypted message
    (its text included: the queue is encrypted at rest; nothing of it is logged)."""

    model_config = ConfigDict(frozen=True)

    project_id: str
    message: WeComInboundMessage

    @property
    def idempotency_key(self) -> str:
        """The delivery's identity across WeCom's retries: project and ``MsgId`` (an event's sender,
        time and name)."""
        return f"{self.project_id}#{self.message.dedupe_key}"


class WeComOutbound(BaseModel):
    """One message for the project's WeCom channel, before it is split at WeCom's limits.

    Attributes:
        to_userid: the member's WeCom user id (an application message); None: the group robot.
        text: what to say (an application message is plain text; the robot's is Markdown).
        dedupe_key: identifies the message across retries of whoever sends it (an answer: the
            inbound message's key; a reminder: its occurrence; an alert: its own dedupe key).
    """

    model_config = ConfigDict(frozen=True)

    project_id: str
    to_userid: str | None
    text: str = Field(repr=False)
    dedupe_key: str = Field(min_length=1, max_length=512)

    @property
    def markdown(self) -> bool:
        """Robot messages are Markdown (WeCom renders it in group chats); application messages are
        text, which every WeCom client and the WeChat plug-in show as sent."""
        return self.to_userid is None


class WeComOutboundPart(BaseModel):
    """One part of a :class:`WeComOutbound` as the outbox queue carries it: ``content`` fits the
    message type's limit; ``part`` of ``parts`` (1-based)."""

    model_config = ConfigDict(frozen=True)

    project_id: str
    to_userid: str | None
    content: str = Field(repr=False)
    dedupe_key: str
    part: int = Field(ge=1)
    parts: int = Field(ge=1)

    @property
    def markdown(self) -> bool:
        """As :attr:`WeComOutbound.markdown`."""
        return self.to_userid is None

    @property
    def idempotency_key(self) -> str:
        """The part's identity: the message's dedupe key and the part number."""
        return f"{self.dedupe_key}#{self.part}"


__all__ = [
    "MAX_AGENT_ID",
    "SESSION_HASH_CHARS",
    "WeComCallbackParams",
    "WeComChannel",
    "WeComChannelSettings",
    "WeComChannelView",
    "WeComCorpId",
    "WeComInbound",
    "WeComInboundMessage",
    "WeComOutbound",
    "WeComOutboundPart",
    "WeComUserId",
    "wecom_callback_path",
    "wecom_session_id",
    "wecom_userid_key",
]
