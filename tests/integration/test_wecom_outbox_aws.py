"""The WeCom outbox on SQS (moto in-process, the template's FIFO queue and dead-letter queue) and
its consumer (WeComSenderWorker with Powertools idempotency on the template's table): a message's
parts arrive in order, a message queued twice is sent once, a part sent once is never sent again
when its record comes back, and a part WeCom keeps refusing is retried, then dead-lettered after 3
receives without holding back another recipient's messages."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from agent_memory.adapters.wecom.queues import SqsWeComOutbox
from agent_memory.channels.wecom import WeComDeliveryDeps
from agent_memory.domain.errors import ExternalServiceError
from agent_memory.domain.secrets import SecretNaming
from agent_memory.domain.wecom import WeComChannelSettings, WeComOutbound, WeComOutboundPart
from agent_memory.events.wecom import WeComSenderDeps, WeComSenderWorker
from infra.local.sqs_events import deliver, sqs_event, sqs_record
from tests.conftest import FakeLambdaContext
from tests.fakes import InMemorySecrets
from tests.unit.test_wecom_channel import SETTINGS

NAMING = SecretNaming()
SENTENCE = "受试者P001已于今日完成入组，随访计划已按方案生成。"


@dataclass
class FlakyWeCom:
    """``WeComSender``: records the parts sent; refuses every part for ``refuse`` (a WeCom outage
    for that member)."""

    refuse: set[str] = field(default_factory=set)
    sent: list[WeComOutboundPart] = field(default_factory=list)
    tries: int = 0

    def send_part(self, settings: WeComChannelSettings, part: WeComOutboundPart) -> None:
        self.tries += 1
        if part.to_userid in self.refuse:
            raise ExternalServiceError("wecom", "-1", retryable=True)
        self.sent.append(part)


@dataclass
class Outbox:
    sqs: Any
    url: str
    arn: str
    dlq_url: str
    outbox: SqsWeComOutbox
    wecom: FlakyWeCom
    worker: WeComSenderWorker

    def drain(self) -> None:
        """Deliver until the queue is empty, as Lambda's event source mapping would (FIFO, 10 a batch)."""
        context = FakeLambdaContext()
        deliver(self.sqs, self.url, self.arn, lambda event: self.worker.resolve(event, context))  # type: ignore[arg-type]


@pytest.fixture
def outbox(aws: dict[str, str]) -> Iterator[Outbox]:
    sqs = boto3.client("sqs", region_name=os.environ["AWS_REGION"])
    dlq_url = sqs.create_queue(QueueName="outbox-dlq.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3})  # as template.yaml's
    attributes = {"FifoQueue": "true", "RedrivePolicy": redrive}
    url = sqs.create_queue(QueueName="outbox.fifo", Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    secrets = InMemorySecrets()
    secrets.put(NAMING.channel("p1", "wecom"), SETTINGS.to_secret())
    wecom = FlakyWeCom()
    worker = WeComSenderWorker(WeComSenderDeps(delivery=WeComDeliveryDeps(secrets=secrets, naming=NAMING, sender=wecom),
                                               idempotency_table=aws["IdempotencyTable"]))
    yield Outbox(sqs, url, arn, dlq_url, SqsWeComOutbox(url, client=sqs), wecom, worker)


def _answer(to: str, text: str, key: str) -> WeComOutbound:
    return WeComOutbound(project_id="p1", to_userid=to, text=text, dedupe_key=key)


def test_a_long_answer_arrives_in_order_and_a_message_queued_twice_is_sent_once(outbox: Outbox) -> None:
    # Given: a 3-part answer queued, then queued again (the inbound consumer's retry), and a reminder
    long_answer = _answer("crc.li", SENTENCE * 80, "answer#p1#msg#7001")
    assert outbox.outbox.send([long_answer]) == 3
    assert outbox.outbox.send([long_answer, _answer("crc.li", "⏰ 给P005打电话", "reminder#p1#r-1#09:00")]) == 4
    # When
    outbox.drain()
    # Then: each part once, in order, then the reminder
    assert [(p.dedupe_key, p.part) for p in outbox.wecom.sent] == [
        ("answer#p1#msg#7001", 1), ("answer#p1#msg#7001", 2), ("answer#p1#msg#7001", 3), ("reminder#p1#r-1#09:00", 1)]
    assert "".join(p.content[6:] for p in outbox.wecom.sent[:3]) == SENTENCE * 80


def test_a_part_whose_record_comes_back_is_not_sent_again(outbox: Outbox) -> None:
    # Given: a part sent once
    outbox.outbox.send([_answer("crc.li", "P001 已入组。", "answer#p1#msg#7002")])
    received = outbox.sqs.receive_message(QueueUrl=outbox.url, AttributeNames=["All"])["Messages"]
    record = sqs_record(received[0]["Body"], queue_arn=outbox.arn, attributes=received[0]["Attributes"])
    context = FakeLambdaContext()
    assert outbox.worker.resolve(sqs_event([record]), context) == {"batchItemFailures": []}  # type: ignore[arg-type]
    # When: SQS delivers the same record again (at-least-once)
    assert outbox.worker.resolve(sqs_event([record]), context) == {"batchItemFailures": []}  # type: ignore[arg-type]
    # Then: WeCom got it once
    assert [p.content for p in outbox.wecom.sent] == ["P001 已入组。"] and outbox.wecom.tries == 1


def test_a_part_wecom_keeps_refusing_is_dead_lettered_and_holds_back_no_one_else(outbox: Outbox) -> None:
    # Given: WeCom refuses every message to pi.zhang; crc.li gets theirs
    outbox.wecom.refuse.add("pi.zhang")
    outbox.outbox.send([_answer("pi.zhang", "Weekly report failed", "alert#p1#w10#pi-zhang"),
                        _answer("crc.li", "P001 已入组。", "answer#p1#msg#7003")])
    # When: the queue is drained (each failure returns the record)
    outbox.drain()
    # Then: crc.li's message was sent; pi.zhang's was tried 3 times, then moved to the dead-letter queue
    assert [p.to_userid for p in outbox.wecom.sent] == ["crc.li"]
    assert outbox.wecom.tries == 4
    dead = outbox.sqs.receive_message(QueueUrl=outbox.dlq_url, MaxNumberOfMessages=10)["Messages"]
    assert [json.loads(m["Body"])["dedupe_key"] for m in dead] == ["alert#p1#w10#pi-zhang"]
