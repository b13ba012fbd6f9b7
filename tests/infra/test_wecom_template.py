"""WeCom's infrastructure in template.yaml: the callback routes are the only public routes that
name a project, each throttled on its own; the inbound queue and the FIFO outbox redrive to dead-letter
queues whose alarms reach the admins; the consumers report partial batch failures; only the
callback and the sender read the channel secrets, only the callback writes the inbound queue, and
the outbox is written by the functions that answer, remind and alert."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.template_model import function_specs, load_template

CALLBACK = "/v1/wecom/{project_id}/callback"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module")
def resources(template: dict[str, Any]) -> dict[str, Any]:
    return dict(template["Resources"])


def _att(logical_id: str, attribute: str) -> dict[str, list[str]]:
    """``!GetAtt logical_id.attribute`` as the loaded template holds it."""
    return {"Fn::GetAtt": [logical_id, attribute]}


def _statements(resources: dict[str, Any], function: str) -> list[dict[str, Any]]:
    found: list[Any] = []
    for policy in resources[function]["Properties"].get("Policies", []):
        for statement in policy.get("Statement", []) if isinstance(policy, dict) else []:
            found.extend(statement["Fn::If"][1:2] if "Fn::If" in statement else [statement])
    return [s for s in found if isinstance(s, dict) and "Action" in s]


def _writers(resources: dict[str, Any], action: str, queue: str) -> set[str]:
    return {name for name, r in resources.items() if r["Type"] == "AWS::Serverless::Function"
            for s in _statements(resources, name)
            if action in s["Action"] and json.dumps(s["Resource"]) == json.dumps(_att(queue, "Arn"))}


def test_the_callback_routes_are_public_and_throttled_on_their_own(template: dict[str, Any]) -> None:
    tables = {name: name for name in ("FlowLogTable", "MemoryTable", "SessionsTable", "IdempotencyTable")}
    routes = {(r.method, r.path): (spec.logical_id, r.auth) for spec in function_specs(template, tables)
              for r in spec.routes}
    # the only public routes that name a project (the others: health, the OpenAPI document, the editor's page)
    public = {key for key, (_, auth) in routes.items() if not auth and "{project_id}" in key[1]}
    assert public == {("GET", CALLBACK), ("POST", CALLBACK)}
    assert routes[("POST", CALLBACK)][0] == routes[("GET", CALLBACK)][0] == "WeComCallbackFunction"
    settings = template["Resources"]["HttpApi"]["Properties"]["RouteSettings"]
    for method in ("GET", "POST"):
        assert settings[f"{method} {CALLBACK}"] == {"ThrottlingRateLimit": {"Ref": "WeComCallbackRateLimit"},
                                                    "ThrottlingBurstLimit": {"Ref": "WeComCallbackBurstLimit"}}


@pytest.mark.parametrize(("queue", "dlq", "fifo"), [("WeComInboundQueue", "WeComInboundDLQ", False),
                                                    ("WeComOutboxQueue", "WeComOutboxDLQ", True)])
def test_each_queue_dead_letters_after_three_receives_and_alarms_the_admins(
    resources: dict[str, Any], queue: str, dlq: str, fifo: bool
) -> None:
    props = resources[queue]["Properties"]
    assert props["RedrivePolicy"] == {"deadLetterTargetArn": _att(dlq, "Arn"), "maxReceiveCount": 3}
    assert bool(props.get("FifoQueue")) is fifo and bool(resources[dlq]["Properties"].get("FifoQueue")) is fifo
    (alarm,) = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"
                and r["Properties"].get("Dimensions") == [{"Name": "QueueName",
                                                           "Value": _att(dlq, "QueueName")}]]
    assert alarm["AlarmActions"] == [{"Ref": "AdminAlertsTopic"}] and alarm["Threshold"] == 0


@pytest.mark.parametrize(("function", "queue"), [("WeComInboundFunction", "WeComInboundQueue"),
                                                 ("WeComSenderFunction", "WeComOutboxQueue")])
def test_the_consumers_report_partial_batch_failures(resources: dict[str, Any], function: str, queue: str) -> None:
    (event,) = resources[function]["Properties"]["Events"].values()
    assert event["Type"] == "SQS" and event["Properties"]["Queue"] == _att(queue, "Arn")
    assert event["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    visibility = resources[queue]["Properties"]["VisibilityTimeout"]
    assert visibility >= 6 * resources[function]["Properties"]["Timeout"]


def test_who_may_write_each_queue(resources: dict[str, Any]) -> None:
    assert _writers(resources, "sqs:SendMessage", "WeComInboundQueue") == {"WeComCallbackFunction"}
    assert _writers(resources, "sqs:SendMessage", "WeComOutboxQueue") == {
        "WeComInboundFunction", "ReminderFunction", "JobWorkerFunction"}


def test_the_callback_function_touches_no_table_and_no_llm(resources: dict[str, Any]) -> None:
    actions = {a for s in _statements(resources, "WeComCallbackFunction") for a in s["Action"]}
    assert actions <= {"secretsmanager:GetSecretValue", "sqs:SendMessage", "kms:Decrypt", "kms:GenerateDataKey"}
    assert resources["WeComCallbackFunction"]["Properties"]["Timeout"] <= 10  # WeCom waits 5 s
