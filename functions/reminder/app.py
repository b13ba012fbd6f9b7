"""Reminder function (ReminderFunction): one firing of a reminder's EventBridge Scheduler schedule
(``agent_memory.events.reminders``). No LLM, no HTTP route; the reminder text is never logged."""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from typing import Any

from agent_memory.events.handler import LambdaContext, logger, metrics
from agent_memory.events.reminders import ReminderDelivery
from agent_memory.wiring import build_reminder_function

app = ReminderDelivery(build_reminder_function())


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Deliver one reminder; returns the outcome (status, ids, channels)."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
