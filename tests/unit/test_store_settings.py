"""The stage and table settings (``agent_memory.store_settings``), which the full settings extend."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_memory.config import Settings
from agent_memory.store_settings import StoreSettings

TABLES = {"FLOW_LOG_TABLE": "dev-FlowLog", "MEMORY_TABLE": "dev-Memory", "SESSIONS_TABLE": "dev-Sessions"}


def test_store_settings_read_the_tables_and_default_the_stage() -> None:
    # Given the table variables and others the store settings do not know
    settings = StoreSettings.model_validate({**TABLES, "LLM_PROVIDER": "nonsense"})
    # Then they hold the tables and the default stage, and ignore the rest
    assert (settings.stage, settings.flow_log_table, settings.memory_table, settings.sessions_table) == (
        "dev", "dev-FlowLog", "dev-Memory", "dev-Sessions",
    )


def test_a_missing_table_fails_naming_its_variable() -> None:
    with pytest.raises(ValidationError, match="MEMORY_TABLE"):
        StoreSettings.model_validate({"STAGE": "prod", "FLOW_LOG_TABLE": "f", "SESSIONS_TABLE": "s"})


def test_the_full_settings_are_store_settings_with_everything_else() -> None:
    # Given one environment, When both models read it
    env = {**TABLES, "STAGE": "prod", "HOT_MEMORY_TOKEN_CAP": "3000"}
    full, store = Settings.model_validate(env), StoreSettings.model_validate(env)
    # Then the full settings are store settings with the same values, plus the rest, equally frozen
    assert isinstance(full, StoreSettings)
    assert StoreSettings.model_validate(full.model_dump(by_alias=True)) == store
    assert full.hot_memory_token_cap == 3000
    with pytest.raises(ValidationError, match="frozen"):
        full.stage = "dev"  # type: ignore[misc]  # the assignment a frozen model refuses, on purpose
