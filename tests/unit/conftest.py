"""Unit tests run on the in-memory fakes of ``tests/fakes.py``: no AWS (no moto), no sockets.

Every test collected under ``tests/unit`` runs with sockets disabled (``pytest-socket``): a test
that opens one (an HTTP client, a local server, an AWS SDK call) fails, and belongs in
``tests/integration``. The ``aws`` fixture (moto) is refused here for the same reason.
"""

from __future__ import annotations

import pytest
from pytest_socket import disable_socket, enable_socket

from tests.fakes import InMemoryStore


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture of a unit test is set up: sockets off, and no moto."""
    disable_socket(allow_unix_socket=False)
    if "aws" in getattr(item, "fixturenames", ()):
        pytest.fail(
            "unit tests use the in-memory fakes (tests/fakes.py), not moto: move this test to tests/integration"
        )


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """After the unit test's teardown: sockets back on for whatever runs next in this process."""
    enable_socket()


@pytest.fixture
def store() -> InMemoryStore:
    """An empty in-memory store (every storage port)."""
    return InMemoryStore()
