"""Fixtures of the job tests: a JobsRepository on the moto tables of template.yaml."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_botocore_session() -> Iterator[None]:
    """PynamoDB builds a new botocore session (and loads its data files again, ~0.2 s) for
    every model's connection; the job tests touch a dozen models per test, so they share one."""
    import moto  # noqa: F401  (registers its botocore handlers before the session is built)
    import pynamodb.connection.base as base

    shared = base.get_session()
    original = base.get_session
    base.get_session = lambda: shared
    yield
    base.get_session = original


@pytest.fixture
def jobs_repo(aws: dict[str, str]) -> Any:
    """``JobsRepository`` bound to the in-process moto tables (the ``aws`` fixture)."""
    from agent_memory.data.jobs_repository import JobsRepository

    return JobsRepository()
