"""The background jobs' infrastructure in template.yaml: schedules in
the project time zone with retry policy, DLQ and a parsed Input; the SQS fan-out with redrive,
partial batch responses and alarms; least-privilege roles (only the worker reads the flow log).

Linting (cfn-lint, sam validate, the SAM-translated template) is in test_template.py; the slow
test here checks what the SAM transform generates for the schedules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from infra.template_model import (
    FUNCTION_TYPE,
    FunctionSpec,
    RouteSpec,
    function_specs,
    load_template,
    placeholder_resources,
    queue_event_specs,
    resources_of_type,
    schedule_specs,
)
from tests.infra.test_template import (
    DYNAMODB_READ_ACTIONS,
    _action_allows,
    _as_list,
    _flow_log_read_violations,
    _policy_statements,
    _statements_referencing_flow_log,
)

# The fixtures of test_template.py, registered here under these names: dummy AWS credentials
# (autouse) and the SAM-translated template.
from tests.infra.test_template import dummy_aws_credentials as _dummy_aws_credentials  # noqa: F401,E402
from tests.infra.test_template import translated_template as _translated_template  # noqa: F401,E402

TABLES = ["FlowLogTable", "MemoryTable", "SessionsTable", "IdempotencyTable"]
# job -> (event, cron expression, local hour, weekday field)
SCHEDULES = {
    "distill": ("DistillSchedule", "cron(0 2 * * ? *)", 2, "?"),
    "archive": ("ArchiveSchedule", "cron(0 3 ? * MON *)", 3, "MON"),
    "prune": ("PruneSchedule", "cron(0 4 * * ? *)", 4, "?"),
}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module")
def resources(template: dict[str, Any]) -> dict[str, Any]:
    return template["Resources"]


@pytest.fixture(scope="module")
def specs(template: dict[str, Any]) -> dict[str, FunctionSpec]:
    return {s.logical_id: s for s in function_specs(template, {t: f"test-{t}" for t in TABLES})}


def _schedule(resources: dict[str, Any], job: str) -> dict[str, Any]:
    event = resources["JobDispatcherFunction"]["Properties"]["Events"][SCHEDULES[job][0]]
    assert event["Type"] == "ScheduleV2"
    return dict(event["Properties"])


def _actions(statements: list[dict[str, Any]]) -> set[str]:
    return {a for s in statements if s.get("Effect") == "Allow" for a in _as_list(s["Action"])}


# ------------------------------------------------------------------------------------- schedules
def test_b17_every_schedule_names_the_project_time_zone(template: dict[str, Any]) -> None:
    # Given the template's ScheduleV2 events,
    schedules = [
        event["Properties"]
        for resource in resources_of_type(template, FUNCTION_TYPE).values()
        for event in (resource["Properties"].get("Events") or {}).values()
        if event["Type"] == "ScheduleV2"
    ]
    # Then there are the three jobs' schedules, each in the project's zone (a parameter, default Shanghai).
    assert len(schedules) == 3
    for props in schedules:
        assert props["ScheduleExpressionTimezone"] == {"Ref": "ProjectTimeZone"}
    assert template["Parameters"]["ProjectTimeZone"]["Default"] == "Asia/Shanghai"


@pytest.mark.parametrize("job", sorted(SCHEDULES))
def test_schedule_fires_at_its_local_hour(resources: dict[str, Any], job: str) -> None:
    # Given the job's schedule, Then the cron fires at minute 0 of the job's LOCAL hour
    # (local because the expression is evaluated in ScheduleExpressionTimezone),
    _, expression, hour, weekday = SCHEDULES[job]
    props = _schedule(resources, job)
    assert props["ScheduleExpression"] == expression
    cron = re.fullmatch(r"cron\((.+)\)", props["ScheduleExpression"])
    assert cron is not None, props["ScheduleExpression"]
    fields = cron.group(1).split()
    minute, hours, day_of_month, month, day_of_week, year = fields
    assert (minute, hours, month, year) == ("0", str(hour), "*", "*")
    # daily, or Mondays only for the archive (EventBridge cron: one of the day fields is "?").
    assert (day_of_month, day_of_week) == (("*", "?") if weekday == "?" else ("?", weekday))


@pytest.mark.parametrize("job", sorted(SCHEDULES))
def test_schedule_has_retry_policy_and_dead_letter_queue(resources: dict[str, Any], job: str) -> None:
    props = _schedule(resources, job)
    retry = props["RetryPolicy"]
    assert 0 < retry["MaximumRetryAttempts"] <= 185
    assert 60 <= retry["MaximumEventAgeInSeconds"] <= 3600  # retries stay within the run's local date
    assert props["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["ScheduleDLQ", "Arn"]}}
    assert resources["ScheduleDLQ"]["Type"] == "AWS::SQS::Queue"
    assert props["OmitName"] is True  # generated names: dev and prod stacks can share an account


@pytest.mark.parametrize("job", sorted(SCHEDULES))
def test_schedule_input_is_parsed_by_the_dispatcher_model(template: dict[str, Any], job: str) -> None:
    # Given the Input the schedule sends (resolved with the parameter defaults),
    from agent_memory.domain.jobs import ScheduleInput

    (spec,) = [s for s in schedule_specs(template) if s.event == SCHEDULES[job][0]]
    # Then it is exactly a ScheduleInput for that job in the schedule's own time zone.
    parsed = ScheduleInput.model_validate_json(spec.input)
    assert parsed == ScheduleInput(job=job, time_zone=spec.time_zone)
    assert spec.time_zone == "Asia/Shanghai"


def test_schedule_input_follows_the_time_zone_parameter(template: dict[str, Any]) -> None:
    # Given another deployment time zone, Then the Input names it too (one !Sub of the same parameter).
    props = _schedule(template["Resources"], "distill")
    assert props["Input"] == {"Fn::Sub": '{"job": "distill", "time_zone": "${ProjectTimeZone}"}'}


def test_failed_dispatcher_runs_land_in_the_schedule_dlq(resources: dict[str, Any]) -> None:
    # The schedules invoke asynchronously: a dispatcher that raises is retried by Lambda, then kept.
    config = resources["JobDispatcherFunction"]["Properties"]["EventInvokeConfig"]
    assert config["MaximumRetryAttempts"] == 2
    assert config["MaximumEventAgeInSeconds"] <= 3600
    assert config["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": {"Fn::GetAtt": ["ScheduleDLQ", "Arn"]},
    }


# ----------------------------------------------------------------------------------------- queue
def test_job_queue_redrives_to_its_dlq_after_three_receives(resources: dict[str, Any]) -> None:
    props = resources["JobQueue"]["Properties"]
    assert props["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": ["JobDLQ", "Arn"]}, "maxReceiveCount": 3}
    assert resources["JobDLQ"]["Properties"]["MessageRetentionPeriod"] == 1209600


def test_job_queue_visibility_is_at_least_six_worker_timeouts(resources: dict[str, Any]) -> None:
    worker_timeout = resources["JobWorkerFunction"]["Properties"]["Timeout"]
    assert resources["JobQueue"]["Properties"]["VisibilityTimeout"] >= 6 * worker_timeout


@pytest.mark.parametrize("queue", ["JobQueue", "JobDLQ", "ScheduleDLQ"])
def test_queues_are_encrypted(resources: dict[str, Any], queue: str) -> None:
    # SQS-managed keys unless KmsKeyArn is set (then that key; see test_governance_template.py).
    sse = resources[queue]["Properties"]["SqsManagedSseEnabled"]
    assert sse == {"Fn::If": ["HasKmsKey", {"Ref": "AWS::NoValue"}, True]}


def test_worker_reports_partial_batch_failures(template: dict[str, Any]) -> None:
    (event,) = [e for e in queue_event_specs(template) if e.function == "JobWorkerFunction"]
    assert event.queue == "JobQueue"
    assert event.report_batch_item_failures is True
    assert 1 <= event.batch_size <= 10


@pytest.mark.parametrize("queue", ["JobDLQ", "ScheduleDLQ"])
def test_dead_letter_queue_alarms_notify_the_admin_topic(resources: dict[str, Any], queue: str) -> None:
    # Given the alarms of the template,
    alarms = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    dimensions = [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue, "QueueName"]}}]
    (alarm,) = [a for a in alarms if a.get("Dimensions") == dimensions]
    # Then one fires as soon as a message is visible in the DLQ and notifies the admins.
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)
    assert alarm["AlarmActions"] == [{"Ref": "AdminAlertsTopic"}]
    assert alarm["TreatMissingData"] == "notBreaching"
    assert resources["AdminAlertsTopic"]["Type"] == "AWS::SNS::Topic"


# ------------------------------------------------------------------------------------ environment
def test_job_functions_get_the_queue_and_the_alert_topic(
    monkeypatch: pytest.MonkeyPatch, specs: dict[str, FunctionSpec], template: dict[str, Any]
) -> None:
    # Given the environment each job function gets,
    from agent_memory.config import Settings

    placeholders = placeholder_resources(template)
    dispatcher = Settings.model_validate(specs["JobDispatcherFunction"].environment)
    worker = Settings.model_validate(specs["JobWorkerFunction"].environment)
    # Then the dispatcher knows the queue, the worker the admin-alert topic, both the project zone.
    assert dispatcher.job_queue_url == placeholders["JobQueue"].ref
    assert worker.alert_topic_arn == placeholders["AdminAlertsTopic"].arn
    assert dispatcher.project_time_zone == worker.project_time_zone == "Asia/Shanghai"
    assert worker.flow_log_table == "test-FlowLogTable"


def test_memory_and_reports_routes_are_authorised_api_routes(specs: dict[str, FunctionSpec]) -> None:
    routes = specs["ApiFunction"].routes
    assert RouteSpec(method="GET", path="/v1/projects/{project_id}/memory", auth=True) in routes
    assert RouteSpec(method="GET", path="/v1/projects/{project_id}/reports", auth=True) in routes


# --------------------------------------------------------------------------------------- policies
def test_only_the_worker_can_read_the_flow_log(resources: dict[str, Any]) -> None:
    # Given every function's inline policies,
    readers = {
        logical_id
        for logical_id, resource in resources_of_type({"Resources": resources}, FUNCTION_TYPE).items()
        if _flow_log_read_violations(_policy_statements(resource)[0])
    }
    # Then the chat function still cannot read the flow log: the job worker reads it, the
    # governance function for an admin's export with include=flow_log (README "Your data"), and the
    # admin function the messages a hot-memory line or a review item cites (by Query only:
    # tests/infra/test_admin_template.py).
    assert readers == {"JobWorkerFunction", "GovernanceFunction", "AdminFunction"}


def test_worker_reads_the_flow_log_by_query_only_and_never_adds_to_it(resources: dict[str, Any]) -> None:
    statements, other = _policy_statements(resources["JobWorkerFunction"])
    assert other == []
    flow_log_actions = _actions(_statements_referencing_flow_log(statements))
    # Query to read; BatchWriteItem only to delete an erased message's item (erase jobs);
    # UpdateItem only for the identifier scrub's conditional rewrite of an item's text. Never PutItem.
    assert flow_log_actions == {"dynamodb:Query", "dynamodb:BatchWriteItem", "dynamodb:UpdateItem"}
    (erase,) = [s for s in statements if s.get("Sid") == "EraseFlowLogItems"]
    assert _as_list(erase["Action"]) == ["dynamodb:BatchWriteItem"]
    (scrub,) = [s for s in statements if s.get("Sid") == "ScrubStoredTexts"]
    assert _as_list(scrub["Action"]) == ["dynamodb:UpdateItem"]


def test_no_function_may_scan_a_table(resources: dict[str, Any]) -> None:
    for logical_id, resource in resources_of_type({"Resources": resources}, FUNCTION_TYPE).items():
        for action in _actions(_policy_statements(resource)[0]):
            assert not _action_allows(action, "dynamodb:Scan"), f"{logical_id}: {action}"


def test_dispatcher_may_only_query_the_activity_index_and_enqueue(resources: dict[str, Any]) -> None:
    statements, other = _policy_statements(resources["JobDispatcherFunction"])
    assert other == []
    grants = {(a, json.dumps(s["Resource"], sort_keys=True)) for s in statements for a in _as_list(s["Action"])}
    grants -= {(a, json.dumps({"Ref": "KmsKeyArn"})) for a in ("kms:Decrypt", "kms:GenerateDataKey")}  # KmsKeyArn only
    assert grants == {
        ("dynamodb:Query", json.dumps({"Fn::Sub": "${MemoryTable.Arn}/index/ActivityIndex"})),
        ("sqs:SendMessage", json.dumps({"Fn::GetAtt": ["JobQueue", "Arn"]}, sort_keys=True)),
    }


def test_worker_grants_are_memory_table_sns_topic_and_the_secrets(resources: dict[str, Any]) -> None:
    statements, _ = _policy_statements(resources["JobWorkerFunction"])
    by_resource: dict[str, set[str]] = {}
    for s in statements:
        by_resource.setdefault(json.dumps(s["Resource"], sort_keys=True), set()).update(_as_list(s["Action"]))
    memory = by_resource[json.dumps({"Fn::GetAtt": ["MemoryTable", "Arn"]}, sort_keys=True)]
    assert {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem"} <= memory
    assert by_resource[json.dumps({"Ref": "AdminAlertsTopic"})] == {"sns:Publish"}
    # Sessions and cached replies only for erase jobs: find and delete (and rewrite the facts
    # that referred to an erased session's diagnoses); UpdateItem only for the identifier scrub.
    sessions = {a for r, actions in by_resource.items() if "SessionsTable" in r for a in actions}
    assert sessions == {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem",
                        "dynamodb:BatchWriteItem", "dynamodb:UpdateItem"}
    idempotency = {a for r, actions in by_resource.items() if "IdempotencyTable" in r for a in actions}
    assert idempotency == {"dynamodb:BatchWriteItem"}
    assert all(not any("*" in a for a in actions) for actions in by_resource.values())
    # (a removal's DeleteSecret of the project secrets: test_project_secrets_template.py)
    # the Anthropic key (anthropic provider) and the REDCap tokens (the identifier firewall's index)
    secret = sorted(r for r, actions in by_resource.items() if actions == {"secretsmanager:GetSecretValue"})
    assert len(secret) == 2
    assert "${AnthropicSecretName}-??????" in secret[0] and "secret:${ClinicalTokenSecretPrefix}*" in secret[1]


def test_read_actions_checked_include_query(resources: dict[str, Any]) -> None:
    # The detector used above counts a Query as a read (so the worker's grant is seen).
    assert "dynamodb:Query" in DYNAMODB_READ_ACTIONS


# ------------------------------------------------------------------------------ SAM-translated (slow)
@pytest.mark.slow
def test_sam_generates_schedules_in_the_zone_with_dlq_permission(_translated_template: Path) -> None:  # noqa: F811
    # Given the template after the SAM transform,
    cfn = json.loads(_translated_template.read_text(encoding="utf-8"))["Resources"]
    schedules = {k: r for k, r in cfn.items() if r["Type"] == "AWS::Scheduler::Schedule"}
    # Then each schedule keeps its zone, Input, retry policy and DLQ, and its role may send to the DLQ.
    assert len(schedules) == 3
    for logical_id, schedule in schedules.items():
        props = schedule["Properties"]
        assert props["ScheduleExpressionTimezone"] == {"Ref": "ProjectTimeZone"}, logical_id
        target = props["Target"]
        assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["ScheduleDLQ", "Arn"]}}
        assert "MaximumRetryAttempts" in target["RetryPolicy"]
        assert "Input" in target
        role = cfn[target["RoleArn"]["Fn::GetAtt"][0]]
        statements = [s for p in role["Properties"]["Policies"] for s in _as_list(p["PolicyDocument"]["Statement"])]
        assert any("sqs:SendMessage" in _as_list(s["Action"]) for s in statements), logical_id
    mapping = next(r for r in cfn.values() if r["Type"] == "AWS::Lambda::EventSourceMapping")
    assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
