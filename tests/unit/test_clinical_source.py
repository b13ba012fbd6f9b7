"""The clinical source as an admin sets it (agent_memory/projects/clinical_source.py): the token is
written by the service under a name it derives, bound to its URL; ``token_secret`` is refused; the
URL passes the egress policy; removal schedules the token's deletion (in-memory fakes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr, ValidationError

from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.errors import EgressRefused, ExternalServiceError, InvalidInput
from agent_memory.domain.models import ClinicalDataSource, Project
from agent_memory.domain.secrets import SecretNaming
from agent_memory.projects.clinical_source import (
    ClinicalDataPatch,
    ClinicalSourceDeps,
    apply_clinical_patch,
)
from tests.fakes import FakeResolver, InMemorySecrets

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
TOKEN = "0123456789ABCDEF0123456789ABCDEF"
NEW_TOKEN = "FEDCBA9876543210FEDCBA9876543210"
URL = "https://redcap.example.org/api/"
SECRET = "agent-memory/redcap/p1"


@pytest.fixture
def secrets() -> InMemorySecrets:
    return InMemorySecrets()


@pytest.fixture
def deps(secrets: InMemorySecrets) -> ClinicalSourceDeps:
    resolver = FakeResolver({"redcap.example.org": [["93.184.216.34"]], "evil.example": [["93.184.216.35"]],
                             "rebind.example": [["169.254.169.254"]]})
    return ClinicalSourceDeps(policy=EgressPolicy(), resolver=resolver, secrets=secrets, naming=SecretNaming())


def _project(clinical: ClinicalDataSource | None = None, project_id: str = "p1") -> Project:
    return Project(project_id=project_id, name="P", created_at=NOW, clinical_data=clinical)


def _set(deps: ClinicalSourceDeps, project: Project, **body: object) -> Project:
    return apply_clinical_patch(project, ClinicalDataPatch.model_validate(body), deps, now=NOW).project


def test_setting_a_source_stores_the_token_bound_to_its_url_and_the_record_says_only_token_set(
    deps: ClinicalSourceDeps, secrets: InMemorySecrets,
) -> None:
    change = apply_clinical_patch(_project(), ClinicalDataPatch(api_url="HTTPS://Redcap.Example.org/api/",
                                                                token=SecretStr(TOKEN)), deps, now=NOW)
    assert change.secret_written
    assert change.project.clinical_data == ClinicalDataSource(source="redcap", api_url=URL, token_set=True,
                                                              token_updated_at=NOW)
    assert json.loads(secrets.current(SECRET) or "") == {"token": TOKEN, "api_url": URL}
    assert secrets.tags[SECRET] == {"project_id": "p1", "purpose": "redcap_token"}
    assert TOKEN not in change.project.model_dump_json()  # the record never holds it


def test_a_named_secret_is_refused_with_the_reason(deps: ClinicalSourceDeps, secrets: InMemorySecrets) -> None:
    with pytest.raises(InvalidInput) as refused:
        _set(deps, _project(), api_url=URL, token_secret="agent-memory/redcap/demo-iit")
    assert refused.value.reason == "clinical_data.token_secret: the service names and stores the token; send `token`"
    assert secrets.log == []


def test_changing_the_url_without_a_new_token_is_refused(deps: ClinicalSourceDeps, secrets: InMemorySecrets) -> None:
    project = _set(deps, _project(), api_url=URL, token=TOKEN)
    with pytest.raises(InvalidInput, match="changing api_url needs the project's token"):
        _set(deps, project, api_url="https://evil.example/api/")
    assert json.loads(secrets.current(SECRET) or "")["api_url"] == URL  # the stored token stays bound to URL


def test_a_new_url_with_a_new_token_rebinds_it(deps: ClinicalSourceDeps, secrets: InMemorySecrets) -> None:
    project = _set(deps, _project(), api_url=URL, token=TOKEN)
    moved = _set(deps, project, api_url="https://evil.example/api/", token=NEW_TOKEN)
    assert moved.clinical_data is not None and moved.clinical_data.api_url == "https://evil.example/api/"
    assert json.loads(secrets.current(SECRET) or "") == {"token": NEW_TOKEN, "api_url": "https://evil.example/api/"}


def test_a_token_alone_rotates_it_for_the_same_url(deps: ClinicalSourceDeps, secrets: InMemorySecrets) -> None:
    project = _set(deps, _project(), api_url=URL, token=TOKEN)
    rotated = _set(deps, project, token=NEW_TOKEN)
    assert rotated.clinical_data is not None and rotated.clinical_data.api_url == URL
    assert json.loads(secrets.current(SECRET) or "")["token"] == NEW_TOKEN


def test_the_same_url_without_a_token_changes_nothing(deps: ClinicalSourceDeps, secrets: InMemorySecrets) -> None:
    project = _set(deps, _project(), api_url=URL, token=TOKEN)
    change = apply_clinical_patch(project, ClinicalDataPatch(api_url="https://REDCAP.example.org/api/"), deps, now=NOW)
    assert change.project == project and not change.secret_written
    assert [op for op, _ in secrets.log] == ["put"]


@pytest.mark.parametrize(("body", "reason"), [
    ({"token": TOKEN}, "api_url: required for a new clinical source"),
    ({"api_url": URL}, "a new clinical source needs the project's REDCap API token"),
    ({"api_url": URL, "token": "not-a-token"}, "32 hexadecimal characters"),
    ({"api_url": "https://redcap.example.org/redcap/", "token": TOKEN}, "ends with /api/"),
    ({"api_url": "https://redcap.example.org/api/?x=1", "token": TOKEN}, "ends with /api/"),
])
def test_incomplete_or_malformed_bodies_are_refused_and_store_nothing(
    deps: ClinicalSourceDeps, secrets: InMemorySecrets, body: dict[str, object], reason: str,
) -> None:
    with pytest.raises(InvalidInput, match=reason) as refused:
        _set(deps, _project(), **body)
    assert TOKEN not in refused.value.reason and "not-a-token" not in refused.value.reason
    assert secrets.log == []


@pytest.mark.parametrize(("url", "rule"), [
    ("https://169.254.169.254/api/", "metadata"), ("http://redcap.example.org/api/", "scheme"),
    ("https://good.example@evil.example/api/", "userinfo"), ("https://2852039166/api/", "ipv4_spelling"),
    ("https://rebind.example/api/", "metadata"), ("https://10.0.0.5/api/", "private"),
])
def test_urls_the_egress_policy_refuses_are_422_and_store_nothing(
    deps: ClinicalSourceDeps, secrets: InMemorySecrets, url: str, rule: str,
) -> None:
    with pytest.raises(EgressRefused) as refused:
        _set(deps, _project(), api_url=url, token=TOKEN)
    assert refused.value.rule == rule and refused.value.reason.startswith("clinical_data.api_url: ")
    assert secrets.log == []


def test_a_legacy_project_must_set_its_token_again(deps: ClinicalSourceDeps) -> None:
    legacy = _project(ClinicalDataSource(source="redcap", api_url=URL, token_secret="agent-memory/redcap/demo-iit"))
    with pytest.raises(InvalidInput, match="must be set again"):
        _set(deps, legacy, api_url=URL)
    updated = _set(deps, legacy, token=TOKEN)
    assert updated.clinical_data is not None
    assert (updated.clinical_data.token_secret, updated.clinical_data.token_set) == (None, True)


def test_null_removes_the_source_and_schedules_the_token_deletion(
    deps: ClinicalSourceDeps, secrets: InMemorySecrets,
) -> None:
    project = _set(deps, _project(), api_url=URL, token=TOKEN)
    removed = apply_clinical_patch(project, None, deps, now=NOW)
    assert removed.project.clinical_data is None and removed.secret_deleted
    assert secrets.current(SECRET) is None
    again = apply_clinical_patch(removed.project, None, deps, now=NOW)  # a retry changes nothing more
    assert again.project == removed.project and not again.secret_deleted


def test_a_failed_secret_write_leaves_the_record_to_the_caller_unchanged(
    deps: ClinicalSourceDeps, secrets: InMemorySecrets,
) -> None:
    secrets.fail_puts = True
    with pytest.raises(ExternalServiceError):
        _set(deps, _project(), api_url=URL, token=TOKEN)
    assert secrets.values == {}


def test_other_keys_are_a_validation_error() -> None:
    with pytest.raises(ValidationError):
        ClinicalDataPatch.model_validate({"api_url": URL, "token": TOKEN, "secret_arn": "x"})


def test_the_names_stay_per_project(deps: ClinicalSourceDeps, secrets: InMemorySecrets) -> None:
    _set(deps, _project(project_id="team-a"), api_url=URL, token=TOKEN)
    _set(deps, _project(project_id="team-b"), api_url=URL, token=NEW_TOKEN)
    assert json.loads(secrets.current("agent-memory/redcap/team-a") or "")["token"] == TOKEN
    assert json.loads(secrets.current("agent-memory/redcap/team-b") or "")["token"] == NEW_TOKEN
