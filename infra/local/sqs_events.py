"""Lambda's SQS event source, locally: the event shape AWS sends and a poller that delivers a
queue's messages to a function the way an event source mapping with
``ReportBatchItemFailures`` does.

- :func:`sqs_record` / :func:`sqs_event`: ``{"Records": [...]}`` with the fields Lambda sends for a
  standard queue (``messageId``, ``receiptHandle``, ``body``, ``attributes``,
  ``messageAttributes`` in Lambda's lower-camel form, ``md5OfBody``, ``eventSource``,
  ``eventSourceARN``, ``awsRegion``).
- :func:`deliver`: receive up to ``batch_size`` messages, invoke, delete the records the
  function did not report in ``batchItemFailures``; reported ones are made visible again at
  once (in AWS they wait for the visibility timeout) and, after the queue's ``maxReceiveCount``
  receives, SQS (moto) moves them to the dead-letter queue. Stops when the queue is empty.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

LOCAL_REGION = "eu-west-1"


def _lambda_attributes(message_attributes: Mapping[str, Any]) -> dict[str, Any]:
    """SQS API message attributes (``StringValue``, ``DataType``) in Lambda's event form."""
    out: dict[str, Any] = {}
    for name, value in message_attributes.items():
        out[name] = {
            "stringValue": value.get("StringValue"),
            "stringListValues": list(value.get("StringListValues", [])),
            "binaryListValues": list(value.get("BinaryListValues", [])),
            "dataType": value.get("DataType", "String"),
        }
        if value.get("BinaryValue") is not None:
            out[name]["binaryValue"] = value["BinaryValue"]
    return out


def sqs_record(
    body: str,
    *,
    queue_arn: str,
    message_id: str | None = None,
    receipt_handle: str | None = None,
    message_attributes: Mapping[str, Any] | None = None,
    attributes: Mapping[str, str] | None = None,
    region: str = LOCAL_REGION,
) -> dict[str, Any]:
    """One record of an SQS event (standard queue). ``message_attributes`` in the SQS API form."""
    now_ms = str(int(time.time() * 1000))
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": receipt_handle or f"local-{uuid.uuid4().hex}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": now_ms,
            "SenderId": "AIDALOCALSENDER",
            "ApproximateFirstReceiveTimestamp": now_ms,
            **dict(attributes or {}),
        },
        "messageAttributes": _lambda_attributes(message_attributes or {}),
        "md5OfBody": hashlib.md5(body.encode("utf-8")).hexdigest(),  # noqa: S324 - SQS's checksum
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def sqs_event(records: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"Records": records}``."""
    return {"Records": records}


@dataclass
class Delivery:
    """What :func:`deliver` did: batches invoked, records delivered, records reported failed."""

    batches: int = 0
    records: int = 0
    failed: int = 0


def deliver(
    sqs: Any,
    queue_url: str,
    queue_arn: str,
    invoke: Callable[[dict[str, Any]], Any],
    *,
    batch_size: int = 10,
    max_batches: int = 10_000,
) -> Delivery:
    """Deliver every message of ``queue_url`` to ``invoke`` (the worker), batch by batch.

    Returns when a receive finds the queue empty (or after ``max_batches``). An exception of the
    function fails the whole batch (every record becomes visible again), as in AWS.
    """
    done = Delivery()
    while done.batches < max_batches:
        received = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=min(batch_size, 10),
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            WaitTimeSeconds=0,
        ).get("Messages", [])
        if not received:
            break
        records = [
            sqs_record(
                m["Body"],
                queue_arn=queue_arn,
                message_id=m["MessageId"],
                receipt_handle=m["ReceiptHandle"],
                message_attributes=m.get("MessageAttributes") or {},
                attributes={k: str(v) for k, v in (m.get("Attributes") or {}).items()},
            )
            for m in received
        ]
        done.batches += 1
        done.records += len(records)
        try:
            result = invoke(sqs_event(records))
            failed_ids = {f["itemIdentifier"] for f in (result or {}).get("batchItemFailures", [])}
        except Exception:  # a function error: the whole batch returns to the queue
            failed_ids = {m["MessageId"] for m in received}
        done.failed += len(failed_ids)
        succeeded = [m for m in received if m["MessageId"] not in failed_ids]
        if succeeded:
            sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(succeeded)],
            )
        for m in received:
            if m["MessageId"] in failed_ids:
                sqs.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
    return done


__all__ = ["Delivery", "deliver", "sqs_event", "sqs_record"]
