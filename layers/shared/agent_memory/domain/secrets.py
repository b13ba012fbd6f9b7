"""Secrets the service owns for a project (docs/architecture.md, "Project secrets"): the REDCap
API token, the reminder webhook's signing key and a messenger channel's credentials.

A caller never names a secret: the service derives the name from the project id and the secret's
purpose under a prefix per purpose (the template's ``ClinicalTokenSecretPrefix``,
``ReminderWebhookSecretPrefix``, ``ChannelSecretPrefix``), so one project's admin can reach no other
project's secret, and each function's IAM grant names only the prefixes it needs. Values travel as
``pydantic.SecretStr``: their ``repr``, ``str`` and JSON dump show ``**********``, so a value
never reaches a log, an export or an audit record by accident; only the adapter writing it and
the client sending it call ``get_secret_value()``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, SecretStr, ValidationError

from agent_memory.domain.errors import InvalidInput, SecretUnreadable

SecretPurpose = Literal["redcap_token", "reminder_webhook", "channel"]
Channel = Literal["wecom"]

#: Project ids as every route takes them (``agent_memory.http.requests.ID_PATTERN``): no ``/``, so a
#: derived name never reaches outside its prefix.
_PROJECT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: Secrets Manager's name alphabet and length (API reference, CreateSecret ``Name``).
_SECRET_NAME = re.compile(r"^[A-Za-z0-9/_+=.@-]{1,512}$")
#: A REDCap project API token: 32 hexadecimal characters (PyCap checks the length too).
REDCAP_TOKEN = re.compile(r"^[0-9A-Fa-f]{32}$")


@dataclass(frozen=True)
class ProjectSecretRef:
    """Which secret: its Secrets Manager ``name``, the ``project_id`` it belongs to (its tag) and
    its ``purpose`` (its other tag)."""

    name: str
    project_id: str
    purpose: SecretPurpose


@dataclass(frozen=True)
class SecretNaming:
    """The name prefixes per purpose; names are ``{prefix}{project_id}`` (a channel's
    ``{channel_prefix}{project_id}/{channel}``).

    ``reserved_names``: names no prefix may cover (the Anthropic API key's secret): a project whose
    id made a derived name equal to one of them would overwrite it.

    Raises (construction):
        ValueError: a prefix is empty, does not end with ``/``, covers another prefix (one role's
            grant would reach the other's secrets) or covers a reserved name.
    """

    redcap_token_prefix: str = "agent-memory/redcap/"
    reminder_webhook_prefix: str = "agent-memory/reminder-webhook/"
    channel_prefix: str = "agent-memory/channel/"
    reserved_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        prefixes = (self.redcap_token_prefix, self.reminder_webhook_prefix, self.channel_prefix)
        for prefix in prefixes:
            if not prefix.endswith("/") or not _SECRET_NAME.match(prefix):
                raise ValueError(f"secret name prefix {prefix!r} must be a Secrets Manager name ending with '/'")
            for other in (*prefixes, *self.reserved_names):
                if other is not prefix and other.startswith(prefix):
                    raise ValueError(f"secret name prefix {prefix!r} covers {other!r}")

    def redcap_token(self, project_id: str) -> ProjectSecretRef:
        """The project's REDCap API token (value: :class:`RedcapTokenSecret` as JSON)."""
        return self._ref(self.redcap_token_prefix, project_id, "redcap_token")

    def reminder_webhook(self, project_id: str) -> ProjectSecretRef:
        """The key that signs the project's reminder webhook calls (value: the key itself)."""
        return self._ref(self.reminder_webhook_prefix, project_id, "reminder_webhook")

    def channel(self, project_id: str, channel: Channel) -> ProjectSecretRef:
        """A messenger channel's credentials (value: one JSON object per channel)."""
        return self._ref(self.channel_prefix, project_id, "channel", suffix=f"/{channel}")

    def all_for(self, project_id: str) -> list[ProjectSecretRef]:
        """Every secret the project may own (what removing the project deletes)."""
        return [self.redcap_token(project_id), self.reminder_webhook(project_id), self.channel(project_id, "wecom")]

    @staticmethod
    def _ref(prefix: str, project_id: str, purpose: SecretPurpose, suffix: str = "") -> ProjectSecretRef:
        if not _PROJECT_ID.match(project_id):
            raise InvalidInput("project_id: 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
        name = f"{prefix}{project_id}{suffix}"
        if not _SECRET_NAME.match(name):
            raise InvalidInput("project_id: too long for a secret name")
        return ProjectSecretRef(name=name, project_id=project_id, purpose=purpose)


class RedcapTokenSecret(BaseModel):
    """The stored value of a project's REDCap token: the token and the API URL it was given for.

    The URL travels inside the secret, so a token is bound to its host whatever happens to the
    project record (a partial write, a stale cache): the client sends the token only when the
    record's ``api_url`` equals this one (docs/architecture.md, "Project secrets").
    """

    token: SecretStr
    api_url: str

    def to_secret(self) -> SecretStr:
        """The JSON ``{"token", "api_url"}`` to store, itself a ``SecretStr``."""
        return SecretStr(json.dumps({"token": self.token.get_secret_value(), "api_url": self.api_url}))

    @classmethod
    def from_secret(cls, raw: SecretStr) -> RedcapTokenSecret:
        """Parse a stored value.

        Raises:
            SecretUnreadable: not the JSON the service stores, or no REDCap token in it.
        """
        try:
            parsed = cls.model_validate_json(raw.get_secret_value())
        except ValidationError:
            raise SecretUnreadable("the stored REDCap token is not in the service's format") from None
        if not REDCAP_TOKEN.match(parsed.token.get_secret_value()):
            raise SecretUnreadable("the stored REDCap token is not a REDCap API token")
        return parsed


__all__ = ["REDCAP_TOKEN", "Channel", "ProjectSecretRef", "RedcapTokenSecret", "SecretNaming", "SecretPurpose"]
