"""What an event function's handler module (``functions/<name>/app.py``) needs besides its event
handler: the Powertools logger, metrics and tracer, and the Lambda context type. Re-exported here so
the handlers import only ``agent_memory.http``, ``agent_memory.events`` and ``agent_memory.wiring``
(docs/architecture.md, "Layout")."""

from __future__ import annotations

from aws_lambda_powertools.utilities.typing import LambdaContext

from agent_memory.observability import logger, metrics
from agent_memory.tracing import tracer

__all__ = ["LambdaContext", "logger", "metrics", "tracer"]
