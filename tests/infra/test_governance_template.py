"""Data governance in the template: the customer's own key (``KmsKeyArn``), retention, the security scan.

The key is checked for both settings by resolving the template's ``Fn::If`` over ``HasKmsKey`` (as
CloudFormation does for the given parameter): with a key every table, queue, the topic, every log
group and every function environment use it and each role may use that key only; without one
nothing names a key. checkov runs from its own venv (``make checkov-venv``: it pins packaging<24,
which the SAM CLI's venv and the main venv cannot share).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from infra.template_model import FUNCTION_TYPE, REPO_ROOT, load_template, resources_of_type

KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
TABLES = ["FlowLogTable", "MemoryTable", "SessionsTable", "IdempotencyTable"]
QUEUES = ["JobQueue", "JobDLQ", "ScheduleDLQ"]
NO_VALUE = object()


def _resolve(value: Any, has_key: bool) -> Any:
    """The template with ``HasKmsKey`` decided: ``Fn::If`` picked, ``AWS::NoValue`` dropped,
    ``Ref KmsKeyArn`` replaced by the parameter's value. Other conditions stay as they are."""
    if isinstance(value, dict):
        if set(value) == {"Fn::If"} and value["Fn::If"][0] == "HasKmsKey":
            return _resolve(value["Fn::If"][1] if has_key else value["Fn::If"][2], has_key)
        if value == {"Ref": "AWS::NoValue"}:
            return NO_VALUE
        if value == {"Ref": "KmsKeyArn"}:
            return KEY_ARN if has_key else ""
        out = {k: _resolve(v, has_key) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not NO_VALUE}
    if isinstance(value, list):
        return [v for v in (_resolve(item, has_key) for item in value) if v is not NO_VALUE]
    return value


@pytest.fixture(scope="module", params=[True, False], ids=["with-key", "without-key"])
def deployed(request: pytest.FixtureRequest) -> tuple[bool, dict[str, Any]]:
    return request.param, _resolve(load_template(), request.param)


def _statements(function: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for policy in function["Properties"].get("Policies", []) for s in policy.get("Statement", [])]


def test_key_parameter_defaults_to_empty_and_accepts_only_key_arns() -> None:
    import re

    parameter = load_template()["Parameters"]["KmsKeyArn"]
    assert parameter["Default"] == ""
    pattern = re.compile(parameter["AllowedPattern"])
    assert pattern.fullmatch("") and pattern.fullmatch(KEY_ARN)
    assert not pattern.fullmatch("alias/aws/dynamodb")
    assert not pattern.fullmatch("arn:aws:kms:eu-west-1:123456789012:alias/mine")


def test_tables_use_the_customer_key_only_when_set(deployed: tuple[bool, dict[str, Any]]) -> None:
    has_key, template = deployed
    for table in TABLES:
        sse = template["Resources"][table]["Properties"]["SSESpecification"]
        assert sse["SSEEnabled"] is True and sse["SSEType"] == "KMS"
        assert sse.get("KMSMasterKeyId") == (KEY_ARN if has_key else None), table


def test_queues_use_the_customer_key_or_sqs_managed_keys(deployed: tuple[bool, dict[str, Any]]) -> None:
    has_key, template = deployed
    for queue in QUEUES:
        props = template["Resources"][queue]["Properties"]
        if has_key:
            assert props["KmsMasterKeyId"] == KEY_ARN and "SqsManagedSseEnabled" not in props, queue
        else:
            assert props["SqsManagedSseEnabled"] is True and "KmsMasterKeyId" not in props, queue


def test_topic_and_log_groups_use_the_customer_key_only_when_set(deployed: tuple[bool, dict[str, Any]]) -> None:
    has_key, template = deployed
    resources = template["Resources"]
    assert resources["AdminAlertsTopic"]["Properties"].get("KmsMasterKeyId") == (KEY_ARN if has_key else None)
    log_groups = resources_of_type(template, "AWS::Logs::LogGroup")
    assert len(log_groups) >= 7
    for logical_id, group in log_groups.items():
        assert group["Properties"].get("KmsKeyId") == (KEY_ARN if has_key else None), logical_id


def test_function_environments_use_the_customer_key_only_when_set(deployed: tuple[bool, dict[str, Any]]) -> None:
    has_key, template = deployed
    assert template["Globals"]["Function"].get("KmsKeyArn") == (KEY_ARN if has_key else None)
    for logical_id, function in resources_of_type(template, FUNCTION_TYPE).items():
        assert "KmsKeyArn" not in function["Properties"], logical_id  # no function overrides the global


def test_every_role_may_use_that_key_only_and_only_to_decrypt_and_generate_data_keys(
    deployed: tuple[bool, dict[str, Any]],
) -> None:
    has_key, template = deployed
    for logical_id, function in resources_of_type(template, FUNCTION_TYPE).items():
        kms = [s for s in _statements(function) if "kms:" in json.dumps(s.get("Action", s))]
        if has_key:
            assert kms == [{"Sid": "CustomerManagedKey", "Effect": "Allow",
                            "Action": ["kms:Decrypt", "kms:GenerateDataKey"], "Resource": KEY_ARN}], logical_id
        else:
            assert kms == [], logical_id


def test_sessions_expire_through_ttl_on_expires_at_set_from_a_parameter() -> None:
    template = load_template()
    ttl = template["Resources"]["SessionsTable"]["Properties"]["TimeToLiveSpecification"]
    assert ttl == {"AttributeName": "expires_at", "Enabled": True}
    assert template["Parameters"]["SessionRetentionDays"]["Default"] == 0
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env["SESSION_RETENTION_DAYS"] == {"Ref": "SessionRetentionDays"}
    assert template["Parameters"]["FlowLogRetentionDays"]["Default"] == 0


def test_reserved_concurrency_is_a_parameter_of_every_function() -> None:
    template = load_template()
    for logical_id, function in resources_of_type(template, FUNCTION_TYPE).items():
        reserved = function["Properties"]["ReservedConcurrentExecutions"]
        (condition, value, otherwise) = reserved["Fn::If"]
        assert value["Ref"] in template["Parameters"], logical_id
        assert otherwise == {"Ref": "AWS::NoValue"}  # 0 = no reservation (0 reserved would stop the function)
        assert template["Conditions"][condition] == {"Fn::Not": [{"Fn::Equals": [value, 0]}]}


def _checkov() -> Path:
    """checkov: $CHECKOV (set by the Makefile) or .venv-checkov/bin/checkov. Missing -> FAIL."""
    configured = os.environ.get("CHECKOV")
    candidates = [Path(configured)] if configured else []
    candidates.append(REPO_ROOT / ".venv-checkov" / "bin" / "checkov")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("checkov not found; run `make checkov-venv` (installs it into .venv-checkov) or set CHECKOV.")


@pytest.mark.slow
def test_checkov_finds_no_failed_check_and_every_skip_names_its_reason() -> None:
    # Given the template, when checkov scans it offline (no guideline download),
    env = {**os.environ, "BC_SKIP_MAPPING": "TRUE", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2": "false"}
    done = subprocess.run(
        [str(_checkov()), "-f", "template.yaml", "--framework", "cloudformation", "--compact", "--skip-download",
         "-o", "json"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    report = json.loads(done.stdout)
    # then nothing fails, checks did run, and every skipped check carries its one-line reason.
    failed = [(c["check_id"], c["resource"]) for c in report["results"]["failed_checks"]]
    assert report["summary"]["failed"] == 0, failed
    assert report["summary"]["passed"] >= 40 and report["summary"]["parsing_errors"] == 0
    skipped = report["results"]["skipped_checks"]
    assert skipped, "the template declares its non-applicable checks"
    for check in skipped:
        comment = check["check_result"].get("suppress_comment") or ""
        assert len(comment) > 20 and "\n" not in comment, (check["check_id"], check["resource"])
