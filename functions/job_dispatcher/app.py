"""Job dispatcher (JobDispatcherFunction): EventBridge Scheduler's input -> one SQS message per
project due (``agent_memory.events.dispatcher``)."""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from typing import Any

from agent_memory.events.dispatcher import JobDispatcher
from agent_memory.events.handler import LambdaContext, logger, metrics, tracer
from agent_memory.wiring import build_job_dispatcher

app = JobDispatcher(build_job_dispatcher())


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Enqueue the job of ``event`` for every project due; returns the dispatch report (counts)."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
