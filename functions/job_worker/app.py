"""Job worker (JobWorkerFunction): an SQS batch of job requests -> one job per record from the one
job table, erasures included, with partial batch failures (``agent_memory.events.jobs``)."""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from typing import Any

from agent_memory.events.handler import LambdaContext, logger, metrics, tracer
from agent_memory.events.jobs import JobWorker
from agent_memory.wiring import build_job_worker

app = JobWorker(build_job_worker())


@logger.inject_lambda_context(log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """SQS event -> ``{"batchItemFailures": [{"itemIdentifier": messageId}, ...]}``."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
