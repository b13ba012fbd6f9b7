"""Infrastructure checks: template.yaml lints clean and has the properties the service relies on.

Everything reads the template through ``infra.template_model`` (the one reader). Linting runs
the real tools: cfn-lint from this venv and ``sam validate --lint`` from the SAM CLI venv
(``make sam-venv``). No AWS credentials are needed or used: dummy ``AWS_*`` values are set.

Note on linting depth: cfn-lint 1.x validates a SAM template against SAM schemas *without*
running the SAM transform, so rules written for ``AWS::Lambda::Function`` / ``AWS::IAM::Role``
(e.g. E2530 "SnapStart supports the configured runtime") do not see SAM functions. We therefore
also translate the template with the SAM translator (from the SAM CLI venv) and lint the result.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from infra.template_model import (
    DEFAULT_TEMPLATE_PATH,
    FUNCTION_TYPE,
    REPO_ROOT,
    TABLE_TYPE,
    CloudFormationLoader,
    FunctionSpec,
    RouteSpec,
    UnresolvableValue,
    create_tables,
    function_specs,
    load_template,
    parameter_defaults,
    resources_of_type,
    table_specs,
)

REGION = "eu-west-1"
LINT_REGIONS = ["eu-west-1", "us-east-1"]
TABLES = ["FlowLogTable", "MemoryTable", "SessionsTable", "IdempotencyTable"]

# Actions that read table data (item reads, streams, PartiQL reads, exports/restores of the data).
DYNAMODB_READ_ACTIONS = [
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:PartiQLSelect",
    "dynamodb:ExportTableToPointInTime",
    "dynamodb:RestoreTableToPointInTime",
]
# What SAM attaches by itself to a function role (Tracing: Active adds the X-Ray one). Neither grants DynamoDB.
SAM_MANAGED_POLICIES = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
}
# An example of what the deployed flow-log table ARN looks like (used to test wildcard resources).
EXAMPLE_FLOW_LOG_ARN = f"arn:aws:dynamodb:{REGION}:123456789012:table/agent-memory-dev-FlowLogTable-1A2B3C4D"

# Runs in the SAM CLI venv: translate the SAM template to plain CloudFormation, print JSON.
# Local CodeUri/ContentUri are swapped for placeholder S3 URIs (what `sam package` would do);
# the managed-policy loader is a stub because every policy here is an inline statement.
TRANSLATE_SCRIPT = r"""
import json, sys
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

class NoManagedPolicyLookup:
    def load(self):
        return {}

with open(sys.argv[1], encoding="utf-8") as handle:
    template = yaml_parse(handle.read())
for resource in template["Resources"].values():
    props = resource.get("Properties") or {}
    for key in ("CodeUri", "ContentUri"):
        if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
            props[key] = "s3://placeholder-bucket/" + props[key]
json.dump(transform(template, {}, NoManagedPolicyLookup()), sys.stdout, default=str)
"""


# ------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(autouse=True)
def dummy_aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Never touch a real account: dummy credentials, fixed region, no telemetry."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("SAM_CLI_TELEMETRY", "0")


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module")
def resources(template: dict[str, Any]) -> dict[str, Any]:
    return template["Resources"]


@pytest.fixture(scope="module")
def local_table_names() -> dict[str, str]:
    return {logical_id: f"test-{logical_id}" for logical_id in TABLES}


@pytest.fixture(scope="module")
def functions(template: dict[str, Any], local_table_names: dict[str, str]) -> dict[str, FunctionSpec]:
    return {spec.logical_id: spec for spec in function_specs(template, local_table_names)}


def _sam_cli() -> Path:
    """The SAM CLI: $SAM_CLI (set by the Makefile) or .venv-sam/bin/sam. Missing -> FAIL, never skip."""
    configured = os.environ.get("SAM_CLI")
    candidates = [Path(configured)] if configured else []
    candidates.append(REPO_ROOT / ".venv-sam" / "bin" / "sam")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(
        f"AWS SAM CLI not found (looked at {', '.join(str(c) for c in candidates)}). "
        "Run `make sam-venv` to install it into .venv-sam (or set SAM_CLI)."
    )


@pytest.fixture(scope="module")
def translated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """template.yaml translated to plain CloudFormation by the SAM translator, as a JSON file."""
    sam_python = _sam_cli().parent / "python"
    if not sam_python.is_file():
        pytest.fail(f"No Python beside the SAM CLI at {sam_python}; run `make sam-venv`.")
    env = {**os.environ, "AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_EC2_METADATA_DISABLED": "true"}
    result = subprocess.run(
        [str(sam_python), "-c", TRANSLATE_SCRIPT, str(DEFAULT_TEMPLATE_PATH)],
        capture_output=True, text=True, timeout=180, env=env, cwd=REPO_ROOT, check=False,
    )
    assert result.returncode == 0, f"SAM translation failed:\n{result.stderr}"
    out = tmp_path_factory.mktemp("sam") / "translated.json"
    out.write_text(result.stdout, encoding="utf-8")
    return out


def _run_cfn_lint(path: Path) -> subprocess.CompletedProcess[str]:
    """cfn-lint from this venv (1.58 has no ``__main__``, so call its console entry point), info level on."""
    entry = "import sys; from cfnlint.runner import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", entry, "--include-checks", "I", "--regions", *LINT_REGIONS, "--", str(path)],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, check=False,
    )


# ------------------------------------------------------------------------------------- policy helpers


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _unconditional(statement: Any) -> list[tuple[str | None, dict[str, Any]]]:
    """A statement, or the statement branches of ``Fn::If [condition, a, b]`` (``AWS::NoValue`` dropped),
    each with the condition under which it is granted (``!condition`` for the false branch)."""
    if isinstance(statement, dict) and set(statement) == {"Fn::If"}:
        condition, when_true, when_false = statement["Fn::If"]
        branches = [(condition, when_true), (f"!{condition}", when_false)]
        return [(c, b) for c, b in branches if isinstance(b, dict) and b != {"Ref": "AWS::NoValue"}]
    return [(None, statement)]


def _conditional_statements(function: dict[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """Every inline statement with the template condition it depends on (None: always granted)."""
    found: list[tuple[str | None, dict[str, Any]]] = []
    for policy in _as_list(function["Properties"].get("Policies") or []):
        if isinstance(policy, dict) and set(policy) <= {"Version", "Statement"} and "Statement" in policy:
            for statement in _as_list(policy["Statement"]):
                found.extend(_unconditional(statement))
    return found


def _policy_statements(function: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """(inline statements, anything else under Policies: managed names / SAM policy templates).

    A statement granted under a condition (``Fn::If``) counts as granted: every check holds for
    every provider."""
    statements = [statement for _, statement in _conditional_statements(function)]
    other = [
        policy
        for policy in _as_list(function["Properties"].get("Policies") or [])
        if not (isinstance(policy, dict) and set(policy) <= {"Version", "Statement"} and "Statement" in policy)
    ]
    return statements, other


def _resource_covers_flow_log(resource: Any) -> bool:
    """True if a policy Resource names the flow-log table or a wildcard that would match it."""
    if "FlowLogTable" in json.dumps(resource):
        return True
    strings: list[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, list):
            for item in value:
                collect(item)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)

    collect(resource)
    return any(s == "*" or ("*" in s and fnmatch.fnmatchcase(EXAMPLE_FLOW_LOG_ARN, s)) or
               ("dynamodb" in s and "table/*" in s) for s in strings)


def _action_allows(pattern: str, action: str) -> bool:
    return fnmatch.fnmatchcase(action.lower(), pattern.lower())


def _flow_log_read_violations(statements: list[dict[str, Any]]) -> list[str]:
    """Every way the statements could let the holder read the flow log."""
    violations: list[str] = []
    for statement in statements:
        if statement.get("Effect") != "Allow":
            continue
        if "NotAction" in statement or "NotResource" in statement:
            violations.append(f"unbounded NotAction/NotResource statement: {statement}")
            continue
        resources = _as_list(statement.get("Resource", []))
        if not any(_resource_covers_flow_log(resource) for resource in resources):
            continue
        for pattern in _as_list(statement.get("Action", [])):
            for action in DYNAMODB_READ_ACTIONS:
                if _action_allows(pattern, action):
                    violations.append(f"{pattern} allows {action} on {resources}")
    return violations


def _statements_referencing_flow_log(statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in statements if any(_resource_covers_flow_log(r) for r in _as_list(s.get("Resource", [])))]


def _template_block(logical_id: str) -> str:
    """The raw text of one resource in template.yaml (to check the key comments)."""
    text = DEFAULT_TEMPLATE_PATH.read_text(encoding="utf-8")
    match = re.search(rf"^  {logical_id}:\n(.*?)(?=^  \S|^\S|\Z)", text, flags=re.MULTILINE | re.DOTALL)
    assert match, f"{logical_id} not found in template.yaml"
    return match.group(1)


def _key_names(key_schema: list[dict[str, str]]) -> tuple[str | None, str | None]:
    hash_key = next((k["AttributeName"] for k in key_schema if k["KeyType"] == "HASH"), None)
    range_key = next((k["AttributeName"] for k in key_schema if k["KeyType"] == "RANGE"), None)
    return hash_key, range_key


# ------------------------------------------------------------------------------------------ linting


@pytest.mark.slow
def test_cfn_lint_reports_nothing_for_the_template() -> None:
    # Given template.yaml, When cfn-lint runs (errors, warnings and informational checks),
    result = _run_cfn_lint(DEFAULT_TEMPLATE_PATH)
    # Then it reports nothing at all (no warning exceptions are needed).
    assert result.returncode == 0, f"cfn-lint findings:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip() == ""


@pytest.mark.slow
def test_sam_validate_lint_passes() -> None:
    # Given the SAM CLI from .venv-sam, When `sam validate --lint` runs,
    sam = _sam_cli()
    result = subprocess.run(
        [str(sam), "validate", "--lint", "--region", REGION, "--template-file", str(DEFAULT_TEMPLATE_PATH)],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, env=dict(os.environ), check=False,
    )
    # Then the template is valid.
    assert result.returncode == 0, f"sam validate failed:\n{result.stdout}\n{result.stderr}"
    assert "is a valid SAM Template" in result.stdout + result.stderr


@pytest.mark.slow
def test_sam_translated_template_passes_cfn_lint(translated_template: Path) -> None:
    # Given the template after the SAM transform (plain Lambda / IAM / API Gateway resources),
    # When cfn-lint runs on it (this is where E2530 checks SnapStart against the runtime),
    result = _run_cfn_lint(translated_template)
    # Then it reports nothing.
    assert result.returncode == 0, f"cfn-lint findings on the translated template:\n{result.stdout}"


@pytest.mark.slow
def test_sam_translated_chat_role_cannot_read_the_flow_log(translated_template: Path) -> None:
    # Given the IAM role SAM generates for ChatFunction,
    role = json.loads(translated_template.read_text(encoding="utf-8"))["Resources"]["ChatFunctionRole"]
    statements = [
        statement
        for policy in role["Properties"].get("Policies", [])
        for statement in _as_list(policy["PolicyDocument"]["Statement"])
    ]
    # Then its inline policies grant no read on the flow log, and the only managed policies are SAM's
    # logging / X-Ray ones (which grant no DynamoDB access).
    assert _flow_log_read_violations(statements) == []
    assert set(role["Properties"].get("ManagedPolicyArns", [])) <= SAM_MANAGED_POLICIES


# --------------------------------------------------------------------------------------------- tables


def test_template_declares_exactly_the_four_tables(resources: dict[str, Any]) -> None:
    tables = [logical_id for logical_id, r in resources.items() if r["Type"] == TABLE_TYPE]
    assert sorted(tables) == sorted(TABLES)


@pytest.mark.parametrize("table", TABLES)
def test_table_has_point_in_time_recovery(resources: dict[str, Any], table: str) -> None:
    props = resources[table]["Properties"]
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True


@pytest.mark.parametrize("table", TABLES)
def test_table_is_encrypted_with_kms(resources: dict[str, Any], table: str) -> None:
    sse = resources[table]["Properties"]["SSESpecification"]
    assert sse["SSEEnabled"] is True
    assert sse["SSEType"] == "KMS"


@pytest.mark.parametrize("table", TABLES)
def test_table_deletion_protection_is_on_only_in_prod(template: dict[str, Any], table: str) -> None:
    props = template["Resources"][table]["Properties"]
    assert props["DeletionProtectionEnabled"] == {"Fn::If": ["IsProd", True, False]}
    assert template["Conditions"]["IsProd"] == {"Fn::Equals": [{"Ref": "Stage"}, "prod"]}
    assert template["Parameters"]["Stage"]["AllowedValues"] == ["dev", "prod"]


@pytest.mark.parametrize("table", TABLES)
def test_table_is_on_demand_and_unnamed(resources: dict[str, Any], table: str) -> None:
    props = resources[table]["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert "TableName" not in props  # names come from !Ref, so stacks (dev, prod) never collide


@pytest.mark.parametrize("table", TABLES)
def test_table_replacement_never_destroys_data(resources: dict[str, Any], table: str) -> None:
    assert resources[table]["UpdateReplacePolicy"] == "Retain"


def test_flow_log_items_expire_through_ttl_on_expires_at(resources: dict[str, Any]) -> None:
    ttl = resources["FlowLogTable"]["Properties"]["TimeToLiveSpecification"]
    assert ttl == {"AttributeName": "expires_at", "Enabled": True}


def test_idempotency_table_matches_powertools_defaults(resources: dict[str, Any]) -> None:
    props = resources["IdempotencyTable"]["Properties"]
    assert _key_names(props["KeySchema"]) == ("id", None)
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expiration", "Enabled": True}


def test_b08_every_key_carries_the_project(resources: dict[str, Any]) -> None:
    # Given the tables' base keys and GSIs,
    def keys(table: str) -> tuple[str | None, str | None]:
        return _key_names(resources[table]["Properties"]["KeySchema"])

    def index_keys(table: str, index: str) -> tuple[str | None, str | None]:
        gsis = {g["IndexName"]: g for g in resources[table]["Properties"]["GlobalSecondaryIndexes"]}
        return _key_names(gsis[index]["KeySchema"])

    # Then every project-data partition key is the project-scoped pk / patient_pk / project_pk,
    assert keys("FlowLogTable") == ("pk", "sk")
    assert keys("MemoryTable") == ("pk", "sk")
    assert keys("SessionsTable") == ("pk", "sk")
    assert index_keys("SessionsTable", "PatientIndex") == ("patient_pk", "patient_sk")
    assert index_keys("SessionsTable", "ProjectSessionsIndex") == ("project_pk", "project_sk")
    # the activity index is partitioned by day (the jobs' cross-project lookup) and sorted by project,
    assert index_keys("MemoryTable", "ActivityIndex") == ("activity_pk", "activity_sk")
    # and the template documents each of those keys as starting with / being the project id.
    documented = {
        "FlowLogTable": ["pk"],
        "MemoryTable": ["pk", "activity_sk"],
        "SessionsTable": ["pk", "patient_pk", "project_pk"],
    }
    for table, attributes in documented.items():
        block = _template_block(table)
        for attribute in attributes:
            assert re.search(rf"AttributeName: {attribute}\s+#\s*\{{?project_id\b", block), (
                f"{table}.{attribute} is not documented as starting with the project id"
            )
    # (IdempotencyTable is exempt: Powertools owns its `id`, a hash of function name + payload.)


def test_activity_index_is_keys_only_and_the_member_index_holds_the_memberships(resources: dict[str, Any]) -> None:
    gsis = resources["MemoryTable"]["Properties"]["GlobalSecondaryIndexes"]
    assert [(g["IndexName"], g["Projection"]["ProjectionType"]) for g in gsis] == [
        ("ActivityIndex", "KEYS_ONLY"), ("MemberIndex", "ALL"),
    ]


def test_session_indexes_project_all_attributes(resources: dict[str, Any]) -> None:
    gsis = resources["SessionsTable"]["Properties"]["GlobalSecondaryIndexes"]
    assert {g["IndexName"]: g["Projection"]["ProjectionType"] for g in gsis} == {
        "PatientIndex": "ALL",
        "ProjectSessionsIndex": "ALL",
    }


# ------------------------------------------------------------------------------------------- policies


def test_chat_policies_are_explicit_statements_only(resources: dict[str, Any]) -> None:
    # SAM policy templates such as DynamoDBCrudPolicy bundle reads; only explicit statements are allowed.
    _, other = _policy_statements(resources["ChatFunction"])
    assert other == []


def test_chat_may_put_items_into_the_flow_log(resources: dict[str, Any]) -> None:
    statements, _ = _policy_statements(resources["ChatFunction"])
    flow_log_actions = [
        action
        for statement in _statements_referencing_flow_log(statements)
        if statement["Effect"] == "Allow"
        for action in _as_list(statement["Action"])
    ]
    assert flow_log_actions == ["dynamodb:PutItem"]


def test_chat_cannot_read_the_flow_log(resources: dict[str, Any]) -> None:
    statements, _ = _policy_statements(resources["ChatFunction"])
    assert _flow_log_read_violations(statements) == []


@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("dynamodb:GetItem", {"Fn::GetAtt": ["FlowLogTable", "Arn"]}),
        ("dynamodb:Get*", {"Fn::GetAtt": ["FlowLogTable", "Arn"]}),
        ("dynamodb:*", {"Fn::Sub": "${FlowLogTable.Arn}/index/*"}),
        ("dynamodb:Query", "*"),
        ("dynamodb:Scan", "arn:aws:dynamodb:*:*:table/*"),
        ("*", {"Fn::GetAtt": ["FlowLogTable", "StreamArn"]}),
    ],
)
def test_flow_log_read_detector_catches_grants(action: str, resource: Any) -> None:
    # The checker itself: any read (literal, prefix wildcard, full wildcard) on any resource that
    # covers the flow log is reported.
    statement = {"Effect": "Allow", "Action": [action], "Resource": resource}
    assert _flow_log_read_violations([statement]) != []


def test_chat_idempotency_access_is_what_powertools_needs(resources: dict[str, Any]) -> None:
    statements, _ = _policy_statements(resources["ChatFunction"])
    actions = {
        action
        for s in statements
        if "IdempotencyTable" in json.dumps(s.get("Resource"))
        for action in _as_list(s["Action"])
    }
    assert actions == {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}


def test_chat_reads_only_the_anthropic_secret(resources: dict[str, Any]) -> None:
    statements = _conditional_statements(resources["ChatFunction"])
    secret_statements = [
        (condition, s)
        for condition, s in statements
        if any(a.startswith("secretsmanager:") for a in _as_list(s["Action"]))
        and s.get("Sid") != "ClinicalTokenSecrets"  # the REDCap tokens: the test below
    ]
    assert len(secret_statements) == 1
    condition, statement = secret_statements[0]
    assert condition == "UsesAnthropicApi"  # only with the anthropic provider
    assert _as_list(statement["Action"]) == ["secretsmanager:GetSecretValue"]
    assert statement["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}"
        ":secret:${AnthropicSecretName}-??????"
    }


@pytest.mark.parametrize("function", ["ChatFunction", "SessionsFunction", "JobWorkerFunction"])
def test_the_firewall_functions_read_the_redcap_token_secrets_under_their_prefix_only(
    resources: dict[str, Any], function: str
) -> None:
    # the chat's tools and every function whose identifier firewall builds a project's subject index
    statements = _conditional_statements(resources[function])
    (statement,) = [s for _, s in statements if s.get("Sid") == "ClinicalTokenSecrets"]
    assert _as_list(statement["Action"]) == ["secretsmanager:GetSecretValue"]
    assert statement["Resource"] == {
        "Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}"
        ":secret:${ClinicalTokenSecretPrefix}*"
    }


def test_chat_has_no_wildcard_actions_or_resources(resources: dict[str, Any]) -> None:
    statements, _ = _policy_statements(resources["ChatFunction"])
    for statement in statements:
        assert not any("*" in action for action in _as_list(statement["Action"])), statement
        assert statement.get("Resource") != "*", statement


def test_api_function_has_no_flow_log_access(resources: dict[str, Any]) -> None:
    statements, other = _policy_statements(resources["ApiFunction"])
    assert other == []
    assert _statements_referencing_flow_log(statements) == []


def test_api_function_is_read_only_without_secrets(resources: dict[str, Any]) -> None:
    statements, _ = _policy_statements(resources["ApiFunction"])
    actions = {action for s in statements for action in _as_list(s["Action"])}
    actions -= {"kms:Decrypt", "kms:GenerateDataKey"}  # on KmsKeyArn only, when set (test_governance_template.py)
    assert actions == {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}


# ------------------------------------------------------------------------------ runtime, functions, API


def test_globals_pin_python313_on_arm64(template: dict[str, Any]) -> None:
    function_globals = template["Globals"]["Function"]
    assert function_globals["Runtime"] == "python3.13"
    assert function_globals["Architectures"] == ["arm64"]
    assert function_globals["Tracing"] == "Active"
    assert function_globals["Layers"] == [{"Ref": "SharedLayer"}]


def test_no_function_overrides_runtime_or_architecture(resources: dict[str, Any]) -> None:
    for logical_id, resource in resources_of_type({"Resources": resources}, FUNCTION_TYPE).items():
        assert "Runtime" not in resource["Properties"], logical_id
        assert "Architectures" not in resource["Properties"], logical_id


def test_globals_carry_powertools_settings(template: dict[str, Any]) -> None:
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["POWERTOOLS_SERVICE_NAME"] == "agent-memory"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "AgentMemory"
    assert variables["POWERTOOLS_LOG_LEVEL"] == "INFO"


def test_shared_layer_builds_for_python313_arm64(resources: dict[str, Any]) -> None:
    layer = resources["SharedLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Properties"]["ContentUri"] == "layers/shared"
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert layer["Metadata"]["BuildMethod"] == "python3.13"
    assert (REPO_ROOT / "layers" / "shared" / "requirements.txt").is_file()


def test_chat_function_uses_snapstart_on_a_published_alias(resources: dict[str, Any]) -> None:
    props = resources["ChatFunction"]["Properties"]
    assert props["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert props["AutoPublishAlias"] == "live"


# The model-id guard (every default model id against the SDK's DEPRECATED_MODELS) and the LLM
# provider's parameters, grants and alarms are in test_llm_template.py.


def test_llm_provider_parameter_offers_anthropic_bedrock_and_offline(template: dict[str, Any]) -> None:
    parameter = template["Parameters"]["LlmProvider"]
    assert parameter["AllowedValues"] == ["anthropic", "bedrock", "offline"]
    assert parameter["Default"] == "anthropic"


@pytest.mark.parametrize(
    ("function", "method", "path", "auth"),
    [
        ("ChatFunction", "POST", "/v1/projects/{project_id}/sessions/{session_id}/messages", True),
        ("ApiFunction", "GET", "/v1/health", False),
        ("ApiFunction", "GET", "/v1/projects/{project_id}/sessions/{session_id}/messages/{message_id}/context", True),
    ],
)
def test_route_exists_with_expected_auth(
    functions: dict[str, FunctionSpec], function: str, method: str, path: str, auth: bool
) -> None:
    assert RouteSpec(method=method, path=path, auth=auth) in functions[function].routes


def test_health_route_opts_out_of_the_authorizer(resources: dict[str, Any]) -> None:
    event = resources["ApiFunction"]["Properties"]["Events"]["Health"]["Properties"]
    assert event["Auth"] == {"Authorizer": "NONE"}


def test_http_api_defaults_to_the_jwt_authorizer(resources: dict[str, Any]) -> None:
    auth = resources["HttpApi"]["Properties"]["Auth"]
    authorizer = auth["Authorizers"][auth["DefaultAuthorizer"]]
    assert authorizer["IdentitySource"] == "$request.header.Authorization"
    assert authorizer["JwtConfiguration"] == {
        "issuer": {"Ref": "JwtIssuer"},
        "audience": [{"Ref": "JwtAudience"}],
    }


def test_every_route_is_on_the_explicit_http_api(resources: dict[str, Any]) -> None:
    for logical_id, resource in resources_of_type({"Resources": resources}, FUNCTION_TYPE).items():
        for event in (resource["Properties"].get("Events") or {}).values():  # the ReminderFunction has none
            # The job functions' ScheduleV2 / SQS events are checked in test_jobs_template.py.
            assert event["Type"] in ("HttpApi", "ScheduleV2", "SQS"), logical_id
            if event["Type"] == "HttpApi":
                assert event["Properties"]["ApiId"] == {"Ref": "HttpApi"}, logical_id


def test_http_api_writes_access_logs_and_has_no_cors(resources: dict[str, Any]) -> None:
    props = resources["HttpApi"]["Properties"]
    assert props["AccessLogSettings"]["DestinationArn"] == {"Fn::GetAtt": ["HttpApiAccessLogGroup", "Arn"]}
    assert resources["HttpApiAccessLogGroup"]["Type"] == "AWS::Logs::LogGroup"
    assert "CorsConfiguration" not in props


@pytest.mark.parametrize("function", ["ChatFunction", "ApiFunction"])
def test_function_logs_to_its_own_log_group_with_retention(resources: dict[str, Any], function: str) -> None:
    log_group_ref = resources[function]["Properties"]["LoggingConfig"]["LogGroup"]
    assert log_group_ref == {"Ref": f"{function}LogGroup"}
    log_group = resources[f"{function}LogGroup"]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_globals_environment_satisfies_the_settings_model(
    monkeypatch: pytest.MonkeyPatch, functions: dict[str, FunctionSpec]
) -> None:
    # Given the environment a deployed function gets (template defaults),
    from agent_memory.config import Settings

    for name, value in functions["ChatFunction"].environment.items():
        monkeypatch.setenv(name, value)
    # When the settings model validates it, Then every required variable is there and valid.
    import os

    settings = Settings.model_validate(dict(os.environ))
    assert settings.flow_log_table == "test-FlowLogTable"
    assert settings.hot_memory_token_cap == 2000
    assert settings.project_time_zone == "Asia/Shanghai"



def test_api_function_environment_satisfies_the_store_settings(functions: dict[str, FunctionSpec]) -> None:
    # Given the environment the API function gets (it reads only the stage and the tables)
    from agent_memory.store_settings import StoreSettings

    # When the store settings validate it, Then the tables are the template's
    settings = StoreSettings.model_validate(functions["ApiFunction"].environment)
    assert (settings.flow_log_table, settings.memory_table, settings.sessions_table) == (
        "test-FlowLogTable", "test-MemoryTable", "test-SessionsTable",
    )

def test_outputs_name_the_api_tables_and_chat_alias(template: dict[str, Any]) -> None:
    outputs = template["Outputs"]
    assert {"ApiUrl", "ChatFunctionAliasArn"} <= set(outputs)
    for table in TABLES:
        assert outputs[f"{table}Name"]["Value"] == {"Ref": table}
    assert outputs["ChatFunctionAliasArn"]["Value"] == {"Ref": "ChatFunction.Alias"}


# ------------------------------------------------------------------------------------------ samconfig


def test_samconfig_lints_on_validate_and_confirms_only_prod() -> None:
    config = tomllib.loads((REPO_ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    assert config["default"]["validate"]["parameters"]["lint"] is True
    assert config["default"]["build"]["parameters"] == {"cached": True, "parallel": True}
    assert config["dev"]["deploy"]["parameters"]["confirm_changeset"] is False
    assert config["prod"]["deploy"]["parameters"]["confirm_changeset"] is True
    assert "Stage=prod" in config["prod"]["deploy"]["parameters"]["parameter_overrides"]
    assert "Stage=dev" in config["dev"]["deploy"]["parameters"]["parameter_overrides"]


# ------------------------------------------------------------------------------------- template_model


def test_loader_turns_short_tags_into_long_form() -> None:
    text = """
    a: !Ref Stage
    b: !Sub "${AWS::StackName}-x"
    c: !GetAtt FlowLogTable.Arn
    d: !If [IsProd, true, false]
    e: !Equals [!Ref Stage, prod]
    f: !Select [0, !Split [",", "x,y"]]
    g: !Join ["", [a, b]]
    h: !Condition IsProd
    """
    loaded = yaml.load(text, Loader=CloudFormationLoader)  # noqa: S506 - SafeLoader subclass
    assert loaded == {
        "a": {"Ref": "Stage"},
        "b": {"Fn::Sub": "${AWS::StackName}-x"},
        "c": {"Fn::GetAtt": ["FlowLogTable", "Arn"]},
        "d": {"Fn::If": ["IsProd", True, False]},
        "e": {"Fn::Equals": [{"Ref": "Stage"}, "prod"]},
        "f": {"Fn::Select": [0, {"Fn::Split": [",", "x,y"]}]},
        "g": {"Fn::Join": ["", ["a", "b"]]},
        "h": {"Condition": "IsProd"},
    }


def test_table_specs_returns_the_four_tables_with_keys_and_indexes(template: dict[str, Any]) -> None:
    specs = {spec.logical_id: spec for spec in table_specs(template, name_prefix="local-")}
    assert sorted(specs) == sorted(TABLES)
    assert specs["FlowLogTable"].create_kwargs["TableName"] == "local-FlowLogTable"
    assert _key_names(specs["SessionsTable"].create_kwargs["KeySchema"]) == ("pk", "sk")
    session_indexes = {g["IndexName"]: g for g in specs["SessionsTable"].create_kwargs["GlobalSecondaryIndexes"]}
    assert _key_names(session_indexes["PatientIndex"]["KeySchema"]) == ("patient_pk", "patient_sk")
    assert session_indexes["ProjectSessionsIndex"]["Projection"] == {"ProjectionType": "ALL"}
    memory_indexes = specs["MemoryTable"].create_kwargs["GlobalSecondaryIndexes"]
    assert memory_indexes[0]["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    assert "GlobalSecondaryIndexes" not in specs["FlowLogTable"].create_kwargs
    assert {k: s.ttl_attribute for k, s in specs.items()} == {
        "FlowLogTable": "expires_at",
        "MemoryTable": None,
        "SessionsTable": "expires_at",
        "IdempotencyTable": "expiration",
    }


def test_create_tables_builds_the_template_tables_in_moto(template: dict[str, Any]) -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        # When the tables are created from the template,
        names = create_tables(client, template, name_prefix="it-")
        # Then every table exists with its keys, GSIs and TTL.
        assert names == {table: f"it-{table}" for table in TABLES}
        assert sorted(client.list_tables()["TableNames"]) == sorted(names.values())
        sessions = client.describe_table(TableName="it-SessionsTable")["Table"]
        assert {g["IndexName"] for g in sessions["GlobalSecondaryIndexes"]} == {"PatientIndex", "ProjectSessionsIndex"}
        memory = client.describe_table(TableName="it-MemoryTable")["Table"]
        assert _key_names(memory["GlobalSecondaryIndexes"][0]["KeySchema"]) == ("activity_pk", "activity_sk")
        ttl = client.describe_time_to_live(TableName="it-FlowLogTable")["TimeToLiveDescription"]
        assert ttl["TimeToLiveStatus"] == "ENABLED"
        assert ttl["AttributeName"] == "expires_at"


def test_create_tables_is_idempotent(template: dict[str, Any]) -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name=REGION)
        first = create_tables(client, template)
        second = create_tables(client, template)
        assert first == second
        assert len(client.list_tables()["TableNames"]) == len(TABLES)


def test_function_specs_resolve_tables_and_parameters(functions: dict[str, FunctionSpec]) -> None:
    chat = functions["ChatFunction"]
    assert (chat.code_uri, chat.handler, chat.timeout_s, chat.memory_mb) == (
        "functions/chat", "app.lambda_handler", 60, 1024,
    )
    assert chat.environment["FLOW_LOG_TABLE"] == "test-FlowLogTable"
    assert chat.environment["IDEMPOTENCY_TABLE"] == "test-IdempotencyTable"
    assert chat.environment["CHAT_MODEL_ID"] == "claude-sonnet-5-5"
    assert chat.environment["FAST_MODEL_ID"] == "claude-haiku-5-5"
    assert chat.environment["HOT_MEMORY_TOKEN_CAP"] == "2000"
    assert chat.environment["STAGE"] == "dev"
    assert chat.environment["POWERTOOLS_SERVICE_NAME"] == "agent-memory"
    assert functions["ApiFunction"].code_uri == "functions/api"


def test_function_specs_overrides_win_by_variable_name(
    template: dict[str, Any], local_table_names: dict[str, str]
) -> None:
    specs = function_specs(template, local_table_names, overrides={"LLM_PROVIDER": "offline", "EXTRA": "1"})
    for spec in specs:
        assert spec.environment["LLM_PROVIDER"] == "offline"
        assert spec.environment["EXTRA"] == "1"


def test_function_specs_reject_values_they_cannot_resolve(local_table_names: dict[str, str]) -> None:
    broken = {
        "Resources": {
            "F": {
                "Type": FUNCTION_TYPE,
                "Properties": {
                    "CodeUri": "functions/x",
                    "Handler": "app.lambda_handler",
                    "Environment": {"Variables": {"X": {"Fn::ImportValue": "other-stack"}}},
                },
            }
        }
    }
    with pytest.raises(UnresolvableValue, match=r"F\.X"):
        function_specs(broken, local_table_names)


def test_parameter_defaults_are_strings(template: dict[str, Any]) -> None:
    defaults = parameter_defaults(template)
    assert defaults["HotMemoryTokenCap"] == "2000"
    assert defaults["ProjectTimeZone"] == "Asia/Shanghai"
    assert defaults["FlowLogRetentionDays"] == "0"
    assert defaults["Stage"] == "dev"
