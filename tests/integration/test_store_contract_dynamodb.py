"""The storage ports' contracts on the DynamoDB adapters over the tables of template.yaml (moto
in-process): the same tests the in-memory fakes pass in ``tests/unit/test_store_contract.py``, so
the fakes the unit tests use behave as the adapters do."""

from __future__ import annotations

import pytest

from tests.support.store_contract import StoreContract, Stores


class TestDynamoRepositories(StoreContract):
    @pytest.fixture
    def stores(self, aws: dict[str, str]) -> Stores:
        from agent_memory.adapters.dynamo.activity import ActivityRepository
        from agent_memory.adapters.dynamo.admin import AdminRepository
        from agent_memory.adapters.dynamo.jobs import JobsRepository
        from agent_memory.adapters.dynamo.members import MemberRepository
        from agent_memory.adapters.dynamo.sessions import SessionsRepository

        sessions = SessionsRepository()
        return Stores(seed=sessions.projects, chat=sessions.chat, sessions=sessions, jobs=JobsRepository(),
                      admin=AdminRepository(), views=ActivityRepository(), members=MemberRepository())
