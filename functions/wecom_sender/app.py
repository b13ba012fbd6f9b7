"""WeCom sender (WeComSenderFunction): a FIFO SQS batch of message parts from the WeCom outbox ->
each sent once through WeCom's API (application message or group robot) under the egress policy
(``agent_memory.events.wecom``). Message text is never logged."""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from typing import Any

from agent_memory.events.handler import LambdaContext, logger, metrics, tracer
from agent_memory.events.wecom import WeComSenderWorker
from agent_memory.wiring import build_wecom_sender_function

app = WeComSenderWorker(build_wecom_sender_function())


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """FIFO SQS event -> ``{"batchItemFailures": [...]}`` (a failed part and the rest of its group)."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
