"""The operator's migration of a legacy ``token_secret`` source (agent_memory/projects/token_migration.py):
only the project's own secret is ever read; the token lands in it bound to a URL the egress policy
accepts; anything else is left for the project's admin with the reason, the token never reported."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.models import ClinicalDataSource, Project
from agent_memory.domain.secrets import SecretNaming
from agent_memory.projects.token_migration import MigrationDeps, migrate_legacy_token
from tests.fakes import FakeResolver, InMemorySecrets

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TOKEN = "0123456789ABCDEF0123456789ABCDEF"
URL = "https://redcap.example.org/api/"
NAMING = SecretNaming()
OWN = "agent-memory/redcap/p1"


@pytest.fixture
def secrets() -> InMemorySecrets:
    store = InMemorySecrets()
    # the legacy secrets, as operators created them by hand (the token itself, or {"token": ...})
    store.values.update({OWN: TOKEN, "agent-memory/redcap/p2": json.dumps({"token": TOKEN.lower()}),
                         "agent-memory/redcap/demo-iit": TOKEN})
    return store


@pytest.fixture
def deps(secrets: InMemorySecrets) -> MigrationDeps:
    resolver = FakeResolver({"redcap.example.org": [["93.184.216.34"]], "intranet.example": [["10.0.0.5"]]})
    return MigrationDeps(policy=EgressPolicy(), resolver=resolver, reader=secrets, writer=secrets, naming=NAMING)


def _legacy(token_secret: str, *, project_id: str = "p1", api_url: str = URL) -> Project:
    return Project(project_id=project_id, name="P", created_at=NOW, clinical_data=ClinicalDataSource(
        source="redcap", api_url=api_url, token_secret=token_secret))


def test_a_report_reads_the_projects_own_secret_and_writes_nothing(
    deps: MigrationDeps, secrets: InMemorySecrets
) -> None:
    outcome = migrate_legacy_token(_legacy(OWN), deps, now=NOW, apply=False)
    assert (outcome.status, outcome.api_url, outcome.project) == ("would_migrate", URL, None)
    assert secrets.log == [("read", OWN)] and secrets.current(OWN) == TOKEN


@pytest.mark.parametrize(("project_id", "stored"), [("p1", TOKEN), ("p2", TOKEN.lower())])
def test_applied_the_token_is_bound_to_the_url_in_the_projects_own_secret(
    deps: MigrationDeps, secrets: InMemorySecrets, project_id: str, stored: str
) -> None:
    own = f"agent-memory/redcap/{project_id}"
    outcome = migrate_legacy_token(_legacy(own, project_id=project_id), deps, now=NOW, apply=True)
    assert outcome.status == "migrated"
    assert json.loads(secrets.current(own) or "") == {"token": stored, "api_url": URL}
    assert secrets.tags[own] == {"project_id": project_id, "purpose": "redcap_token"}
    # the record to store says the token is set and no longer names a secret
    assert outcome.project is not None and outcome.project.clinical_data == ClinicalDataSource(
        source="redcap", api_url=URL, token_set=True, token_updated_at=NOW)
    assert "token_secret" not in outcome.project.clinical_data.stored()
    assert stored not in json.dumps(outcome.report())


@pytest.mark.parametrize("named", [
    "agent-memory/redcap/demo-iit",                    # another project's secret: the exploit
    "agent-memory/redcap/../anthropic-api-key",        # a name reaching outside the prefix
    "agent-memory/anthropic-api-key",
    "agent-memory/redcap/p1/extra",
])
def test_a_record_naming_any_secret_but_its_own_is_left_and_that_secret_never_read(
    deps: MigrationDeps, secrets: InMemorySecrets, named: str
) -> None:
    outcome = migrate_legacy_token(_legacy(named), deps, now=NOW, apply=True)
    assert outcome.status == "set_again" and "not the project's own (agent-memory/redcap/p1)" in outcome.reason
    assert "PATCH clinical_data.token" in outcome.reason
    assert secrets.log == []  # nothing read, nothing written
    assert outcome.project is None


@pytest.mark.parametrize(("api_url", "why"), [
    ("https://169.254.169.254/api/", "instance-metadata"),
    ("http://redcap.example.org/api/", "https"),
    ("https://intranet.example/api/", "EgressAllowPrivate"),
    ("https://unknown.example/api/", "does not resolve"),
    ("https://redcap.example.org/redcap/", "ends with /api/"),
])
def test_a_url_the_egress_policy_refuses_now_is_left_before_the_secret_is_read(
    deps: MigrationDeps, secrets: InMemorySecrets, api_url: str, why: str
) -> None:
    outcome = migrate_legacy_token(_legacy(OWN, api_url=api_url), deps, now=NOW, apply=True)
    assert (outcome.status, outcome.api_url) == ("set_again", api_url)
    assert why in outcome.reason
    assert secrets.log == []


@pytest.mark.parametrize(("value", "why"), [
    (None, "is not set"), ("not-a-token", "does not hold a REDCap API token"),
    ('{"token": "short"}', "does not hold a REDCap API token"), ("{not json", "does not hold a REDCap API token"),
])
def test_a_missing_or_malformed_legacy_secret_is_left_and_its_value_never_quoted(
    deps: MigrationDeps, secrets: InMemorySecrets, value: str | None, why: str
) -> None:
    if value is None:
        del secrets.values[OWN]
    else:
        secrets.values[OWN] = value
    outcome = migrate_legacy_token(_legacy(OWN), deps, now=NOW, apply=True)
    assert outcome.status == "set_again" and why in outcome.reason
    assert value is None or value not in outcome.reason
    assert [op for op, _ in secrets.log] == ["read"]


def test_a_source_set_through_the_api_or_none_is_not_legacy(deps: MigrationDeps, secrets: InMemorySecrets) -> None:
    current = Project(project_id="p1", name="P", created_at=NOW, clinical_data=ClinicalDataSource(
        source="redcap", api_url=URL, token_set=True, token_updated_at=NOW))
    for project in (current, current.model_copy(update={"clinical_data": None})):
        assert migrate_legacy_token(project, deps, now=NOW, apply=True).status == "not_legacy"
    assert secrets.log == []
