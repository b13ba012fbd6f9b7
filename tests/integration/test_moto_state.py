"""The local runtime's Secrets Manager and EventBridge Scheduler snapshots (infra/local/moto_state.py):
which requests snapshot a service, and that a snapshot replayed into an empty moto answers moto's
own API as before (names, values, tags, KMS keys, deletions awaiting; groups, schedules with their
expression, time zone, target and dates)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from moto import mock_aws

from infra.local import moto_state

REGION = "eu-west-1"
_SCHEDULE_FIELDS = ("Name", "GroupName", "ScheduleExpression", "ScheduleExpressionTimezone", "Target",
                    "ActionAfterCompletion", "State", "CreationDate")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Any]:
    """A boto3 client of a service (inside ``mock_aws``)."""
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"),
                        ("AWS_DEFAULT_REGION", REGION)):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    return lambda service: boto3.client(service, region_name=REGION)


def _secrets_view(sm: Any) -> list[dict[str, Any]]:
    listed = sm.list_secrets(IncludePlannedDeletion=True)["SecretList"]
    view = []
    for s in sorted(listed, key=lambda s: s["Name"]):
        described = sm.describe_secret(SecretId=s["Name"])
        value = None if "DeletedDate" in described else sm.get_secret_value(SecretId=s["Name"])["SecretString"]
        view.append({"name": s["Name"], "tags": described.get("Tags"), "kms": described.get("KmsKeyId"),
                     "description": described.get("Description"), "deleted": "DeletedDate" in described,
                     "value": value})
    return view


def _schedules_view(scheduler: Any) -> list[dict[str, Any]]:
    view = []
    for group in sorted(g["Name"] for g in scheduler.list_schedule_groups()["ScheduleGroups"]):
        for s in scheduler.list_schedules(GroupName=group)["Schedules"]:
            got = scheduler.get_schedule(Name=s["Name"], GroupName=group)
            view.append({k: got.get(k) for k in _SCHEDULE_FIELDS})
    return view


def test_a_snapshot_replayed_into_an_empty_moto_answers_as_before(aws: Callable[[str], Any]) -> None:
    with mock_aws():
        before, snapshot = _given_secrets_and_schedules(aws)
    # When moto starts empty and the snapshot is replayed
    with mock_aws():
        sm, scheduler = aws("secretsmanager"), aws("scheduler")
        assert sm.list_secrets(IncludePlannedDeletion=True)["SecretList"] == []
        moto_state.restore_secrets(snapshot[0])
        moto_state.restore_schedules(snapshot[1])
        # Then moto's own API answers as before (a restored secret awaiting deletion can be restored)
        assert (_secrets_view(sm), _schedules_view(scheduler)) == before
        sm.restore_secret(SecretId="agent-memory/reminder-webhook/p2")
        assert sm.get_secret_value(SecretId="agent-memory/reminder-webhook/p2")["SecretString"] == "key"


def _given_secrets_and_schedules(aws: Callable[[str], Any]) -> tuple[Any, Any]:
    """Secrets (tagged, encrypted with a key, rotated, one awaiting deletion) and reminder schedules;
    (what moto's API answers about them, their snapshot as the data directory holds it)."""
    sm, scheduler = aws("secretsmanager"), aws("scheduler")
    tags = [{"Key": "project_id", "Value": "p1"}, {"Key": "purpose", "Value": "redcap_token"}]
    sm.create_secret(Name="agent-memory/redcap/p1", SecretString='{"token": "a"}', Tags=tags, KmsKeyId="alias/k",
                     Description="redcap_token of project p1")
    sm.put_secret_value(SecretId="agent-memory/redcap/p1", SecretString='{"token": "b"}')
    sm.create_secret(Name="agent-memory/reminder-webhook/p2", SecretString="key")
    sm.delete_secret(SecretId="agent-memory/reminder-webhook/p2", RecoveryWindowInDays=7)
    scheduler.create_schedule_group(Name="reminders")
    target = {"Arn": "arn:aws:lambda:eu-west-1:1:function:R", "RoleArn": "arn:aws:iam::1:role/S",
              "Input": json.dumps({"project_id": "p1", "reminder_id": "r1"})}
    scheduler.create_schedule(Name="reminder-r1", GroupName="reminders", ScheduleExpression="at(2026-03-02T10:00:00)",
                              ScheduleExpressionTimezone="Asia/Shanghai", FlexibleTimeWindow={"Mode": "OFF"},
                              Target=target, ActionAfterCompletion="DELETE")
    scheduler.create_schedule(Name="reminder-r2", GroupName="reminders", ScheduleExpression="cron(0 9 ? * MON *)",
                              ScheduleExpressionTimezone="Asia/Shanghai", FlexibleTimeWindow={"Mode": "OFF"},
                              Target=target)
    view = (_secrets_view(sm), _schedules_view(scheduler))
    return view, json.loads(json.dumps((moto_state.snapshot_secrets(), moto_state.snapshot_schedules()), default=str))


def _environ(target: str = "", method: str = "POST", service: str = "") -> dict[str, str]:
    scope = f"AWS4-HMAC-SHA256 Credential=local/20260302/eu-west-1/{service}/aws4_request" if service else ""
    return {"HTTP_X_AMZ_TARGET": target, "REQUEST_METHOD": method, "HTTP_AUTHORIZATION": scope}


@pytest.mark.parametrize(("environ", "service"), [
    (_environ("secretsmanager.CreateSecret"), "secretsmanager"),
    (_environ("secretsmanager.DeleteSecret"), "secretsmanager"),
    (_environ("secretsmanager.TagResource"), "secretsmanager"),
    (_environ("secretsmanager.GetSecretValue"), None),
    (_environ("secretsmanager.ListSecrets"), None),
    (_environ("DynamoDB_20120810.PutItem", service="dynamodb"), None),
    (_environ(method="POST", service="scheduler"), "scheduler"),
    (_environ(method="DELETE", service="scheduler"), "scheduler"),
    (_environ(method="GET", service="scheduler"), None),
    (_environ(method="POST", service="sqs"), None),
])
def test_only_writes_to_secrets_manager_or_the_scheduler_snapshot(environ: dict[str, str], service: str | None) -> None:
    assert moto_state.changed_service(environ) == service
