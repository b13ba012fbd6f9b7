"""Sessions function (SessionsFunction): sessions, patients, transcript import, diagnoses,
follow-up comparison, answer feedback and reminders; the routes are
``agent_memory.http.routes.sessions``. No LLM: this module never imports ``anthropic``.
"""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from typing import Any

from agent_memory.http.handler import API_GATEWAY_HTTP, LambdaContext, logger, metrics
from agent_memory.http.routes.sessions import sessions_app
from agent_memory.wiring import build_sessions_function

app = sessions_app(build_sessions_function())


@logger.inject_lambda_context(correlation_id_path=API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
