"""Agent Memory Service shared package (deployed as the Lambda layer).

Direction of dependencies (see README "Architecture"):
handlers (functions/*) -> logic (this package, no AWS calls) -> data access
(``agent_memory.data``, the only module importing PynamoDB).
"""

__version__ = "0.1.0"
