"""The one place that creates the Powertools logger and metrics (and, separately, the tracer).

Never log message content, prompts, replies or secrets: log ids, counts and sizes.

The tracer lives in :mod:`agent_memory.tracing` because ``aws_xray_sdk`` costs about a
second of import time here: the no-LLM API function (health, context inspection) does not
import it and relies on the function's Active tracing segment instead (its cold import:
docs/architecture.md, "Cold start").
"""

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

#: ``MetricUnit`` and ``single_metric`` are re-exported so that the feature packages use metrics
#: without importing Powertools themselves (``.importlinter``: features import no vendor SDK).
__all__ = ["MetricUnit", "logger", "metrics", "single_metric"]

logger = Logger(service="agent-memory")
metrics = Metrics(namespace="AgentMemory", service="agent-memory")
