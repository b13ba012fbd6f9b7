"""``agent_memory.adapters.dynamo.pynamodb_internals``: the PynamoDB internals the adapters rely on
behave as that module says, on the installed PynamoDB; an upgrade fails here first, naming what to
re-check."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import pynamodb
import pytest
from pynamodb.attributes import UnicodeAttribute
from pynamodb.connection import Connection, TableConnection
from pynamodb.models import Model

from agent_memory.adapters.dynamo import pynamodb_internals
from agent_memory.adapters.dynamo.pynamodb_internals import (
    CHECKED_VERSION,
    create_client,
    forget_connection,
    model_connection,
)

REPO = Path(__file__).resolve().parents[2]

RECHECK = (
    "agent_memory/adapters/dynamo/pynamodb_internals.py was checked against PynamoDB {checked}; {found}. "
    "Re-check in the new version: Model._get_connection() still returns the model's cached TableConnection "
    "built from Model.Meta; TableConnection.connection is still the low-level Connection; "
    "Connection.dispatch(operation_name, operation_kwargs) still sends any operation and Connection.client "
    "still creates the botocore client; setting Model._connection = None still makes the next call reconnect "
    "from Meta. Then set CHECKED_VERSION."
)


class _Probe(Model):
    """A model of its own (never registered with the tables)."""

    class Meta:
        table_name = "probe-a"
        region = "eu-west-1"

    pk = UnicodeAttribute(hash_key=True)


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Probe]]:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    _Probe.Meta.table_name = "probe-a"
    forget_connection(_Probe)
    yield _Probe
    forget_connection(_Probe)


def test_the_installed_and_the_pinned_pynamodb_are_the_version_the_module_was_checked_against() -> None:
    pinned = re.search(r"^pynamodb==(\S+)$", (REPO / "requirements.txt").read_text(), re.MULTILINE)
    assert pinned is not None, "requirements.txt pins no pynamodb version"
    found = f"requirements.txt pins {pinned.group(1)}, {pynamodb.__version__} is installed"
    assert pinned.group(1) == pynamodb.__version__ == CHECKED_VERSION, RECHECK.format(
        checked=CHECKED_VERSION, found=found)


def test_a_models_connection_is_the_low_level_connection_of_its_cached_table_connection(
    probe: type[_Probe],
) -> None:
    table_connection = probe._get_connection()
    assert isinstance(table_connection, TableConnection), RECHECK.format(
        checked=CHECKED_VERSION, found="Model._get_connection() no longer returns a TableConnection")
    assert probe._get_connection() is table_connection, "the table connection is no longer cached on the model"
    connection = model_connection(probe)
    assert isinstance(connection, Connection) and connection is table_connection.connection
    assert list(inspect.signature(connection.dispatch).parameters) == ["operation_name", "operation_kwargs"], (
        RECHECK.format(checked=CHECKED_VERSION, found="Connection.dispatch has another signature"))


def test_forgetting_the_connection_reconnects_with_the_meta_as_it_is_then(probe: type[_Probe]) -> None:
    first = probe._get_connection()
    assert first.table_name == "probe-a"
    probe.Meta.table_name = "probe-b"
    forget_connection(probe)
    assert probe._connection is None
    second = probe._get_connection()
    assert second is not first and second.table_name == "probe-b"


def test_create_client_reads_the_endpoint_of_the_environment_when_it_is_called(
    probe: type[_Probe], monkeypatch: pytest.MonkeyPatch,
) -> None:
    create_client(probe)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:10")
    # The client made above keeps the endpoint of its moment; a new connection reads the new one.
    assert model_connection(probe).client.meta.endpoint_url == "http://127.0.0.1:9"
    forget_connection(probe)
    create_client(probe)
    assert model_connection(probe).client.meta.endpoint_url == "http://127.0.0.1:10"


def test_no_other_module_of_the_layer_or_the_local_runtime_uses_pynamodb_internals() -> None:
    internal = re.compile(r"\._get_connection\b|\._connection\b")
    module = Path(pynamodb_internals.__file__).resolve()
    users = sorted(
        str(path.relative_to(REPO))
        for folder in (REPO / "layers" / "shared" / "agent_memory", REPO / "infra", REPO / "functions")
        for path in folder.rglob("*.py")
        if path.resolve() != module and internal.search(path.read_text("utf-8"))
    )
    assert users == []
