"""Every answer of the local stack lands in this process's status log (``LOCAL_STACK_STATUS_LOG``),
which ``tests/conftest.py`` checks for undocumented 5xx after the last test."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import requests

from infra.local.gateway import STATUS_LOG_ENV
from infra.local.stack import LocalStack


def test_the_local_stack_logs_every_answers_status_without_query_or_body(local_stack: LocalStack) -> None:
    # Given: this process's status log
    log = Path(os.environ[STATUS_LOG_ENV])
    marker = uuid.uuid4().hex

    # When: the stack answers a request (a 404 for an unknown route, with a query string)
    response = requests.get(f"{local_stack.base_url}/v1/nothing-{marker}?secret=x", timeout=30)

    # Then: its status, method and path are logged, never the query string
    assert response.status_code == 404
    lines = [line for line in log.read_text(encoding="utf-8").splitlines() if marker in line]
    assert lines == [f"404 GET /v1/nothing-{marker} [-]"]
