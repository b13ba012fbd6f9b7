"""Pytest fixtures of the shared test doubles.

Make them available to a suite with, in ``tests/conftest.py``::

    from tests.support.fixtures import messages_api  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.messages_api import MessagesAPIServer


@pytest.fixture
def messages_api() -> Iterator[MessagesAPIServer]:
    """A fresh scripted Messages-API server on 127.0.0.1, stopped after the test."""
    server = MessagesAPIServer().start()
    try:
        yield server
    finally:
        server.stop()
