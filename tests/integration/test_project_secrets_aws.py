"""The project secrets in Secrets Manager (agent_memory/adapters/secrets.py on moto; docs/
architecture.md, "Project secrets"): created tagged and encrypted with the stack's key, a new value
on the next put, deleted with a recovery window and restored by a later put; reads distinguish a
secret that is not set from one that cannot be read; the clinical-source use case end to end."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from pydantic import SecretStr

from agent_memory.adapters.secrets import SecretsManagerProjectSecrets
from agent_memory.domain.errors import ExternalServiceError, SecretNotSet, SecretUnreadable
from agent_memory.domain.secrets import SecretNaming
from tests.fakes import FakeResolver

REGION = "eu-west-1"
NAMING = SecretNaming()
TOKEN = "0123456789ABCDEF0123456789ABCDEF"


@pytest.fixture
def sm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from moto import mock_aws

    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield boto3.client("secretsmanager", region_name=REGION)


@pytest.fixture
def key_arn(sm: Any) -> str:
    return str(boto3.client("kms", region_name=REGION).create_key()["KeyMetadata"]["Arn"])


def test_a_put_creates_the_secret_tagged_and_encrypted_with_the_stacks_key(sm: Any, key_arn: str) -> None:
    store = SecretsManagerProjectSecrets(sm, kms_key_id=key_arn, max_age_s=0)
    ref = NAMING.redcap_token("p1")
    store.put(ref, SecretStr(TOKEN))
    described = sm.describe_secret(SecretId="agent-memory/redcap/p1")
    assert described["KmsKeyId"] == key_arn
    assert {t["Key"]: t["Value"] for t in described["Tags"]} == {"project_id": "p1", "purpose": "redcap_token"}
    assert store.read(ref).get_secret_value() == TOKEN


def test_a_second_put_stores_a_new_current_value_and_a_retry_changes_nothing_more(sm: Any) -> None:
    store = SecretsManagerProjectSecrets(sm, max_age_s=0)
    ref = NAMING.reminder_webhook("p1")
    store.put(ref, SecretStr("first"))
    store.put(ref, SecretStr("second"))
    store.put(ref, SecretStr("second"))  # the retry of the same PATCH
    assert sm.get_secret_value(SecretId=ref.name)["SecretString"] == "second"
    assert store.read(ref, fresh=True).get_secret_value() == "second"


def test_a_put_tags_a_secret_made_before_the_tags(sm: Any) -> None:
    sm.create_secret(Name="agent-memory/channel/p1/wecom", SecretString="{}")
    store = SecretsManagerProjectSecrets(sm)
    store.put(NAMING.channel("p1", "wecom"), SecretStr(json.dumps({"corp_id": "ww1"})))
    tags = {t["Key"]: t["Value"] for t in sm.describe_secret(SecretId="agent-memory/channel/p1/wecom")["Tags"]}
    assert tags == {"project_id": "p1", "purpose": "channel"}


def test_delete_keeps_a_recovery_window_and_a_later_put_restores(sm: Any) -> None:
    store = SecretsManagerProjectSecrets(sm, recovery_window_days=7, max_age_s=0)
    ref = NAMING.redcap_token("p1")
    store.put(ref, SecretStr(TOKEN))
    assert store.delete(ref) is True
    assert "DeletedDate" in sm.describe_secret(SecretId=ref.name)  # scheduled, restorable
    assert store.delete(ref) is False  # the retry of a removal
    with pytest.raises(SecretNotSet, match="is not set"):
        store.read(ref, fresh=True)
    store.put(ref, SecretStr("F" * 32))
    assert "DeletedDate" not in sm.describe_secret(SecretId=ref.name)
    assert store.read(ref, fresh=True).get_secret_value() == "F" * 32


def test_deleting_a_secret_that_never_existed_is_false(sm: Any) -> None:
    assert SecretsManagerProjectSecrets(sm).delete(NAMING.redcap_token("nobody")) is False


def test_a_missing_secret_is_not_set(sm: Any) -> None:
    with pytest.raises(SecretNotSet):
        SecretsManagerProjectSecrets(sm).read(NAMING.redcap_token("p1"))


def test_a_binary_secret_is_unreadable(sm: Any) -> None:
    sm.create_secret(Name="agent-memory/redcap/p1", SecretBinary=b"\x00\x01")
    with pytest.raises(SecretUnreadable):
        SecretsManagerProjectSecrets(sm).read(NAMING.redcap_token("p1"))


@pytest.mark.parametrize(("code", "error", "retryable"), [
    ("AccessDeniedException", SecretUnreadable, None),
    ("DecryptionFailure", SecretUnreadable, None),
    ("ThrottlingException", ExternalServiceError, True),
    ("InternalServiceError", ExternalServiceError, True),
    ("InvalidParameterException", ExternalServiceError, False),
])
def test_read_errors_are_typed_and_never_quote_the_sdk(
    code: str, error: type[Exception], retryable: bool | None,
) -> None:
    client = boto3.client("secretsmanager", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        stub.add_client_error("get_secret_value", service_error_code=code, service_message="secret text? no")
        with pytest.raises(error) as caught:
            SecretsManagerProjectSecrets(client).read(NAMING.redcap_token("p1"))
    assert "secret text" not in str(caught.value)
    if retryable is not None:
        assert isinstance(caught.value, ExternalServiceError) and caught.value.retryable is retryable


def test_a_put_failure_is_an_external_service_error(sm: Any) -> None:
    client = boto3.client("secretsmanager", region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        stub.add_client_error("create_secret", service_error_code="LimitExceededException")
        with pytest.raises(ExternalServiceError) as caught:
            SecretsManagerProjectSecrets(client).put(NAMING.redcap_token("p1"), SecretStr(TOKEN))
    assert caught.value.retryable and TOKEN not in str(caught.value)


def test_the_recovery_window_is_secrets_managers_range() -> None:
    with pytest.raises(ValueError, match="7 to 30"):
        SecretsManagerProjectSecrets(recovery_window_days=0)


def test_the_clinical_source_patch_end_to_end_on_secrets_manager(sm: Any) -> None:
    from agent_memory.adapters.clinical.redcap import RedcapSources
    from agent_memory.domain.egress import EgressPolicy
    from agent_memory.domain.models import Project
    from agent_memory.projects.clinical_source import ClinicalDataPatch, ClinicalSourceDeps, apply_clinical_patch

    store = SecretsManagerProjectSecrets(sm, max_age_s=300)
    resolver = FakeResolver({"redcap.example.org": [["93.184.216.34"]]})
    deps = ClinicalSourceDeps(policy=EgressPolicy(), resolver=resolver, secrets=store, naming=NAMING)
    project = Project(project_id="p1", name="P", created_at=datetime(2026, 1, 1, tzinfo=UTC))
    change = apply_clinical_patch(project, ClinicalDataPatch(api_url="https://redcap.example.org/api/",
                                                             token=SecretStr(TOKEN)), deps, now=datetime.now(UTC))
    assert change.project.clinical_data is not None and change.project.clinical_data.token_set
    stored = json.loads(sm.get_secret_value(SecretId="agent-memory/redcap/p1")["SecretString"])
    assert stored == {"token": TOKEN, "api_url": "https://redcap.example.org/api/"}
    # the chat's adapter reads it (cached) for that URL only
    records = RedcapSources(secrets=store, naming=NAMING).open(change.project.clinical_data, deadline=None,
                                                               project_id="p1")
    assert records._project._token == TOKEN  # noqa: SLF001 - what PyCap would send
