"""Move legacy REDCap tokens (``clinical_data.token_secret``) into the projects' own secrets.

Before the service owned the tokens, a project admin named a Secrets Manager secret in
``clinical_data.token_secret``; the chat now refuses such a source ("set the token again"). This
operator tool finds every project record that still names one and, per project
(``agent_memory.projects.token_migration``): migrates it when the named secret is the project's own
(``{ClinicalTokenSecretPrefix}{project_id}``) and its ``api_url`` passes the egress policy (the
token is then stored as ``{"token", "api_url"}`` in that secret, tagged and under the stack's
``KmsKeyArn``, and the record says ``token_set``), or reports why its admin must set the token
again through ``PATCH /v1/projects/{id}``. A secret with any other name is never read.

It writes nothing without ``--apply``: first read the report (one JSON object per project:
``project_id``, ``status``, ``api_url``, ``reason``; never a token) and check that each ``api_url``
is that project's REDCap, since the token is bound to it from then on. A re-run finds nothing more
to do. Exit status 1 when a project is left for its admin (``set_again``).

    python -m infra.migrate_clinical_tokens                     # the running `make run` stack: report
    python -m infra.migrate_clinical_tokens --apply             # ... migrate
    python -m infra.migrate_clinical_tokens --aws --stage prod --apply   # a deployed stack (its outputs)

docs/architecture.md, "Project secrets".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

#: The deployed stack's outputs and parameters -> the functions' environment this tool needs.
_AWS_OUTPUTS = {"MemoryTableName": "MEMORY_TABLE", "SessionsTableName": "SESSIONS_TABLE",
                "FlowLogTableName": "FLOW_LOG_TABLE"}
_AWS_PARAMETERS = {"ClinicalTokenSecretPrefix": "CLINICAL_TOKEN_SECRET_PREFIX",
                   "ReminderWebhookSecretPrefix": "REMINDER_WEBHOOK_SECRET_PREFIX",
                   "ChannelSecretPrefix": "CHANNEL_SECRET_PREFIX", "AnthropicSecretName": "ANTHROPIC_SECRET_NAME",
                   "KmsKeyArn": "PROJECT_SECRETS_KMS_KEY_ARN", "EgressAllowPrivate": "EGRESS_ALLOW_PRIVATE",
                   "SecretRecoveryWindowDays": "SECRET_RECOVERY_WINDOW_DAYS"}


def legacy_project_ids(dynamodb: Any, memory_table: str) -> Iterator[str]:
    """The ids of the project records whose ``clinical_data`` names a secret (every scan page)."""
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=memory_table, ProjectionExpression="pk",
        FilterExpression="sk = :p AND contains(clinical_data, :legacy)",
        ExpressionAttributeValues={":p": {"S": "PROJECT"}, ":legacy": {"S": '"token_secret"'}},
    ):
        for raw in page["Items"]:
            yield raw["pk"]["S"]


def migrate_all(*, apply: bool, dynamodb: Any, now: datetime) -> list[dict[str, str | None]]:
    """Run the migration over every legacy project of the stack whose environment this process
    has (``os.environ``); the report lines, in project id order."""
    from agent_memory.config import get_settings
    from agent_memory.domain.errors import ProjectNotFound
    from agent_memory.projects.token_migration import MigrationDeps, migrate_legacy_token
    from agent_memory.wiring import build_members, build_project_secrets, egress_policy, host_resolver, secret_naming

    settings = get_settings()
    secrets = build_project_secrets(settings)
    deps = MigrationDeps(policy=egress_policy(settings), resolver=host_resolver(settings), reader=secrets,
                         writer=secrets, naming=secret_naming(settings))
    members = build_members(settings)
    report = []
    for project_id in sorted(legacy_project_ids(dynamodb, settings.memory_table)):
        try:
            outcome = migrate_legacy_token(members.get_project(project_id), deps, now=now, apply=apply)
            if outcome.project is not None:
                members.update_project(outcome.project)
        except ProjectNotFound:
            continue  # removed meanwhile (its secrets went with it)
        report.append(outcome.report())
    return report


def _aws_environment(session: Any, stage: str) -> dict[str, str]:
    """The environment of a deployed stack's functions that this tool needs."""
    from infra.jobs import stack_name_for, stack_outputs

    outputs, parameters = stack_outputs(session.client("cloudformation"), stack_name_for(stage))
    env = {variable: outputs[name] for name, variable in _AWS_OUTPUTS.items()}
    env.update({variable: parameters[name] for name, variable in _AWS_PARAMETERS.items() if parameters.get(name)})
    return {**env, "STAGE": stage, "AWS_REGION": session.region_name or ""}


def _local_environment(endpoint: str | None) -> Mapping[str, str]:
    from infra.jobs import local_description

    return dict(local_description(endpoint)["env"])


def main(argv: list[str] | None = None) -> int:
    """CLI (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m infra.migrate_clinical_tokens",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--apply", action="store_true", help="migrate (default: report only, write nothing)")
    parser.add_argument("--aws", action="store_true", help="the deployed stack of --stage")
    parser.add_argument("--stage", default=os.environ.get("STAGE", "dev"))
    parser.add_argument("--endpoint", default=os.environ.get("LOCAL_ENDPOINT"),
                        help="moto URL of a local stack (default: .local/stack.json of `make run`)")
    args = parser.parse_args(argv)
    import boto3

    from infra.jobs import JobsCliError

    try:
        env = _aws_environment(boto3.Session(), args.stage) if args.aws else _local_environment(args.endpoint)
    except JobsCliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    os.environ.update(env)
    report = migrate_all(apply=args.apply, dynamodb=boto3.client("dynamodb"), now=datetime.now(UTC))
    for line in report:
        print(json.dumps(line, ensure_ascii=False))
    return 1 if any(line["status"] == "set_again" for line in report) else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
