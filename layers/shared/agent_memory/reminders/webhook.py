"""The project's reminder webhook as an admin sets it (``PUT/DELETE
/v1/projects/{project_id}/reminder-webhook``; docs/architecture.md, "Project secrets").

PUT: the URL passes the egress policy; the service generates the signing key
(``secrets.token_urlsafe``, 32 random bytes), stores it as the project's webhook secret
(``{ReminderWebhookSecretPrefix}{project_id}``) and returns it in that one response: it is never
shown again (a new PUT makes a new key). Deliveries sign ``"<timestamp>.<body>"`` with it
(``agent_memory.adapters.reminder_channel``). DELETE removes the webhook record, then schedules the
key's deletion.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from secrets import token_urlsafe
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, SecretStr

from agent_memory.domain.errors import NotFound

if TYPE_CHECKING:
    from collections.abc import Callable

    from agent_memory.domain.egress import EgressPolicy
    from agent_memory.domain.secrets import SecretNaming
    from agent_memory.ports import HostResolver, ProjectSecretWriter, ReminderWebhookStore

#: Random bytes of a generated signing key (``token_urlsafe``: 43 URL-safe characters).
SIGNING_KEY_BYTES = 32


class ReminderWebhookSet(BaseModel):
    """A webhook just set: its normalised ``url``, the new ``signing_key`` (``SecretStr``: hidden in
    any repr, log or dump) and ``set_at`` (UTC)."""

    project_id: str
    url: str
    signing_key: SecretStr
    set_at: datetime

    def shown_once(self) -> dict[str, Any]:
        """The PUT response body: the one place the key is revealed."""
        return {"project_id": self.project_id, "url": self.url, "set_at": self.set_at.isoformat(),
                "signing_key": self.signing_key.get_secret_value(),
                "signature": "X-Reminder-Signature: sha256=<hex HMAC-SHA256 of '<X-Reminder-Timestamp>.<body>'>"}


@dataclass(frozen=True)
class WebhookDeps:
    """The webhook record store, the secret writer, the names, the egress policy and its resolver;
    ``new_key() -> str`` makes a signing key (tests pass a fixed one)."""

    store: ReminderWebhookStore
    secrets: ProjectSecretWriter
    naming: SecretNaming
    policy: EgressPolicy
    resolver: HostResolver
    new_key: Callable[[], str] = lambda: token_urlsafe(SIGNING_KEY_BYTES)


def put_reminder_webhook(deps: WebhookDeps, project_id: str, url: str, *, now: datetime) -> ReminderWebhookSet:
    """Set (or replace) the project's webhook with a new signing key: the key first, then the record.

    A failure between the two leaves the old record with the new key (its receiver sees signatures
    it cannot check until the retried PUT completes): never a key or URL of another project.

    Raises:
        EgressRefused (422): the URL is refused by the egress policy.
        ExternalServiceError: Secrets Manager or the table failed.
    """
    target = deps.policy.check_url(url, deps.resolver.resolve, field="url")
    ref = deps.naming.reminder_webhook(project_id)
    key = SecretStr(deps.new_key())
    deps.secrets.put(ref, key)
    deps.store.put_webhook(project_id, target.url, ref.name)
    return ReminderWebhookSet(project_id=project_id, url=target.url, signing_key=key, set_at=now)


def delete_reminder_webhook(deps: WebhookDeps, project_id: str) -> None:
    """Remove the webhook (deliveries stop), then schedule its key's deletion.

    Raises:
        NotFound (404): the project has no webhook (and no key left to delete).
    """
    had_record = deps.store.delete_webhook(project_id)
    had_key = deps.secrets.delete(deps.naming.reminder_webhook(project_id))
    if not (had_record or had_key):
        raise NotFound(f"project {project_id} has no reminder webhook")


__all__ = ["SIGNING_KEY_BYTES", "ReminderWebhookSet", "WebhookDeps", "delete_reminder_webhook", "put_reminder_webhook"]
