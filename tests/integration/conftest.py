"""Integration fixtures.

``local_stack`` (the whole local stack: moto + template tables + real handlers + HTTP) and ``api``
(a ``requests`` session carrying the dev user's bearer token) live in ``tests/conftest.py``: the
browser tests share them, and only one local stack may run in a process. Other tokens:
``tests.support.auth.bearer``.
"""

from collections.abc import Iterator

import pytest

from tests.support.leaks import collected_logs  # noqa: F401 (a fixture: every log record of a test)


@pytest.fixture(autouse=True)
def fresh_parameter_providers() -> Iterator[None]:
    """Powertools Parameters keeps one provider per kind (with its boto3 client, bound to the
    endpoint and region of the test that first used it) and a value cache; each test starts
    without either, as a new Lambda container would."""
    from aws_lambda_powertools.utilities.parameters import base

    base.DEFAULT_PROVIDERS.clear()
    base.clear_caches()
    yield
    base.DEFAULT_PROVIDERS.clear()
    base.clear_caches()
