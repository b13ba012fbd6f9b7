"""The settings every function needs: its stage, the three tables its stores are bound to, and the
hot memory's token cap (every view of the hot memory states it).

:class:`agent_memory.config.Settings` (every function's full configuration) extends
:class:`StoreSettings`. A function that needs nothing more, the API function, validates only
these at cold start (:func:`get_store_settings`) and never builds the full model, whose ~50
validated fields were a tenth of its cold import (``make bench``: import_ratio_no_llm_handler).
A missing or invalid variable fails the cold start with a message naming it.
"""

from __future__ import annotations

import os
from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field


class StoreSettings(BaseModel):
    """The stage, the DynamoDB table names (``!Ref`` of ``template.yaml``) and the hot-memory token
    cap (estimated tokens), by variable name."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    stage: str = Field(default="dev", alias="STAGE")
    flow_log_table: str = Field(alias="FLOW_LOG_TABLE")
    memory_table: str = Field(alias="MEMORY_TABLE")
    sessions_table: str = Field(alias="SESSIONS_TABLE")
    hot_memory_token_cap: int = Field(default=2000, ge=100, alias="HOT_MEMORY_TOKEN_CAP")


@lru_cache(maxsize=1)
def get_store_settings() -> StoreSettings:
    """Return the process-wide store settings (validated on first call, i.e. at cold start).

    Raises:
        pydantic.ValidationError: naming each missing or invalid variable.
    """
    return StoreSettings.model_validate(dict(os.environ))


__all__ = ["StoreSettings", "get_store_settings"]
