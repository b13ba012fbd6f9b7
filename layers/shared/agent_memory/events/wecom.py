"""The WeCom channel's two queue consumers (docs/architecture.md, "WeCom").

- :class:`WeComInboundWorker` (WeComInboundFunction): SQS batches of :class:`WeComInbound`; each
  record is a member's chat turn (``agent_memory.chat.wecom.answer_wecom_message``) under
  Powertools idempotency keyed on the project and the ``MsgId``: WeCom's retried callback, or a
  duplicate delivery, runs one turn; a delivery while the first still runs fails and comes back
  (then finds the stored outcome). A failed turn returns its record to the queue (3 receives, then
  the inbound dead-letter queue and its alarm); the turn's own idempotency hash makes the retry
  reuse the recorded message, and a recorded answer is replayed without an LLM call.
- :class:`WeComSenderWorker` (WeComSenderFunction): FIFO batches of :class:`WeComOutboundPart`
  (``SqsFifoPartialProcessor``: a failed part holds back the rest of its recipient's group only);
  each part is sent once (idempotency keyed on its dedupe key and number). A failed send returns
  the part to the queue (WeCom's API client already retried transient faults with backoff); after
  3 receives the outbox dead-letter queue and its alarm.

Records are parsed as their models (a malformed record fails alone). Nothing here logs message text
or a WeCom user id; outcomes are counted as metrics.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    SqsFifoPartialProcessor,
    process_partial_response,
)
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.parser.models import SqsRecordModel
from aws_lambda_powertools.utilities.parser.types import Json
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.channels.wecom import WeComDeliveryDeps, deliver_part
from agent_memory.chat.wecom import WeComTurnDeps, answer_wecom_message
from agent_memory.domain.wecom import WeComInbound, WeComOutboundPart
from agent_memory.observability import logger, metrics
from agent_memory.tracing import tracer

#: Idempotency records of the WeCom consumers (Powertools ``key_prefix``), kept a day: longer than
#: WeCom retries a callback and than a message stays in either queue before its dead-letter queue.
INBOUND_IDEMPOTENCY_PREFIX = "wecom-inbound"
OUTBOX_IDEMPOTENCY_PREFIX = "wecom-outbox"
IDEMPOTENCY_TTL_S = 24 * 3600


class WeComInboundRecord(SqsRecordModel):
    """An SQS record whose body is a JSON :class:`WeComInbound`."""

    body: Json[WeComInbound]  # Powertools' model types it str


class WeComOutboundRecord(SqsRecordModel):
    """An SQS record whose body is a JSON :class:`WeComOutboundPart`."""

    body: Json[WeComOutboundPart]  # Powertools' model types it str


@dataclass(frozen=True)
class WeComInboundDeps:
    """The inbound consumer's collaborators (built by ``wiring.build_wecom_inbound_function``):
    the turn's, the idempotency table, and the time kept back from the turn's LLM deadline for the
    outbox and the idempotency record (seconds)."""

    turns: WeComTurnDeps
    idempotency_table: str
    reserve_s: float = 10.0


@dataclass(frozen=True)
class WeComSenderDeps:
    """The outbox consumer's collaborators (built by ``wiring.build_wecom_sender_function``)."""

    delivery: WeComDeliveryDeps
    idempotency_table: str


def _idempotent(table: str, prefix: str, func: Any) -> tuple[IdempotencyConfig, Any]:
    """``func(key=...)`` under Powertools idempotency on ``key`` (a string) in ``table``."""
    config = IdempotencyConfig(expires_after_seconds=IDEMPOTENCY_TTL_S)
    wrapped = idempotent_function(
        data_keyword_argument="key", persistence_store=DynamoDBPersistenceLayer(table_name=table),
        key_prefix=prefix, config=config,
    )(func)
    return config, wrapped


def _count_failures(response: dict[str, Any], metric: str) -> dict[str, Any]:
    failed = len(response.get("batchItemFailures", []))
    if failed:
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=failed)
    return dict(response)


class WeComInboundWorker:
    """The inbound consumer's event handler: ``resolve(event, context)`` takes an SQS event and
    returns ``{"batchItemFailures": [...]}``."""

    def __init__(self, deps: WeComInboundDeps) -> None:
        self.deps = deps
        self.processor = BatchProcessor(event_type=EventType.SQS, model=WeComInboundRecord)
        self.config, self._answer = _idempotent(deps.idempotency_table, INBOUND_IDEMPOTENCY_PREFIX, self._turn)
        self._deadline: float | None = None

    def resolve(self, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        """Answer every record's message; the failed records go back to the queue."""
        self.config.register_lambda_context(context)
        left_s = context.get_remaining_time_in_millis() / 1000
        self._deadline = time.monotonic() + max(1.0, left_s - self.deps.reserve_s)
        response = process_partial_response(event=event, record_handler=self.record, processor=self.processor,
                                            context=context)
        return _count_failures(dict(response), "WeComInboundFailed")

    @tracer.capture_method(capture_response=False)
    def record(self, record: WeComInboundRecord) -> dict[str, Any]:
        """Run one message's turn (at most once per ``MsgId``); raise to fail this record only."""
        inbound = record.body
        try:
            outcome: dict[str, Any] = self._answer(key=inbound.idempotency_key, inbound=inbound)
        except Exception as exc:
            logger.warning("WeCom message not answered; the record returns to the queue",
                           extra={"project_id": inbound.project_id, "error": type(exc).__name__})
            raise
        metrics.add_metric(name=f"WeComInbound_{outcome['outcome']}", unit=MetricUnit.Count, value=1)
        return outcome

    def _turn(self, key: str, inbound: WeComInbound) -> dict[str, Any]:
        return answer_wecom_message(self.deps.turns, inbound, deadline=self._deadline)


class WeComSenderWorker:
    """The outbox consumer's event handler: ``resolve(event, context)`` takes a FIFO SQS event and
    returns ``{"batchItemFailures": [...]}`` (a failed part and the rest of its group)."""

    def __init__(self, deps: WeComSenderDeps) -> None:
        self.deps = deps
        self.processor = SqsFifoPartialProcessor(model=WeComOutboundRecord, skip_group_on_error=True)
        self.config, self._send = _idempotent(deps.idempotency_table, OUTBOX_IDEMPOTENCY_PREFIX, self._deliver)

    def resolve(self, event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        """Send every record's part; the failed ones (and what follows them in their group) return."""
        self.config.register_lambda_context(context)
        response = process_partial_response(event=event, record_handler=self.record, processor=self.processor,
                                            context=context)
        return _count_failures(dict(response), "WeComSendFailed")

    @tracer.capture_method(capture_response=False)
    def record(self, record: WeComOutboundRecord) -> dict[str, Any]:
        """Send one part (at most once); raise to fail it (and the rest of its group)."""
        part = record.body
        try:
            outcome: dict[str, Any] = self._send(key=part.idempotency_key, part=part)
        except Exception as exc:
            logger.warning("WeCom message part not sent; the record returns to the queue",
                           extra={"project_id": part.project_id, "error": type(exc).__name__,
                                  "code": getattr(exc, "code", None)})
            raise
        metrics.add_metric(name=f"WeComParts_{outcome['outcome']}", unit=MetricUnit.Count, value=1)
        return outcome

    def _deliver(self, key: str, part: WeComOutboundPart) -> dict[str, Any]:
        return {"outcome": deliver_part(self.deps.delivery, part)}


__all__ = [
    "INBOUND_IDEMPOTENCY_PREFIX", "OUTBOX_IDEMPOTENCY_PREFIX", "WeComInboundDeps", "WeComInboundRecord",
    "WeComInboundWorker", "WeComOutboundRecord", "WeComSenderDeps", "WeComSenderWorker",
]
