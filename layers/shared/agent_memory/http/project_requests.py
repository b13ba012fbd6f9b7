"""Bodies of the project and member routes. Validated by the Powertools event handler: an
unknown time zone, a bad id, an unknown project or study role, a bad clinical data source -> 422
with the field's location (never its value)."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, model_validator

from agent_memory.domain.models import IdentifierPolicy, StudyRole
from agent_memory.domain.secrets import REDCAP_TOKEN
from agent_memory.domain.wecom import WeComUserId
from agent_memory.http.requests import ID_PATTERN
from agent_memory.http.text_patterns import DISPLAY_TEXT
from agent_memory.projects.clinical_source import ClinicalDataPatch

#: A REDCap API token (``agent_memory.domain.secrets.REDCAP_TOKEN``).
REDCAP_TOKEN_PATTERN = REDCAP_TOKEN.pattern
#: Hosts a clinical data source may reach over plain http (a local REDCap for development).
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1"})


def _time_zone(value: str) -> str:
    """An IANA zone name the runtime knows (``Europe/Berlin``); ValueError otherwise."""
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValueError("unknown IANA time zone") from exc
    return value


def _display_text(value: str) -> str:
    """Visible text: stripped, not empty, no control or format characters."""
    text = value.strip()
    if not text:
        raise ValueError("must not be empty")
    if any(unicodedata.category(c) in ("Cc", "Cf") for c in text):
        raise ValueError("must not contain control characters")
    return text


def _api_url(value: str) -> str:
    """An https URL, or http only to localhost / 127.0.0.1 (a token or a signed body must never
    cross a network in clear text); the egress policy decides the rest (docs/architecture.md,
    "Egress policy")."""
    parts = urlsplit(value)
    host = (parts.hostname or "").lower()
    if not host or parts.scheme not in ("https", "http") or (parts.scheme == "http" and host not in LOCAL_HOSTS):
        raise ValueError("must be an https URL (http only for localhost or 127.0.0.1)")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry credentials (user@host)")
    return value


def _redcap_token(value: SecretStr) -> SecretStr:
    """A REDCap API token: 32 hexadecimal characters (the message never quotes it)."""
    if not REDCAP_TOKEN.match(value.get_secret_value()):
        raise ValueError("a REDCap API token is 32 hexadecimal characters")
    return value


def _known_time_zones(schema: dict[str, Any]) -> None:
    """The JSON schema of a time zone lists the zones the runtime knows (only when a schema is
    made: reading them walks the time zone database)."""
    schema["enum"] = sorted(available_timezones())


#: An https URL, or http to localhost / 127.0.0.1; a host name, no user info (:func:`_api_url`).
API_URL_PATTERN = (
    r"^(?:[Hh][Tt][Tt][Pp][Ss]://[^/?#@\[\]:][^/?#@\[\]]*"
    r"|[Hh][Tt][Tt][Pp]://(?:[Ll][Oo][Cc][Aa][Ll][Hh][Oo][Ss][Tt]|127\.0\.0\.1)(?::[^/?#@\[\]]*)?)(?:[/?#].*)?$"
)

TimeZone = Annotated[
    str, Field(min_length=1, max_length=64, json_schema_extra=_known_time_zones), AfterValidator(_time_zone)
]
DisplayText = Annotated[
    str, Field(min_length=1, max_length=200, json_schema_extra={"pattern": DISPLAY_TEXT}), AfterValidator(_display_text)
]


class CreateProjectRequest(BaseModel):
    """Body of ``POST /v1/projects`` (platform operators)."""

    model_config = ConfigDict(extra="forbid")

    project_id: str = Field(pattern=ID_PATTERN, description="1-128 letters, digits, '.', '_', '-'.")
    name: DisplayText
    time_zone: TimeZone = Field(description="IANA zone of the project's calendar, e.g. Europe/Berlin.")
    kind: Literal["iit", "consultation"] = "iit"
    rules_language: Literal["zh", "en"] = Field(
        default="zh", description="Language of the baseline System Rules an IIT project starts with (admins "
                                  "review and may edit them when onboarding).")


class ClinicalDataRequest(BaseModel):
    """``clinical_data`` of ``PATCH /v1/projects/{project_id}``: the REDCap API URL and, write-only,
    the project's REDCap API token (docs/architecture.md, "Project secrets"). The service stores the
    token in the project's own secret and never returns it; a caller cannot name a secret
    (``token_secret`` is refused with the reason)."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["redcap"] = "redcap"
    api_url: Annotated[
        str,
        Field(min_length=1, max_length=2048, json_schema_extra={"pattern": API_URL_PATTERN},
              description="REDCap's API URL (https, ending with /api/); checked against the egress policy. "
                          "Left out: the current one (a token is bound to its URL)."),
        AfterValidator(_api_url),
    ] | None = None
    token: Annotated[
        SecretStr,
        Field(json_schema_extra={"pattern": REDCAP_TOKEN_PATTERN},
              description="The project's REDCap API token (32 hexadecimal characters), write-only: stored in "
                          "the project's own secret, never returned. Required for a new source and with a new "
                          "api_url."),
        AfterValidator(_redcap_token),
    ] | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_secret_names(cls, data: Any) -> Any:
        """A body naming a secret is refused with the reason (any secret of the account could be named)."""
        if isinstance(data, dict) and "token_secret" in data:
            raise ValueError("token_secret is no longer accepted: the service names and stores the project's "
                             "token itself; send the token in `token` (write-only)")
        return data

    def to_patch(self) -> ClinicalDataPatch:
        """The use case's input."""
        return ClinicalDataPatch(source=self.source, api_url=self.api_url, token=self.token)


class UpdateProjectRequest(BaseModel):
    """Body of ``PATCH /v1/projects/{project_id}`` (project admins): fields left out stay;
    ``clinical_data: null`` removes the clinical source (its token is deleted with the recovery
    window)."""

    model_config = ConfigDict(extra="forbid")

    name: DisplayText | None = None
    time_zone: TimeZone | None = None
    clinical_data: ClinicalDataRequest | None = None
    identifiers: IdentifierPolicy | None = Field(default=None, description=(
        "What the identifier firewall does with a chat message, transcript turn, feedback reason or reminder "
        "text that holds identifiers (resident IDs, phones, e-mail addresses, labelled record / insurance / "
        "passport numbers, the REDCap subjects' names, phones and addresses): `redact` stores and sends it with "
        "each one replaced by a placeholder (the default); `reject` answers 422 `identifiers_rejected` with "
        "the kinds found and stores nothing."))


class ReminderWebhookRequest(BaseModel):
    """Body of ``PUT /v1/projects/{project_id}/reminder-webhook`` (project admins): where the
    project's reminder firings are POSTed (signed with a key the service generates)."""

    model_config = ConfigDict(extra="forbid")

    url: Annotated[
        str,
        Field(min_length=1, max_length=2048, json_schema_extra={"pattern": API_URL_PATTERN},
              description="https URL of the receiver; checked against the egress policy now and on every POST."),
        AfterValidator(_api_url),
    ]


class PutMemberRequest(BaseModel):
    """Body of ``PUT /v1/projects/{project_id}/members/{user_id}``."""

    model_config = ConfigDict(extra="forbid")

    project_role: Literal["admin", "member"]
    study_role: StudyRole
    display_name: DisplayText
    wecom_userid: WeComUserId | None = Field(default=None, description=(
        "The member's WeCom user id (企业微信 UserID), when the project's WeCom channel should answer and "
        "remind them there; at most one member of a project has it (409 otherwise; compared ignoring "
        "case). Left out: the member has none (PUT replaces the membership)."))


__all__ = [
    "REDCAP_TOKEN_PATTERN", "ClinicalDataRequest", "CreateProjectRequest", "PutMemberRequest", "ReminderWebhookRequest",
    "UpdateProjectRequest",
]
