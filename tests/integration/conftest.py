"""Integration fixtures: the whole local stack (moto + template tables + real handlers + HTTP).

``local_stack`` is session-scoped and isolated: moto runs as a child process and the stack's AWS
environment is applied only while it starts and while a handler runs, so tests that use moto's
``mock_aws`` and ``bind_tables`` in the same process are not affected by it (and vice versa).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from infra.local.stack import LocalStack


@pytest.fixture(scope="session")
def local_stack() -> Iterator[LocalStack]:
    """The local stack on free ports, demo data seeded, offline LLM."""
    with LocalStack(
        port=0,
        moto_port=0,
        moto_mode="process",
        isolated=True,
        anthropic_api_key="",
        env_overrides={"LLM_PROVIDER": "offline"},
    ) as stack:
        yield stack
