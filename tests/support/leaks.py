"""Where a value could leak to, on a local stack: every log record of this process (the
containers' own lines come out on its stdout / stderr: ``capsys``) and every item of every table.
Used by the tests that prove no identifier is stored, sent or logged."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from infra.local.stack import LocalStack


class LogCollector(logging.Handler):
    """Keeps every record as its message and all its fields (``lines``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.getMessage()} {json.dumps(record.__dict__, default=str, ensure_ascii=False)}")


@pytest.fixture
def collected_logs() -> Iterator[LogCollector]:
    """Every log record of the root, ``agent-memory`` and ``infra.local`` loggers while the test runs."""
    handler = LogCollector()
    loggers = [logging.getLogger(), logging.getLogger("agent-memory"), logging.getLogger("infra.local")]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        yield handler
    finally:
        for lg in loggers:
            lg.removeHandler(handler)


def scan_all(stack: LocalStack) -> str:
    """Every item of every table of the stack, one JSON line each."""
    client = stack.aws_client("dynamodb")
    out: list[str] = []
    for table in stack.table_names.values():
        kwargs: dict[str, Any] = {"TableName": table}
        while True:
            page = client.scan(**kwargs)
            out += [json.dumps(item, ensure_ascii=False) for item in page["Items"]]
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return "\n".join(out)
