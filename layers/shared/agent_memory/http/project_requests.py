"""Bodies of the project and member routes. Validated by the Powertools event handler: an
unknown time zone, a bad id, an unknown project or study role, a bad clinical data source -> 422
with the field's location (never its value)."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from agent_memory.domain.models import ClinicalDataSource, StudyRole
from agent_memory.http.requests import ID_PATTERN
from agent_memory.http.text_patterns import DISPLAY_TEXT

#: A Secrets Manager secret NAME (never the secret itself): 1-512 of the characters AWS allows.
SECRET_NAME_PATTERN = r"^[A-Za-z0-9/_+=.@-]{1,512}$"
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
    """An https URL, or http only to localhost / 127.0.0.1 (the token must never cross a network
    in clear text)."""
    parts = urlsplit(value)
    host = (parts.hostname or "").lower()
    if not host or parts.scheme not in ("https", "http") or (parts.scheme == "http" and host not in LOCAL_HOSTS):
        raise ValueError("must be an https URL (http only for localhost or 127.0.0.1)")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not carry credentials (the token is read from its secret)")
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


class ClinicalDataRequest(BaseModel):
    """A project's clinical data source: a REDCap API URL and the NAME of the Secrets Manager
    secret holding its token (the token value never passes this API)."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["redcap"]
    api_url: Annotated[
        str,
        Field(min_length=1, max_length=2048, json_schema_extra={"pattern": API_URL_PATTERN}),
        AfterValidator(_api_url),
    ]
    token_secret: str = Field(pattern=SECRET_NAME_PATTERN, description="A secret NAME, not its value.")

    def to_domain(self) -> ClinicalDataSource:
        return ClinicalDataSource(source=self.source, api_url=self.api_url, token_secret=self.token_secret)


class UpdateProjectRequest(BaseModel):
    """Body of ``PATCH /v1/projects/{project_id}`` (project admins): fields left out stay."""

    model_config = ConfigDict(extra="forbid")

    name: DisplayText | None = None
    time_zone: TimeZone | None = None
    clinical_data: ClinicalDataRequest | None = None


class PutMemberRequest(BaseModel):
    """Body of ``PUT /v1/projects/{project_id}/members/{user_id}``."""

    model_config = ConfigDict(extra="forbid")

    project_role: Literal["admin", "member"]
    study_role: StudyRole
    display_name: DisplayText



__all__ = [
    "ClinicalDataRequest", "CreateProjectRequest", "PutMemberRequest", "SECRET_NAME_PATTERN", "UpdateProjectRequest",
]
