"""The template's grants on the service-owned project secrets and the egress parameters
(docs/architecture.md, "Project secrets" and "Egress policy").

- only the admin function writes project secrets (create, put, tag, restore), under the three
  prefixes, with no tag keys but ``project_id`` and ``purpose``, and never reads one;
- deletion (admin, and the governance function and job worker for a project's removal) keeps the
  recovery window: ``ForceDeleteWithoutRecovery`` is refused by the grant itself;
- the chat function reads REDCap tokens only, the reminder function webhook keys only;
- no function holds a ``secretsmanager`` wildcard action or a secret ARN outside its prefixes;
- the default prefixes cannot cover each other or the Anthropic key's secret, and every function
  gets the egress allow-list.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.secrets import SecretNaming
from infra.template_model import load_template, parameter_defaults
from tests.infra.test_template import _as_list, _conditional_statements

PREFIXES = ("ClinicalTokenSecretPrefix", "ReminderWebhookSecretPrefix", "ChannelSecretPrefix")
WRITE = {"secretsmanager:CreateSecret", "secretsmanager:PutSecretValue", "secretsmanager:DescribeSecret",
         "secretsmanager:RestoreSecret", "secretsmanager:TagResource"}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module")
def functions(template: dict[str, Any]) -> dict[str, Any]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}


def _secret_grants(function: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for _, s in _conditional_statements(function)
            if any(str(a).startswith("secretsmanager:") for a in _as_list(s["Action"]))]


def _arn(prefix_parameter: str) -> dict[str, str]:
    return {"Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}"
                       f":secret:${{{prefix_parameter}}}*"}


def _actions(grants: list[dict[str, Any]]) -> set[str]:
    return {a for s in grants for a in _as_list(s["Action"])}


def test_only_the_admin_function_writes_project_secrets_under_their_prefixes(functions: dict[str, Any]) -> None:
    # Given every function's secretsmanager grants,
    for logical_id, function in functions.items():
        writes = [s for s in _secret_grants(function) if WRITE & set(_as_list(s["Action"]))]
        if logical_id != "AdminFunction":
            # Then no other function may create, put, tag or restore a secret,
            assert writes == [], logical_id
            continue
        # and the admin function may, in one statement, on the three prefixes and nothing else,
        (statement,) = writes
        assert set(_as_list(statement["Action"])) == WRITE
        assert _as_list(statement["Resource"]) == [_arn(p) for p in PREFIXES]
        # tagging with project_id and purpose only.
        assert statement["Condition"] == {"ForAllValues:StringEquals": {"aws:TagKeys": ["project_id", "purpose"]}}


def test_the_admin_function_never_reads_a_secret(functions: dict[str, Any]) -> None:
    assert "secretsmanager:GetSecretValue" not in _actions(_secret_grants(functions["AdminFunction"]))
    assert _actions(_secret_grants(functions["AdminFunction"])) == WRITE | {"secretsmanager:DeleteSecret"}


@pytest.mark.parametrize("logical_id", ["AdminFunction", "GovernanceFunction", "JobWorkerFunction"])
def test_project_secrets_are_deleted_only_with_a_recovery_window(functions: dict[str, Any], logical_id: str) -> None:
    (statement,) = [s for s in _secret_grants(functions[logical_id]) if "secretsmanager:DeleteSecret" in s["Action"]]
    assert _as_list(statement["Action"]) == ["secretsmanager:DeleteSecret"]
    assert _as_list(statement["Resource"]) == [_arn(p) for p in PREFIXES]
    # A request with ForceDeleteWithoutRecovery=true does not match the grant (absent = the window applies).
    assert statement["Condition"] == {"BoolIfExists": {"secretsmanager:ForceDeleteWithoutRecovery": "false"}}


def test_no_other_function_deletes_a_secret(functions: dict[str, Any]) -> None:
    deleters = {k for k, f in functions.items() if "secretsmanager:DeleteSecret" in _actions(_secret_grants(f))}
    assert deleters == {"AdminFunction", "GovernanceFunction", "JobWorkerFunction"}


@pytest.mark.parametrize(("logical_id", "prefix"), [("ChatFunction", "ClinicalTokenSecretPrefix"),
                                                    ("ReminderFunction", "ReminderWebhookSecretPrefix")])
def test_each_reader_reads_its_own_prefix_only(functions: dict[str, Any], logical_id: str, prefix: str) -> None:
    reads = [s for s in _secret_grants(functions[logical_id]) if "secretsmanager:GetSecretValue" in s["Action"]]
    project_reads = [s for s in reads if "AnthropicSecretName" not in json.dumps(s["Resource"])]
    (statement,) = project_reads
    assert _as_list(statement["Action"]) == ["secretsmanager:GetSecretValue"]
    assert statement["Resource"] == _arn(prefix)
    # and nothing but reads (the chat function also reads the Anthropic key, tested elsewhere)
    assert _actions(_secret_grants(functions[logical_id])) == {"secretsmanager:GetSecretValue"}


def test_no_secretsmanager_wildcard_anywhere(functions: dict[str, Any]) -> None:
    for logical_id, function in functions.items():
        for statement in _secret_grants(function):
            assert not any("*" in a for a in _as_list(statement["Action"])), logical_id
            for resource in _as_list(statement["Resource"]):
                text = json.dumps(resource)
                # every secret ARN ends with a named prefix or the Anthropic secret's own name
                assert "${AnthropicSecretName}-??????" in text or any(f"${{{p}}}*" in text for p in PREFIXES), text


def test_default_prefixes_are_disjoint_and_never_cover_the_api_key(template: dict[str, Any]) -> None:
    defaults = parameter_defaults(template)
    naming = SecretNaming(
        redcap_token_prefix=defaults["ClinicalTokenSecretPrefix"],
        reminder_webhook_prefix=defaults["ReminderWebhookSecretPrefix"],
        channel_prefix=defaults["ChannelSecretPrefix"], reserved_names=(defaults["AnthropicSecretName"],),
    )
    assert naming.redcap_token("p1").name == "agent-memory/redcap/p1"
    assert naming.reminder_webhook("p1").name == "agent-memory/reminder-webhook/p1"


def test_every_function_gets_the_egress_allow_list_and_the_secret_settings(template: dict[str, Any]) -> None:
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["EGRESS_ALLOW_PRIVATE"] == {"Ref": "EgressAllowPrivate"}
    assert variables["REMINDER_WEBHOOK_SECRET_PREFIX"] == {"Ref": "ReminderWebhookSecretPrefix"}
    assert variables["CHANNEL_SECRET_PREFIX"] == {"Ref": "ChannelSecretPrefix"}
    assert variables["SECRET_RECOVERY_WINDOW_DAYS"] == {"Ref": "SecretRecoveryWindowDays"}
    assert variables["PROJECT_SECRETS_KMS_KEY_ARN"] == {"Ref": "KmsKeyArn"}
    # The local runtime alone opens loopback: the template never sets it.
    assert "EGRESS_LOCAL_RUNTIME" not in json.dumps(template)


def test_egress_allow_list_default_is_public_only_and_its_pattern_takes_hosts_and_cidrs(
    template: dict[str, Any],
) -> None:
    parameter = template["Parameters"]["EgressAllowPrivate"]
    assert parameter["Default"] == ""
    assert EgressPolicy.parse(parameter["Default"]) == EgressPolicy()
    pattern = re.compile(parameter["AllowedPattern"])
    assert pattern.match("redcap.hospital.local, 10.20.0.0/16,fd12:3456::/48")
    assert not pattern.match("10.0.0.0/8;rm -rf")
    assert template["Parameters"]["SecretRecoveryWindowDays"]["MinValue"] == 7
