"""Fixtures of the job tests: a JobsRepository on the moto tables of template.yaml."""

from __future__ import annotations

from typing import Any

import pytest

_SHARED_SESSION: Any = None


@pytest.fixture(autouse=True)
def _one_botocore_session(monkeypatch: pytest.MonkeyPatch) -> None:
    """PynamoDB builds a new botocore session (and loads its data files again, ~0.2 s) for
    every model's connection; the job tests touch a dozen models per test, so they share one."""
    global _SHARED_SESSION
    import moto  # noqa: F401  (registers its botocore handlers before the session is built)
    import pynamodb.connection.base as base

    if _SHARED_SESSION is None:
        _SHARED_SESSION = base.get_session()
    shared = _SHARED_SESSION
    monkeypatch.setattr(base, "get_session", lambda: shared)


@pytest.fixture
def jobs_repo(aws: dict[str, str]) -> Any:
    """``JobsRepository`` bound to the in-process moto tables (the ``aws`` fixture)."""
    from agent_memory.adapters.dynamo.jobs import JobsRepository

    return JobsRepository()
