"""Runtime configuration, read once from the environment at cold start.

Plain pydantic validation of ``os.environ`` (by alias): pydantic-settings would add about
0.4 s of import time to every cold start for no feature used here.

Logic never reads ``os.environ``; handlers build a :class:`Settings` and pass the values
they need. A missing or invalid variable fails the cold start with a message naming it.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class MissingSetting(ValueError):
    """A variable a function needs is not set (the message names it and says why)."""


class Settings(BaseModel):
    """Validated environment of every function.

    Units: token caps are in estimated tokens (see ``agent_memory.domain.text.estimate_tokens``),
    byte limits in UTF-8 bytes, durations in seconds. Time zone names are IANA names.
    """

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    stage: str = Field(default="dev", alias="STAGE")
    flow_log_table: str = Field(alias="FLOW_LOG_TABLE")
    memory_table: str = Field(alias="MEMORY_TABLE")
    sessions_table: str = Field(alias="SESSIONS_TABLE")
    # Powertools idempotency (the chat function's Idempotency-Key): the table, and Powertools' own
    # switch, read here so that a missing table is reported at cold start (see idempotency_table_name).
    idempotency_table: str = Field(default="", alias="IDEMPOTENCY_TABLE")
    idempotency_disabled: bool = Field(default=False, alias="POWERTOOLS_IDEMPOTENCY_DISABLED")

    llm_provider: Literal["anthropic", "offline"] = Field(default="offline", alias="LLM_PROVIDER")
    chat_model_id: str = Field(default="claude-sonnet-4-5", alias="CHAT_MODEL_ID")
    fast_model_id: str = Field(default="claude-haiku-4-5", alias="FAST_MODEL_ID")
    anthropic_secret_name: str = Field(default="", alias="ANTHROPIC_SECRET_NAME")
    anthropic_base_url: str | None = Field(default=None, alias="ANTHROPIC_BASE_URL")
    llm_max_retries: int = Field(default=2, ge=0, le=5, alias="LLM_MAX_RETRIES")
    llm_max_output_tokens: int = Field(default=1024, ge=64, le=8192, alias="LLM_MAX_OUTPUT_TOKENS")
    intent_classifier: Literal["rules", "llm"] = Field(default="rules", alias="INTENT_CLASSIFIER")

    hot_memory_token_cap: int = Field(default=2000, ge=100, alias="HOT_MEMORY_TOKEN_CAP")
    history_weeks_cap: int = Field(default=50, ge=1, le=520, alias="HISTORY_WEEKS_CAP")
    history_token_budget: int = Field(default=120_000, ge=1000, alias="HISTORY_TOKEN_BUDGET")
    recent_turns: int = Field(default=10, ge=0, le=50, alias="RECENT_TURNS")
    max_message_bytes: int = Field(default=32_768, ge=1024, le=262_144, alias="MAX_MESSAGE_BYTES")
    project_time_zone: str = Field(default="Asia/Shanghai", alias="PROJECT_TIME_ZONE")
    flow_log_retention_days: int = Field(default=0, ge=0, alias="FLOW_LOG_RETENTION_DAYS")
    api_gateway_timeout_s: float = Field(default=30.0, gt=0, alias="API_GATEWAY_TIMEOUT_S")
    response_reserve_s: float = Field(default=3.0, ge=0.5, alias="RESPONSE_RESERVE_S")
    react_max_steps: int = Field(default=4, ge=1, le=10, alias="REACT_MAX_STEPS")
    clinical_data_source: Literal["demo"] = Field(default="demo", alias="CLINICAL_DATA_SOURCE")
    clinical_data_file: str = Field(default="", alias="CLINICAL_DATA_FILE")

    # Session memory: symptom extractor and rolling summary ("llm" needs the anthropic
    # provider; otherwise the offline rules / extractive summary are used), transcript caps.
    symptom_extractor: Literal["rules", "llm"] = Field(default="rules", alias="SYMPTOM_EXTRACTOR")
    session_summariser: Literal["extractive", "llm"] = Field(default="llm", alias="SESSION_SUMMARISER")
    max_transcript_bytes: int = Field(default=1_000_000, ge=1024, le=2_000_000, alias="MAX_TRANSCRIPT_BYTES")
    max_report_bytes: int = Field(default=100_000, ge=1024, le=250_000, alias="MAX_REPORT_BYTES")

    # Background jobs: the fan-out queue (dispatcher) and the admin-alert topic (worker; read by
    # ``agent_memory.wiring.build_job_deps``). Empty = not configured.
    job_queue_url: str = Field(default="", alias="JOB_QUEUE_URL")
    alert_topic_arn: str = Field(default="", alias="ADMIN_ALERTS_TOPIC_ARN")

    def idempotency_table_name(self) -> str:
        """The table Powertools idempotency stores the chat function's Idempotency-Key results in.

        With idempotency off (``POWERTOOLS_IDEMPOTENCY_DISABLED=true``, development only) Powertools
        never reads or writes the table, so it may be empty then.

        Raises:
            MissingSetting: ``IDEMPOTENCY_TABLE`` is empty while idempotency is on.
        """
        if not self.idempotency_table and not self.idempotency_disabled:
            raise MissingSetting(
                "IDEMPOTENCY_TABLE is required: the chat function stores Idempotency-Key results there "
                "(set POWERTOOLS_IDEMPOTENCY_DISABLED=true to run without idempotency, in development only)"
            )
        return self.idempotency_table


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Return the process-wide settings (validated on first call, i.e. at cold start).

    Raises:
        pydantic.ValidationError: naming each missing or invalid variable.
    """
    return Settings.model_validate(dict(os.environ))
