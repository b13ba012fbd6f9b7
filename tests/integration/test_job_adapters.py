"""The jobs' adapters on AWS clients: the flow log read from the DynamoDB tables of template.yaml
(moto in-process) page by page across its UTC-date partitions, and the SNS notifier's publish
(a stubbed botocore client). The jobs' logic is tested on the in-memory fakes in ``tests/unit/jobs``."""

from __future__ import annotations

from datetime import date

import boto3
from botocore.stub import Stubber

from agent_memory.adapters.dynamo.jobs import JobsRepository
from agent_memory.adapters.sns import SnsNotifier
from agent_memory.domain.jobs import Alert
from agent_memory.jobs.calendar import local_day_window
from tests.integration.dynamo_support import say
from tests.unit.jobs.support import add_project, utc


def test_b15_flow_log_read_follows_every_page(aws: dict[str, str]) -> None:
    # Given 7 messages of one local day spread over its two UTC-date partitions
    jobs_repo = JobsRepository()
    add_project(jobs_repo)
    stamps = [f"2026-03-10T{h:02d}:00:00+08:00" for h in (0, 3, 7, 8, 12, 18, 23)]
    for i, stamp in enumerate(stamps):
        say("p1", f"m-{i}", f"消息 {i}", utc(stamp))

    # When read with pages of 2 items
    start, end = local_day_window(date(2026, 3, 10), "Asia/Shanghai")
    entries = jobs_repo.read_flow_log("p1", start, end, page_size=2)

    # Then every message is read once, in time order
    assert [e.message_id for e in entries] == [f"m-{i}" for i in range(7)]


def test_sns_notifier_publishes_to_the_topic_with_project_attributes() -> None:
    # Given an SNS client expecting one publish
    client = boto3.client("sns", region_name="eu-west-1")
    stub = Stubber(client)
    topic = "arn:aws:sns:eu-west-1:123456789012:agent-memory-admin-alerts"
    stub.add_response("publish", {"MessageId": "1"}, {
        "TopicArn": topic, "Subject": "Agent Memory: test", "Message": "Project p1: 2100 tokens",
        "MessageAttributes": {"project_id": {"DataType": "String", "StringValue": "p1"},
                              "kind": {"DataType": "String", "StringValue": "admin_over_cap"}},
    })

    # When an alert is delivered
    with stub:
        SnsNotifier(topic, client=client).notify(Alert(project_id="p1", kind="admin_over_cap",
                                                       subject="Agent Memory: test",
                                                       message="Project p1: 2100 tokens", dedupe_key="x"))

        # Then exactly that publish was made
        stub.assert_no_pending_responses()
