"""Reminders on AWS services (moto in-process; the tables from template.yaml): the EventBridge
Scheduler schedule of a one-time and of a recurring reminder (expression, time zone, target, role,
Input, retry policy, DLQ), cancellation deleting the schedule, and the ReminderFunction's delivery
(SNS with project_id / user_id attributes reaching a filtered subscription, and the project's
HMAC-signed webhook on a local HTTP sink)."""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest

from agent_memory.adapters.dynamo.reminders import ReminderRepository
from agent_memory.adapters.scheduler import EventBridgeReminderScheduler, SchedulerTarget
from agent_memory.config import get_settings
from agent_memory.reminders.service import ReminderDeps, cancel_reminder, schedule_reminder
from tests.conftest import FakeLambdaContext
from tests.fakes import FakeClock

REGION = "eu-west-1"
GROUP = "agent-memory-test-reminders"
FUNCTION_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:ReminderFunction"
ROLE_ARN = "arn:aws:iam::123456789012:role/ReminderSchedulerRole"
REMINDER_APP = Path(__file__).resolve().parents[2] / "functions" / "reminder" / "app.py"
#: Wednesday 2026-12-02 17:05 in Shanghai.
NOW = datetime(2026, 12, 2, 9, 5, tzinfo=UTC)


@pytest.fixture
def sched(aws: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The schedule group, the DLQ and the reminder topic in moto; the reminder deps on them."""
    scheduler = boto3.client("scheduler", region_name=REGION)
    scheduler.create_schedule_group(Name=GROUP)
    sqs = boto3.client("sqs", region_name=REGION)
    dlq_url = sqs.create_queue(QueueName="ReminderDLQ")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    target = SchedulerTarget(group=GROUP, function_arn=FUNCTION_ARN, role_arn=ROLE_ARN, dlq_arn=dlq_arn)
    deps = ReminderDeps(store=ReminderRepository(), scheduler=EventBridgeReminderScheduler(target, client=scheduler),
                        now=FakeClock(NOW))
    yield {"scheduler": scheduler, "deps": deps, "dlq_arn": dlq_arn, "tables": aws}


@pytest.mark.parametrize(("text", "when", "expression", "after_completion"), [
    ("给P005打电话", "明天上午10点", "at(2026-12-03T10:00:00)", "DELETE"),
    ("清理Query", "每周一早上9点", "cron(0 9 ? * MON *)", None),
    ("send the weekly report", "every weekday at 8:30", "cron(30 8 ? * MON,TUE,WED,THU,FRI *)", None),
])
def test_each_reminder_is_a_schedule_in_the_project_zone_with_retries_and_a_dlq(
    sched: dict[str, Any], text: str, when: str, expression: str, after_completion: str | None
) -> None:
    # When a reminder is scheduled for a Shanghai project
    done = schedule_reminder(sched["deps"], project_id="p1", time_zone="Asia/Shanghai", owner="u-pi", text=text,
                             when=when)

    # Then its schedule is in the group, in the project's zone, targeting the function with ids only
    got = sched["scheduler"].get_schedule(Name=done.reminder.schedule_name, GroupName=GROUP)
    assert got["ScheduleExpression"] == expression
    assert got["ScheduleExpressionTimezone"] == "Asia/Shanghai"
    assert got["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert got.get("ActionAfterCompletion") == after_completion
    t = got["Target"]
    assert (t["Arn"], t["RoleArn"]) == (FUNCTION_ARN, ROLE_ARN)
    assert json.loads(t["Input"]) == {"project_id": "p1", "reminder_id": done.reminder.reminder_id}
    assert t["RetryPolicy"] == {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 3600}
    assert t["DeadLetterConfig"] == {"Arn": sched["dlq_arn"]}
    # ... and the item holds owner, text, schedule, next firing and status
    stored = ReminderRepository().get_reminder("p1", done.reminder.reminder_id)
    assert stored is not None and (stored.owner, stored.text, stored.expression, stored.status) == (
        "u-pi", text, expression, "active")


def test_cancelling_removes_the_schedule(sched: dict[str, Any]) -> None:
    done = schedule_reminder(sched["deps"], project_id="p1", time_zone="Asia/Shanghai", owner="u1",
                             text="清理Query", when="每周一早上9点")
    cancel_reminder(sched["deps"], "p1", done.reminder.reminder_id, user_id="u1", admin=False)
    with pytest.raises(sched["scheduler"].exceptions.ResourceNotFoundException):
        sched["scheduler"].get_schedule(Name=done.reminder.schedule_name, GroupName=GROUP)
    assert sched["scheduler"].list_schedules(GroupName=GROUP)["Schedules"] == []
    stored = ReminderRepository().get_reminder("p1", done.reminder.reminder_id)
    assert stored is not None and stored.status == "cancelled"


# ----------------------------------------------------------------------------- the delivery handler
class _Sink(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        type(self).received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def sink() -> Iterator[str]:
    _Sink.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()


def _queue_subscribed(sns: Any, topic: str, name: str, policy: dict[str, Any]) -> str:
    sqs = boto3.client("sqs", region_name=REGION)
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"FilterPolicy": json.dumps(policy)})
    return url


def test_the_reminder_function_publishes_with_attributes_and_posts_a_signed_webhook(
    sched: dict[str, Any], sink: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a due reminder of u-pi, a client queue subscribed with a filter on u-pi, another on
    # someone else, and the project's webhook with its key in Secrets Manager
    sns = boto3.client("sns", region_name=REGION)
    topic = sns.create_topic(Name="ReminderTopic")["TopicArn"]
    mine = _queue_subscribed(sns, topic, "client-u-pi", {"user_id": ["u-pi"], "project_id": ["p1"]})
    other = _queue_subscribed(sns, topic, "client-other", {"user_id": ["someone-else"]})
    boto3.client("secretsmanager", region_name=REGION).create_secret(
        Name="agent-memory/reminder-webhook/p1", SecretString="s3cret")
    ReminderRepository().put_webhook("p1", sink, "agent-memory/reminder-webhook/p1")
    done = schedule_reminder(sched["deps"], project_id="p1", time_zone="Asia/Shanghai", owner="u-pi",
                             text="给P005打电话", when="明天上午10点")

    # When the scheduler invokes the ReminderFunction with the schedule's Input (at the due time)
    tables = sched["tables"]
    for name, value in {"MEMORY_TABLE": tables["MemoryTable"], "SESSIONS_TABLE": tables["SessionsTable"],
                        "FLOW_LOG_TABLE": tables["FlowLogTable"], "REMINDER_SCHEDULE_GROUP": GROUP,
                        "REMINDER_TOPIC_ARN": topic}.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    try:
        spec = importlib.util.spec_from_file_location("reminder_app_test", REMINDER_APP)
        assert spec is not None and spec.loader is not None
        app = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(app)
        app.app.deps.reminders.now = FakeClock(datetime(2026, 12, 3, 2, 0, tzinfo=UTC))
        schedule_input = json.loads(sched["scheduler"].get_schedule(
            Name=done.reminder.schedule_name, GroupName=GROUP)["Target"]["Input"])
        result = app.lambda_handler(schedule_input, FakeLambdaContext())
    finally:
        get_settings.cache_clear()

    # Then it was delivered on both channels and the one-time reminder is done
    assert result["status"] == "delivered" and result["channels"] == ["sns", "webhook"]
    stored = ReminderRepository().get_reminder("p1", done.reminder.reminder_id)
    assert stored is not None and stored.status == "done"
    # ... the filtered subscription of u-pi got it with both attributes, the other one nothing
    sqs = boto3.client("sqs", region_name=REGION)
    (msg,) = sqs.receive_message(QueueUrl=mine, MaxNumberOfMessages=10)["Messages"]
    envelope = json.loads(msg["Body"])
    assert {k: v["Value"] for k, v in envelope["MessageAttributes"].items()} == {"project_id": "p1", "user_id": "u-pi"}
    assert json.loads(envelope["Message"])["text"] == "给P005打电话"
    assert "Messages" not in sqs.receive_message(QueueUrl=other, MaxNumberOfMessages=10)
    # ... and the webhook got the same body, signed with the project's key
    ((headers, body),) = _Sink.received
    expected = hmac.new(b"s3cret", headers["x-reminder-timestamp"].encode() + b"." + body, hashlib.sha256).hexdigest()
    assert headers["x-reminder-signature"] == f"sha256={expected}"
    assert json.loads(body)["reminder_id"] == done.reminder.reminder_id
