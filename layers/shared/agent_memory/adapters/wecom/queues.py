"""The WeCom channel's two SQS queues (docs/architecture.md, "WeCom").

- :class:`SqsWeComInboundQueue` (port ``WeComInboundQueue``): the callback's checked messages
  (a standard queue: the consumer is idempotent on the ``MsgId``);
- :class:`SqsWeComOutbox` (port ``WeComOutbox``): a FIFO queue of message parts. A message is
  split at WeCom's limits here (:mod:`.split`: application text 2,048 bytes, robot Markdown 4,096)
  and its parts sent in one ``SendMessageBatch`` (at most 10 parts: ``split.MAX_PARTS``), in
  order, with ``MessageGroupId`` = a hash of the project and the recipient (each recipient's
  messages arrive in order; one recipient's failing part holds back only theirs) and
  ``MessageDeduplicationId`` = a hash of the message's dedupe key and the part number (SQS drops a
  re-sent part within its 5-minute window; the consumer's idempotency record covers the rest).

Both raise :class:`~agent_memory.domain.errors.ExternalServiceError` (never a botocore
exception); throttling and 5xx of a call are retried by botocore (``standard`` mode). Message text
travels in the (encrypted) queues and is never logged; no id of a WeCom user is put in the
messages' attributes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from agent_memory.adapters.errors import coded_error, service_error
from agent_memory.adapters.wecom.split import APP_TEXT_LIMIT_BYTES, ROBOT_MARKDOWN_LIMIT_BYTES, split_message
from agent_memory.domain.wecom import WeComInbound, WeComOutbound, WeComOutboundPart


def _sqs(client: Any | None) -> Any:
    if client is not None:
        return client
    import boto3
    from botocore.config import Config

    return boto3.client("sqs", config=Config(retries={"mode": "standard", "max_attempts": 5}))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def outbound_parts(message: WeComOutbound) -> list[WeComOutboundPart]:
    """The parts of ``message`` within its type's limit (robot Markdown 4,096 bytes, application
    text 2,048), numbered ``(i/n)`` when there are several."""
    limit = ROBOT_MARKDOWN_LIMIT_BYTES if message.markdown else APP_TEXT_LIMIT_BYTES
    chunks = split_message(message.text, limit, markdown=message.markdown)
    return [WeComOutboundPart(project_id=message.project_id, to_userid=message.to_userid, content=chunk,
                              dedupe_key=message.dedupe_key, part=i, parts=len(chunks))
            for i, chunk in enumerate(chunks, start=1)]


class SqsWeComInboundQueue:
    """The inbound queue at ``queue_url`` (a boto3 SQS client made on first use unless given)."""

    def __init__(self, queue_url: str, *, client: Any | None = None) -> None:
        if not queue_url:
            raise ValueError("WECOM_INBOUND_QUEUE_URL is not set")
        self._queue_url = queue_url
        self._client = client

    def enqueue(self, inbound: WeComInbound) -> None:
        """One ``SendMessage`` of the message as JSON.

        Raises:
            ExternalServiceError: SQS refused it or did not answer.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        self._client = _sqs(self._client)
        try:
            self._client.send_message(QueueUrl=self._queue_url, MessageBody=inbound.model_dump_json())
        except (BotoCoreError, ClientError) as exc:
            raise service_error("sqs", exc) from None


class SqsWeComOutbox:
    """The outbox FIFO queue at ``queue_url`` (see the module docstring)."""

    def __init__(self, queue_url: str, *, client: Any | None = None) -> None:
        if not queue_url:
            raise ValueError("WECOM_OUTBOX_QUEUE_URL is not set")
        self._queue_url = queue_url
        self._client = client

    def send(self, messages: Sequence[WeComOutbound]) -> int:
        """Queue every part of every message, one ``SendMessageBatch`` per message.

        Returns:
            How many parts were queued.

        Raises:
            ExternalServiceError: a batch failed, or some of its entries (sending them again is
                safe: SQS deduplicates, the consumer is idempotent).
        """
        queued = 0
        for message in messages:
            parts = outbound_parts(message)
            if parts:
                self._send_batch(parts)
            queued += len(parts)
        return queued

    def _send_batch(self, parts: list[WeComOutboundPart]) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        first = parts[0]
        group = _digest(f"{first.project_id}#{(first.to_userid or '').lower() or '@robot'}")
        entries = [{"Id": str(part.part), "MessageBody": part.model_dump_json(), "MessageGroupId": group,
                    "MessageDeduplicationId": _digest(part.idempotency_key)} for part in parts]
        self._client = _sqs(self._client)
        try:
            response = self._client.send_message_batch(QueueUrl=self._queue_url, Entries=entries)
        except (BotoCoreError, ClientError) as exc:
            raise service_error("sqs", exc) from None
        failed = response.get("Failed") or []
        if failed:
            raise coded_error("sqs", str(failed[0].get("Code") or "BatchEntryFailed"))


__all__ = ["SqsWeComInboundQueue", "SqsWeComOutbox", "outbound_parts"]
