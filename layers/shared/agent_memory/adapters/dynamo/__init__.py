"""DynamoDB adapters (PynamoDB): the storage ports of ``agent_memory.ports``.

- ``tables``: the models and :func:`~.tables.bind_tables`, the one way they get their tables;
- ``keys``: every partition and sort key; ``mappers``: every item <-> domain model conversion;
- ``access``: batch reads, transactions, conditional puts, SDK errors -> domain exceptions;
- one module per store: ``projects`` (project, hot memory, history book; the base of the
  others), ``chat`` (the chat turn), ``sessions``, ``jobs``, ``admin``, ``activity`` (fan-out and
  read-only views).
"""
