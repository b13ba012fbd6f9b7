"""The operator's migration of a legacy clinical source (docs/architecture.md, "Project secrets").

Before the service owned the REDCap tokens, a project's ``clinical_data`` named a secret
(``token_secret``) an admin chose. The chat refuses such a source ("set the token again"); this
use case moves a legacy token into the project's own secret, bound to the record's ``api_url``,
when that is safe, and otherwise says why the project's admin must set the token again:

- only a secret under the project's OWN derived name (``{ClinicalTokenSecretPrefix}{project_id}``)
  is ever read: a record naming any other secret (another project's, one outside the prefix) is
  the exploit this migration must not complete, so that secret is never opened;
- the record's ``api_url`` must pass the egress policy now (form, REDCap's ``/api/``, every address
  it resolves to): the token is bound to that URL and sent nowhere else afterwards;
- the value must hold a REDCap token (the token itself, or ``{"token": ...}``, the two forms the
  legacy README allowed).

Nothing here returns, logs or prints a token: the outcome names the project, the URL and a reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import SecretStr

from agent_memory.domain.errors import EgressRefused, InvalidInput, SecretNotSet, SecretUnreadable
from agent_memory.domain.models import ClinicalDataSource, Project
from agent_memory.domain.secrets import REDCAP_TOKEN, RedcapTokenSecret, SecretNaming
from agent_memory.projects.clinical_source import REDCAP_API_SUFFIX

if TYPE_CHECKING:
    from agent_memory.domain.egress import EgressPolicy
    from agent_memory.ports import HostResolver, ProjectSecretReader, ProjectSecretWriter

MigrationStatus = Literal["migrated", "would_migrate", "set_again", "not_legacy"]


@dataclass(frozen=True)
class MigrationDeps:
    """The egress policy and its resolver, the secret reader (the legacy value) and writer (the
    project's own secret), and the secret names."""

    policy: EgressPolicy
    resolver: HostResolver
    reader: ProjectSecretReader
    writer: ProjectSecretWriter
    naming: SecretNaming


@dataclass(frozen=True)
class MigrationOutcome:
    """What happened to one project: ``status``; ``api_url`` the token is (or would be) bound to;
    ``reason`` why its admin must set the token again (``set_again``); ``project`` the record to
    store when ``migrated`` (None otherwise). Safe to print: it never holds the token."""

    project_id: str
    status: MigrationStatus
    api_url: str | None = None
    reason: str = ""
    project: Project | None = None

    def report(self) -> dict[str, str | None]:
        """The outcome as the operator's script prints it (one JSON object per project)."""
        return {"project_id": self.project_id, "status": self.status, "api_url": self.api_url,
                "reason": self.reason or None}


def migrate_legacy_token(project: Project, deps: MigrationDeps, *, now: datetime, apply: bool) -> MigrationOutcome:
    """Move ``project``'s legacy token into its own secret bound to its ``api_url``.

    ``apply`` False: check everything (the legacy secret is read) and write nothing
    (``would_migrate``). ``apply`` True: store ``{"token", "api_url"}`` in the project's own secret
    (tagged, under the stack's key) and return the record to store (``token_set``, ``token_updated_at``
    = ``now`` in UTC, no ``token_secret``). The secret is written first: a failure before the record
    is stored leaves the legacy record, which the chat still refuses, and a re-run finishes it.

    Raises:
        ExternalServiceError: Secrets Manager failed (nothing was stored in the record).
    """
    source = project.clinical_data
    if source is None or source.token_secret is None:
        return MigrationOutcome(project.project_id, "not_legacy")
    own = deps.naming.redcap_token(project.project_id)
    if source.token_secret != own.name:
        return _set_again(project, source, f"token_secret names a secret that is not the project's own ({own.name}); "
                                           "it was not read")
    try:
        url = deps.policy.check_url(source.api_url, deps.resolver.resolve, field="clinical_data.api_url").url
        if not url.endswith(REDCAP_API_SUFFIX):
            raise InvalidInput("clinical_data.api_url: a REDCap API URL ends with /api/ (no query)")
    except (EgressRefused, InvalidInput) as exc:
        return _set_again(project, source, exc.reason)
    try:
        token = legacy_token(deps.reader.read(own, fresh=True))
    except (SecretNotSet, SecretUnreadable) as exc:
        return _set_again(project, source, exc.reason)
    if not apply:
        return MigrationOutcome(project.project_id, "would_migrate", url)
    deps.writer.put(own, RedcapTokenSecret(token=token, api_url=url).to_secret())
    migrated = ClinicalDataSource(source=source.source, api_url=url, token_set=True, token_updated_at=now)
    return MigrationOutcome(project.project_id, "migrated", url,
                            project=project.model_copy(update={"clinical_data": migrated}))


def legacy_token(raw: SecretStr) -> SecretStr:
    """The REDCap token of a legacy secret value: the token itself or JSON ``{"token": ...}``.

    Raises:
        SecretUnreadable: neither form, or not 32 hexadecimal characters (the value is not quoted).
    """
    text = raw.get_secret_value().strip()
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        text = parsed.get("token", "") if isinstance(parsed, dict) else ""
    if not isinstance(text, str) or not REDCAP_TOKEN.match(text):
        raise SecretUnreadable("the legacy secret does not hold a REDCap API token (32 hexadecimal characters)")
    return SecretStr(text)


def _set_again(project: Project, source: ClinicalDataSource, reason: str) -> MigrationOutcome:
    return MigrationOutcome(project.project_id, "set_again", source.api_url,
                            f"{reason}: the project's admin must set the token with PATCH clinical_data.token")


__all__ = ["MigrationDeps", "MigrationOutcome", "MigrationStatus", "legacy_token", "migrate_legacy_token"]
