"""Shared fixtures: AWS is moto (no account, no network), tables come from template.yaml."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

# Safe defaults before any boto3 client is created (never a real account).
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_SESSION_TOKEN", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
os.environ.setdefault("AWS_REGION", "eu-west-1")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "AgentMemoryTest")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "agent-memory-test")

from tests.support.fixtures import messages_api  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _local_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A local server a test starts (``python -m infra.local.server``) keeps its data in a
    directory of its own, never in the repository's ``.local/data`` (created by the server)."""
    import uuid

    base = tmp_path_factory.getbasetemp()
    monkeypatch.setenv("LOCAL_DATA_DIR", str(base / f"local-data-{uuid.uuid4().hex}"))


@dataclass
class FakeLambdaContext:
    """A Lambda context for handler tests; remaining time counts down from ``timeout_s``."""

    function_name: str = "test-fn"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:eu-west-1:123456789012:function:test-fn"
    aws_request_id: str = "req-test"
    timeout_s: float = 60.0

    def __post_init__(self) -> None:
        import time

        self._start = time.monotonic()

    def get_remaining_time_in_millis(self) -> int:
        import time

        return int((self.timeout_s - (time.monotonic() - self._start)) * 1000)


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture(autouse=True)
def _clear_metrics() -> Iterator[None]:
    from agent_memory.observability import metrics

    metrics.clear_metrics()
    yield
    metrics.clear_metrics()


@pytest.fixture
def aws() -> Iterator[dict[str, str]]:
    """moto in-process with the template's tables created and the PynamoDB models bound.

    Yields the {logical_id: table_name} map.
    """
    import boto3
    from moto import mock_aws

    from agent_memory.adapters.dynamo.tables import bind_tables
    from infra.template_model import create_tables, load_template

    with mock_aws():
        client = boto3.client("dynamodb", region_name=os.environ["AWS_REGION"])
        names = create_tables(client, load_template())
        bind_tables(
            memory_table=names["MemoryTable"],
            sessions_table=names["SessionsTable"],
            flow_log_table=names["FlowLogTable"],
        )
        yield names


@pytest.fixture
def repo(aws: dict[str, str]) -> Any:
    from agent_memory.adapters.dynamo.chat import ChatRepository

    return ChatRepository()


T0 = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)


# ------------------------------------------------------------------------- the local stack
# Here (not in tests/integration) because the browser tests use it too, and only one LocalStack
# may run in a process: every suite shares this session-scoped one.
@pytest.fixture(scope="session")
def local_stack() -> Iterator[Any]:
    """The local stack on free ports, demo data seeded, offline LLM.

    Isolated: moto runs as a child process and the stack's AWS environment is applied only while
    it starts and while a handler runs, so tests that use moto's ``mock_aws`` and ``bind_tables``
    in the same process are not affected by it (and vice versa).
    """
    from infra.local.stack import LocalStack

    with LocalStack(
        port=0,
        moto_port=0,
        isolated=True,
        anthropic_api_key="",
        env_overrides={"LLM_PROVIDER": "offline"},
    ) as stack:
        yield stack


@pytest.fixture(scope="session")
def api(local_stack: Any) -> Iterator[Any]:
    """A ``requests`` session with the dev user's bearer token (admin of both demo projects, a
    membership made in ``local_stack``): what tests use to call the local endpoint as an
    authenticated user."""
    from tests.support.auth import authorized_session

    with authorized_session() as session:
        yield session


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the ``summary`` properties tests recorded (``record_property("summary", ...)``: e.g. the
    schemathesis runs' operations, examples and failures), also from pytest-xdist workers."""
    lines = [
        str(value)
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for name, value in getattr(report, "user_properties", ())
        if name == "summary"
    ]
    if lines:
        terminalreporter.section("summaries")
        for line in lines:
            terminalreporter.line(line)


# ------------------------------------------------- no local stack serves an undocumented 5xx
def pytest_configure(config: Any) -> None:
    """A status log of its own for this pytest process (each xdist worker too): every local stack
    started from here on, and every server subprocess, appends its answers to it."""
    import tempfile

    from infra.local.gateway import STATUS_LOG_ENV

    handle, path = tempfile.mkstemp(prefix="local-stack-statuses-", suffix=".log")
    os.close(handle)
    os.environ[STATUS_LOG_ENV] = path


@pytest.fixture(scope="session", autouse=True)
def no_local_stack_served_an_undocumented_server_error() -> Iterator[None]:
    """After the last test of this process: fail when any local stack answered a 5xx other than the
    documented 502 / 503 / 504 (``tests.support.status_log``)."""
    yield
    from infra.local.gateway import STATUS_LOG_ENV
    from tests.support.status_log import undocumented_server_errors

    path = os.environ.get(STATUS_LOG_ENV, "")
    errors = undocumented_server_errors(path) if path else []
    if path and os.path.exists(path):
        os.unlink(path)
    if errors:
        pytest.fail("the local stack served undocumented server errors:\n" + "\n".join(errors[:50]), pytrace=False)
