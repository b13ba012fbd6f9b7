"""A project's WeCom (企业微信) channel: its settings, its callbacks and the delivery of its
outbound messages (docs/architecture.md, "WeCom").

- Settings (``PUT/GET/DELETE /v1/projects/{project_id}/channels/wecom``, admins): the credentials
  go write-only into the project's channel secret (``{ChannelSecretPrefix}{project_id}/wecom``,
  which the service names); the ``CHANNEL#wecom`` record says what is set. A PUT writes the secret
  first, then the record (a failure between leaves the old record with the new credentials, never
  another project's); a DELETE removes the record first (the channel stops), then schedules the
  secret's deletion.
- Callbacks (``GET|POST /v1/wecom/{project_id}/callback``, no token): WeCom's protocol, checked
  with the project's own channel secret. A project without a channel answers as a bad signature
  (401): a caller learns nothing about which projects exist. A checked message goes onto the
  inbound queue and is acknowledged at once (WeCom waits 5 s, then sends it again); events
  (entering the application, ...) are acknowledged and dropped.
- Delivery (the outbox's consumer): one part of a message, with the credentials read from the
  secret; a channel removed since the message was queued drops it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from agent_memory.domain.errors import (
    ExternalServiceError,
    NotFound,
    SecretNotSet,
    SecretUnreadable,
    WeComSignatureInvalid,
)
from agent_memory.domain.wecom import (
    WeComCallbackParams,
    WeComChannelSettings,
    WeComChannelView,
    WeComInbound,
    WeComOutboundPart,
)

if TYPE_CHECKING:
    from agent_memory.domain.secrets import SecretNaming
    from agent_memory.ports import (
        ProjectSecretReader,
        ProjectSecretWriter,
        WeComCallbackProtocol,
        WeComChannelStore,
        WeComInboundQueue,
        WeComSender,
    )

CHANNEL: Literal["wecom"] = "wecom"


# ------------------------------------------------------------------------------------ settings
@dataclass(frozen=True)
class WeComSettingsDeps:
    """The channel record store, the secret writer and the secrets' names (the admin function)."""

    store: WeComChannelStore
    secrets: ProjectSecretWriter
    naming: SecretNaming


def put_wecom_channel(
    deps: WeComSettingsDeps, project_id: str, settings: WeComChannelSettings, *, actor: str, now: datetime
) -> WeComChannelView:
    """Set (or replace) the project's WeCom channel: the credentials first, then the record.

    ``now``: UTC. Returns what ``GET`` shows from now on (no secret).

    Raises:
        ExternalServiceError: Secrets Manager or the table failed (a retry completes it).
    """
    deps.secrets.put(deps.naming.channel(project_id, CHANNEL), settings.to_secret())
    record = settings.record(project_id, actor=actor, now=now)
    deps.store.put_channel(record)
    return record.view()


def get_wecom_channel(store: WeComChannelStore, project_id: str) -> WeComChannelView:
    """What is set for the project's WeCom channel (no secret).

    Raises:
        NotFound (404): the project has no WeCom channel.
    """
    record = store.get_channel(project_id)
    if record is None:
        raise NotFound(f"project {project_id} has no WeCom channel")
    return record.view()


def delete_wecom_channel(deps: WeComSettingsDeps, project_id: str) -> None:
    """Remove the channel (inbound messages are refused, nothing more is sent), then schedule its
    secret's deletion (the recovery window applies). Idempotent once both are gone.

    Raises:
        NotFound (404): neither a record nor a secret was left.
    """
    had_record = deps.store.delete_channel(project_id)
    had_secret = deps.secrets.delete(deps.naming.channel(project_id, CHANNEL))
    if not (had_record or had_secret):
        raise NotFound(f"project {project_id} has no WeCom channel")


# ----------------------------------------------------------------------------------- callbacks
@dataclass(frozen=True)
class WeComCallbackDeps:
    """The secret reader and names, the protocol and the inbound queue (the callback function)."""

    secrets: ProjectSecretReader
    naming: SecretNaming
    protocol: WeComCallbackProtocol
    queue: WeComInboundQueue


def channel_settings(secrets: ProjectSecretReader, naming: SecretNaming, project_id: str) -> WeComChannelSettings:
    """The project's channel credentials (cached a few minutes by the reader).

    Raises:
        SecretNotSet: the project has no WeCom channel (or it was removed).
        ExternalServiceError: the secret cannot be read (access, key) or the service failed.
    """
    try:
        return WeComChannelSettings.from_secret(secrets.read(naming.channel(project_id, CHANNEL)))
    except SecretUnreadable:
        raise ExternalServiceError("secretsmanager", "SecretUnreadable", retryable=False) from None


def _callback_settings(deps: WeComCallbackDeps, project_id: str) -> WeComChannelSettings:
    """The settings that check a callback; a project without a channel is refused as an unsigned
    callback would be (401), so the answer says nothing about which projects exist."""
    try:
        return channel_settings(deps.secrets, deps.naming, project_id)
    except SecretNotSet:
        raise WeComSignatureInvalid("the callback signature does not match") from None


def verify_callback_url(deps: WeComCallbackDeps, project_id: str, params: WeComCallbackParams, echostr: str) -> str:
    """WeCom's URL verification: the decrypted ``echostr`` (what the URL must answer).

    Raises:
        WeComSignatureInvalid, WeComCallbackStale (401), WeComReceiverMismatch (403),
        WeComMalformedCallback (400), ExternalServiceError.
    """
    return deps.protocol.verify_url(_callback_settings(deps, project_id), params, echostr)


def accept_callback(
    deps: WeComCallbackDeps, project_id: str, params: WeComCallbackParams, body: str
) -> Literal["queued", "ignored"]:
    """Check and decrypt a callback ``POST``; a message goes onto the inbound queue (``queued``), an
    event is acknowledged and dropped (``ignored``). Nothing is stored either way.

    Raises:
        WeComSignatureInvalid, WeComCallbackStale (401), WeComReceiverMismatch (403),
        WeComMalformedCallback (400), PayloadTooLarge (413), ExternalServiceError (the queue: 503,
        WeCom sends the callback again).
    """
    message = deps.protocol.open_message(_callback_settings(deps, project_id), params, body)
    if message.msg_type == "event":
        return "ignored"
    deps.queue.enqueue(WeComInbound(project_id=project_id, message=message))
    return "queued"


# ------------------------------------------------------------------------------------ delivery
@dataclass(frozen=True)
class WeComDeliveryDeps:
    """The secret reader and names, and WeCom's API (the outbox's consumer)."""

    secrets: ProjectSecretReader
    naming: SecretNaming
    sender: WeComSender


def deliver_part(deps: WeComDeliveryDeps, part: WeComOutboundPart) -> Literal["sent", "no_channel", "no_robot"]:
    """Send one part of an outbound message with the project's current credentials.

    Returns ``sent``, or why nothing was sent and never will be: the channel was removed
    (``no_channel``), or the message is for a group robot the channel no longer has (``no_robot``).

    Raises:
        ExternalServiceError: WeCom or Secrets Manager failed (``retryable`` for a transient fault;
            the queue delivers the part again, then dead-letters it).
        EgressBlocked: the egress policy refused WeCom's address (nothing was sent).
    """
    try:
        settings = channel_settings(deps.secrets, deps.naming, part.project_id)
    except SecretNotSet:
        return "no_channel"
    if part.to_userid is None and settings.robot_webhook_key is None:
        return "no_robot"
    deps.sender.send_part(settings, part)
    return "sent"


__all__ = [
    "CHANNEL",
    "WeComCallbackDeps",
    "WeComDeliveryDeps",
    "WeComSettingsDeps",
    "accept_callback",
    "channel_settings",
    "delete_wecom_channel",
    "deliver_part",
    "get_wecom_channel",
    "put_wecom_channel",
    "verify_callback_url",
]
