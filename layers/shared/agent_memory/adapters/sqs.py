"""SQS adapter of the fan-out queue (:class:`agent_memory.ports.JobSender`).

One ``SendMessageBatch`` per 10 requests (the SQS maximum). Each message body is a
:class:`~agent_memory.jobs.JobRequest` as JSON (ids and a date, never message text) with the
message attributes ``job`` and ``job_key`` (``{job}#{project_id}#{run date}``, stable across
re-dispatches: the standard queue has no deduplication, the jobs are idempotent and the key
lets logs and the DLQ tie a message to its run).

Retries: throttling and 5xx of a whole call are botocore's (``standard`` retry mode). Entries a
batch reports as failed with ``SenderFault: false`` (e.g. an internal error for one entry) are
sent again, ONLY those, by tenacity with jittered backoff; a sender fault (a malformed entry)
is not retried. A call that still fails after botocore's retries counts its entries as failed and
the other chunks are still sent. Whatever failed raises
:class:`~agent_memory.domain.errors.EnqueueFailed` (never a botocore exception).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import batched
from typing import Any

from tenacity import Retrying, retry_if_result, stop_after_attempt, wait_exponential_jitter

from agent_memory.domain.errors import EnqueueFailed
from agent_memory.domain.jobs import JobRequest, request_key
from agent_memory.observability import logger

#: SQS SendMessageBatch holds at most 10 entries.
SQS_BATCH_MAX = 10


class SqsJobQueue:
    """Sends job requests to ``queue_url`` (boto3 SQS client created lazily unless given)."""

    def __init__(
        self,
        queue_url: str,
        *,
        client: Any | None = None,
        entry_attempts: int = 3,
        wait_initial_s: float = 0.2,
        wait_max_s: float = 2.0,
    ) -> None:
        if not queue_url:
            raise ValueError("JOB_QUEUE_URL is not set")
        self._queue_url = queue_url
        self._client = client
        self._entry_attempts = entry_attempts
        self._wait = wait_exponential_jitter(multiplier=wait_initial_s, max=wait_max_s, jitter=wait_initial_s)

    def _sqs(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client("sqs", config=Config(retries={"mode": "standard", "max_attempts": 5}))
        return self._client

    def send(self, requests: Sequence[JobRequest]) -> int:
        """Enqueue one message per request, 10 per call.

        Returns:
            The number of messages enqueued (``len(requests)``).

        Raises:
            EnqueueFailed: entries still failing after the retries (the other chunks are sent).
        """
        failed = 0
        for chunk in batched(requests, SQS_BATCH_MAX, strict=False):
            failed += self._send_chunk(chunk)
        if failed:
            raise EnqueueFailed(f"{failed} of {len(requests)} job requests were not enqueued", failed=failed)
        return len(requests)

    def _send_chunk(self, chunk: Sequence[JobRequest]) -> int:
        """Send one batch; re-send only its failed entries. Returns how many finally failed."""
        pending: dict[str, dict[str, Any]] = {str(i): _entry(str(i), r) for i, r in enumerate(chunk)}
        sender_faults: list[str] = []

        def attempt() -> bool:
            """One SendMessageBatch of the pending entries; True while some may be retried."""
            response = self._sqs().send_message_batch(QueueUrl=self._queue_url, Entries=list(pending.values()))
            for ok in response.get("Successful", []):
                pending.pop(ok["Id"], None)
            retryable = False
            for failure in response.get("Failed", []):
                if failure.get("SenderFault"):
                    sender_faults.append(str(failure.get("Code", "")))
                    pending.pop(failure["Id"], None)
                else:
                    retryable = True
            return retryable

        retrying = Retrying(
            retry=retry_if_result(bool),
            stop=stop_after_attempt(self._entry_attempts),
            wait=self._wait,
            retry_error_callback=lambda state: state.outcome.result() if state.outcome else True,
            reraise=True,
        )
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            retrying(attempt)
        except (BotoCoreError, ClientError) as exc:
            logger.warning("SendMessageBatch failed", extra={"error": type(exc).__name__, "entries": len(pending)})
        return len(pending) + len(sender_faults)


def _entry(entry_id: str, request: JobRequest) -> dict[str, Any]:
    return {
        "Id": entry_id,
        "MessageBody": request.model_dump_json(exclude_none=True),
        "MessageAttributes": {
            "job": {"DataType": "String", "StringValue": request.job},
            "job_key": {"DataType": "String", "StringValue": request_key(request)},
        },
    }


__all__ = ["SQS_BATCH_MAX", "SqsJobQueue"]
