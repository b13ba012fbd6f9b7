"""WeCom inbound consumer (WeComInboundFunction): an SQS batch of checked WeCom messages -> each
a member's chat turn in their WeCom session, idempotent on the ``MsgId``, its answer queued on the
WeCom outbox (``agent_memory.events.wecom``). Message text is never logged."""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from typing import Any

from agent_memory.events.handler import LambdaContext, logger, metrics, tracer
from agent_memory.events.wecom import WeComInboundWorker
from agent_memory.wiring import build_wecom_inbound_function

app = WeComInboundWorker(build_wecom_inbound_function())


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS event -> ``{"batchItemFailures": [{"itemIdentifier": messageId}, ...]}``."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
