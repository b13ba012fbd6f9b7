"""A project's clinical source as an admin sets it: the REDCap API URL and its token, which the
service stores itself (docs/architecture.md, "Project secrets" and "Egress policy").

The rules of ``PATCH /v1/projects/{project_id}`` ``clinical_data``:

- the token goes in write-only (``token``); the service names its secret
  (``{ClinicalTokenSecretPrefix}{project_id}``) and the record keeps only ``token_set``,
  ``token_updated_at`` and the ``api_url`` the token was given for. A body naming a secret
  (``token_secret``) is refused: a caller could otherwise name another project's secret;
- a token is bound to its URL: changing ``api_url`` without a new ``token`` is refused, so a stored
  token is never sent to another host (the secret holds the URL too, and the client compares);
- the URL passes the egress policy (checked here, and again on every connection);
- ``clinical_data: null`` removes the source and schedules its token's deletion.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, SecretStr

from agent_memory.domain.errors import EgressRefused, InvalidInput
from agent_memory.domain.models import ClinicalDataSource, Project
from agent_memory.domain.secrets import REDCAP_TOKEN, RedcapTokenSecret, SecretNaming

if TYPE_CHECKING:
    from agent_memory.domain.egress import EgressPolicy
    from agent_memory.ports import HostResolver, ProjectSecretWriter

#: REDCap serves its API at ``<base>/api/`` (PyCap refuses any other URL).
REDCAP_API_SUFFIX = "/api/"


class ClinicalDataPatch(BaseModel):
    """``clinical_data`` of a PATCH body: ``api_url`` (None = keep the current one) and ``token``
    (None = keep the stored one, allowed only while the URL stays the same). ``token_secret`` is
    declared only to be refused with a reason; any other key is a validation error."""

    model_config = ConfigDict(extra="forbid")

    source: Literal["redcap"] = "redcap"
    api_url: str | None = None
    token: SecretStr | None = None
    token_secret: str | None = None


@dataclass(frozen=True)
class ClinicalSourceChange:
    """The project record to store and whether the token secret was written (before it) or deleted."""

    project: Project
    secret_written: bool = False
    secret_deleted: bool = False


@dataclass(frozen=True)
class ClinicalSourceDeps:
    """What the use case needs: the egress policy and its resolver, the secret writer, the names."""

    policy: EgressPolicy
    resolver: HostResolver
    secrets: ProjectSecretWriter
    naming: SecretNaming


def apply_clinical_patch(
    project: Project, patch: ClinicalDataPatch | None, deps: ClinicalSourceDeps, *, now: datetime,
) -> ClinicalSourceChange:
    """Apply a PATCH's ``clinical_data`` to ``project``: store the token (first), then return the
    record for the caller to store. ``patch`` None = ``clinical_data: null`` (remove the source).

    ``now``: UTC, becomes ``token_updated_at``. A failure after the secret write leaves the record as
    it was; the new secret then names the new URL, so the old record's URL finds no token for it
    (``ClinicalSourceTokenMissing``) until the retried PATCH stores the record: never a token sent
    to a URL it was not given for.

    Raises:
        InvalidInput (422): ``token_secret`` given; no URL for a new source; a URL change (or a new
            source, or a legacy ``token_secret`` project) without ``token``; a malformed token; a
            URL that is not REDCap's ``.../api/``.
        EgressRefused (422): the URL is refused by the egress policy.
        ExternalServiceError: Secrets Manager failed (nothing was stored in the record).
    """
    if patch is None:
        return remove_clinical_source(project, deps)
    if patch.token_secret is not None:
        raise InvalidInput("clinical_data.token_secret: the service names and stores the token; send `token`")
    current = project.clinical_data
    api_url = patch.api_url or (current.api_url if current is not None else None)
    if api_url is None:
        raise InvalidInput("clinical_data.api_url: required for a new clinical source")
    target = deps.policy.check_url(api_url, deps.resolver.resolve, field="clinical_data.api_url")
    if not target.url.split("?", 1)[0].endswith(REDCAP_API_SUFFIX) or "?" in target.url:
        raise InvalidInput("clinical_data.api_url: a REDCap API URL ends with /api/ (no query)")
    if patch.token is None:
        _keep_token(current, target.url, deps.policy)
        return ClinicalSourceChange(project)
    if not REDCAP_TOKEN.match(patch.token.get_secret_value()):
        raise InvalidInput("clinical_data.token: a REDCap API token is 32 hexadecimal characters")
    deps.secrets.put(deps.naming.redcap_token(project.project_id),
                     RedcapTokenSecret(token=patch.token, api_url=target.url).to_secret())
    source = ClinicalDataSource(source=patch.source, api_url=target.url, token_set=True, token_updated_at=now)
    return ClinicalSourceChange(project.model_copy(update={"clinical_data": source}), secret_written=True)


def remove_clinical_source(project: Project, deps: ClinicalSourceDeps) -> ClinicalSourceChange:
    """The project without a clinical source; its token secret is scheduled for deletion (the
    recovery window applies). Idempotent: a retry finds no secret and changes nothing more."""
    deleted = deps.secrets.delete(deps.naming.redcap_token(project.project_id))
    return ClinicalSourceChange(project.model_copy(update={"clinical_data": None}), secret_deleted=deleted)


def _keep_token(current: ClinicalDataSource | None, url: str, policy: EgressPolicy) -> None:
    """Refuse a PATCH without ``token`` unless the stored token stays on the same URL."""
    if current is None:
        raise InvalidInput("clinical_data.token: a new clinical source needs the project's REDCap API token")
    try:
        same = policy.check_form(current.api_url)[3] == url
    except EgressRefused:
        same = False
    if not same:
        raise InvalidInput("clinical_data.token: changing api_url needs the project's token for the new URL "
                           "(a stored token is never sent to another host)")
    if not current.token_set:
        raise InvalidInput("clinical_data.token: this project's token must be set again: send `token` "
                           "(the service now stores it; token_secret is no longer used)")


__all__ = [
    "REDCAP_API_SUFFIX", "ClinicalDataPatch", "ClinicalSourceChange", "ClinicalSourceDeps", "apply_clinical_patch",
    "remove_clinical_source",
]
