"""Agent Memory Service shared package (deployed as the Lambda layer).

A one-way house (docs/architecture.md, "Layout"): handlers (functions/*) -> wiring -> feature
packages over ports -> domain; adapters (``agent_memory.adapters``, the only importers of
PynamoDB, boto3 clients and anthropic) implement the ports and are reached only through wiring.
"""

__version__ = "0.1.0"
