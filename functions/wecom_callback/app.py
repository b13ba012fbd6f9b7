"""WeCom callback function (WeComCallbackFunction): ``GET|POST /v1/wecom/{project_id}/callback``,
no token (WeCom's signed, encrypted callback protocol with the project's channel secret); a message
is put on the inbound queue and acknowledged at once. The routes are
``agent_memory.http.routes.wecom_callback``. No table, no LLM; nothing of a request is logged."""

import gc

gc.disable()  # no cyclic GC pass while the modules load (docs/architecture.md, "Cold start")

from typing import Any

from agent_memory.http.handler import API_GATEWAY_HTTP, LambdaContext, logger, metrics
from agent_memory.http.routes.wecom_callback import wecom_callback_app
from agent_memory.wiring import build_wecom_callback_function

app = wecom_callback_app(build_wecom_callback_function())


@logger.inject_lambda_context(correlation_id_path=API_GATEWAY_HTTP, log_event=False)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point (API Gateway HTTP API, payload format 2.0)."""
    return app.resolve(event, context)


gc.freeze()  # what the modules built lives as long as the function: later collections skip it
gc.enable()
