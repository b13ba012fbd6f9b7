"""Chat function (ChatFunction): ``POST /v1/projects/{project_id}/sessions/{session_id}/messages``
(members); the route and its idempotency are ``agent_memory.http.routes.chat``.

With SnapStart, everything at module level (including the anthropic import made by the wiring
when the provider is anthropic) is in the snapshot.
"""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from typing import Any

from agent_memory.http.handler import API_GATEWAY_HTTP, LambdaContext, logger, metrics
from agent_memory.http.routes.chat import chat_app, tracer
from agent_memory.wiring import build_chat_function

app = chat_app(build_chat_function())


@logger.inject_lambda_context(correlation_id_path=API_GATEWAY_HTTP, log_event=False)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
