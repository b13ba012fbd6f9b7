"""The storage ports' contracts on the in-memory fakes the unit tests use (``tests/fakes.py``);
the same tests run on the DynamoDB adapters in ``tests/integration/test_store_contract_dynamodb.py``."""

from __future__ import annotations

import pytest

from tests.fakes import InMemoryStore
from tests.support.store_contract import StoreContract, Stores


class TestInMemoryStore(StoreContract):
    @pytest.fixture
    def stores(self) -> Stores:
        store = InMemoryStore()
        return Stores(seed=store, chat=store, sessions=store, jobs=store, admin=store, views=store, members=store)
