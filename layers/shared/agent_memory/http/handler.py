"""What an HTTP function's handler module (``functions/<name>/app.py``) needs besides its event
handler: the Powertools logger and metrics, the correlation-id path of API Gateway HTTP API events,
and the Lambda context type. Re-exported here so the handlers import only ``agent_memory.http``,
``agent_memory.events`` and ``agent_memory.wiring`` (docs/architecture.md, "Layout").

No tracer here: the X-Ray SDK costs about a second of import time and the API function never
imports it (docs/architecture.md, "Cold start"); the chat function takes it from its routes'
module (``agent_memory.http.routes.chat``).
"""

from __future__ import annotations

from aws_lambda_powertools.logging.correlation_paths import API_GATEWAY_HTTP
from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.observability import logger, metrics

__all__ = ["API_GATEWAY_HTTP", "LambdaContext", "logger", "metrics"]
