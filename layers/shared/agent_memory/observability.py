"""The one place that creates the Powertools logger, tracer and metrics.

Never log message content, prompts, replies or secrets: log ids, counts and sizes.
"""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger(service="agent-memory")
tracer = Tracer(service="agent-memory")
metrics = Metrics(namespace="AgentMemory", service="agent-memory")
