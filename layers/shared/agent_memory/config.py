"""Runtime configuration, read once from the environment at cold start.

Plain pydantic validation of ``os.environ`` (by alias): pydantic-settings would add about
0.4 s of import time to every cold start for no feature used here.

Logic never reads ``os.environ``; handlers build a :class:`Settings` and pass the values
they need. A missing or invalid variable fails the cold start with a message naming it. The
stage and the table names are :class:`~agent_memory.store_settings.StoreSettings`, which
:class:`Settings` extends (the API function reads only those).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any, Literal

from pydantic import Field, field_validator

from agent_memory.store_settings import StoreSettings

#: ``output_config.effort`` values (the Messages API's; mirrors ``agent_memory.domain.llm.Effort``,
#: which config may not import: docs/architecture.md, "Layout: a one-way house").
EffortSetting = Literal["low", "medium", "high", "xhigh", "max"]

#: The default chat and fast models (Anthropic API ids) and their Amazon Bedrock counterparts. A test
#: (tests/infra) fails when one of them is in the installed SDK's list of deprecated models.
DEFAULT_CHAT_MODEL_ID = "claude-sonnet-5-5"
DEFAULT_FAST_MODEL_ID = "claude-haiku-5-5"
DEFAULT_BEDROCK_CHAT_MODEL_ID = "anthropic.claude-sonnet-5-5"
DEFAULT_BEDROCK_FAST_MODEL_ID = "anthropic.claude-haiku-5-5"

#: Minimum cacheable prompt length (tokens) per model family and generation, most specific first:
#: a prefix up to a ``cache_control`` breakpoint shorter than this is neither written nor read.
#: Values as Anthropic publishes them per model; a 5.5 model whose figure is not published yet takes
#: its family's latest published one (Opus 5 / Fable 5 / Mythos 5: 512; Sonnet 5: 1024; Haiku 4.5: 4096).
_MIN_CACHEABLE_TOKENS: tuple[tuple[str, tuple[int, int], int], ...] = (
    # (family, (major, minor) at or above which the value applies, tokens)
    ("opus", (5, 0), 512),
    ("fable", (5, 0), 512),
    ("mythos", (5, 0), 512),
    ("sonnet", (5, 0), 1024),
    ("haiku", (4, 5), 4096),
    ("opus", (4, 8), 1024),
    ("opus", (4, 7), 2048),
    ("opus", (4, 5), 4096),
    ("opus", (4, 0), 1024),
    ("sonnet", (3, 7), 1024),
    ("haiku", (3, 0), 2048),
)
#: Unknown ids (test doubles, future families): the largest published minimum, so that no breakpoint is
#: placed where it could never be written.
_MIN_CACHEABLE_FALLBACK = 4096
_MODEL_ID = re.compile(
    r"^(?:[a-z]{2,6}\.)?(?:anthropic\.)?claude-(?P<family>[a-z]+)-(?P<major>\d)(?:-(?P<minor>\d))?(?![0-9])"
)


def model_family(model_id: str) -> tuple[str, int, int] | None:
    """``(family, major, minor)`` of a Claude model id (Anthropic API or Bedrock form), else None.

    ``claude-sonnet-5-5`` -> ``("sonnet", 5, 5)``; ``global.anthropic.claude-haiku-5-5`` ->
    ``("haiku", 5, 5)``; ``claude-opus-4-20250514`` -> ``("opus", 4, 0)`` (a date is not a minor version).
    """
    match = _MODEL_ID.match(model_id.strip().lower())
    if match is None:
        return None
    return match["family"], int(match["major"]), int(match["minor"] or 0)


def min_cacheable_tokens(model_id: str) -> int:
    """The minimum cacheable prompt length of ``model_id``, in tokens (see ``_MIN_CACHEABLE_TOKENS``).

    A cache breakpoint only pays when the prompt up to it is at least this long; below it the API
    neither writes nor reads the cache (docs/architecture.md, "LLM calls").
    """
    parsed = model_family(model_id)
    if parsed is None:
        return _MIN_CACHEABLE_FALLBACK
    family, major, minor = parsed
    for table_family, since, tokens in _MIN_CACHEABLE_TOKENS:
        if family == table_family and (major, minor) >= since:
            return tokens
    return _MIN_CACHEABLE_FALLBACK


class MissingSetting(ValueError):
    """A variable a function needs is not set (the message names it and says why)."""


class Settings(StoreSettings):
    """Validated environment of every function: the stage and tables (:class:`StoreSettings`,
    whose model configuration it keeps) and everything else.

    Units: token caps are in estimated tokens (see ``agent_memory.domain.text.estimate_tokens``),
    byte limits in UTF-8 bytes, durations in seconds. Time zone names are IANA names.
    """

    # Powertools idempotency (the chat function's Idempotency-Key): the table, and Powertools' own
    # switch, read here so that a missing table is reported at cold start (see idempotency_table_name).
    idempotency_table: str = Field(default="", alias="IDEMPOTENCY_TABLE")
    idempotency_disabled: bool = Field(default=False, alias="POWERTOOLS_IDEMPOTENCY_DISABLED")

    # The LLM: provider, models (with LLM_PROVIDER=bedrock, Bedrock model / inference-profile ids),
    # the API key's secret (anthropic only; re-read after ANTHROPIC_SECRET_MAX_AGE_S so that a rotated
    # key applies without a new version), retries and the output cap. Current models think before
    # answering and the thinking counts against max_tokens, so the cap leaves room for it.
    llm_provider: Literal["anthropic", "bedrock", "offline"] = Field(default="offline", alias="LLM_PROVIDER")
    chat_model_id: str = Field(default=DEFAULT_CHAT_MODEL_ID, alias="CHAT_MODEL_ID")
    fast_model_id: str = Field(default=DEFAULT_FAST_MODEL_ID, alias="FAST_MODEL_ID")
    anthropic_secret_name: str = Field(default="", alias="ANTHROPIC_SECRET_NAME")
    anthropic_secret_max_age_s: int = Field(default=300, ge=0, le=86_400, alias="ANTHROPIC_SECRET_MAX_AGE_S")
    anthropic_base_url: str | None = Field(default=None, alias="ANTHROPIC_BASE_URL")
    bedrock_base_url: str | None = Field(default=None, alias="ANTHROPIC_BEDROCK_BASE_URL")
    bedrock_region: str | None = Field(default=None, alias="BEDROCK_REGION")
    llm_max_retries: int = Field(default=2, ge=0, le=5, alias="LLM_MAX_RETRIES")
    llm_max_output_tokens: int = Field(default=8192, ge=1024, le=128_000, alias="LLM_MAX_OUTPUT_TOKENS")
    intent_classifier: Literal["rules", "llm"] = Field(default="rules", alias="INTENT_CLASSIFIER")

    # ``output_config.effort`` per task; empty (or "default") = the model's own default.
    llm_effort_chat: EffortSetting | None = Field(default="medium", alias="LLM_EFFORT_CHAT")
    llm_effort_intent: EffortSetting | None = Field(default="low", alias="LLM_EFFORT_INTENT")
    llm_effort_symptoms: EffortSetting | None = Field(default="low", alias="LLM_EFFORT_SYMPTOMS")
    llm_effort_summary: EffortSetting | None = Field(default="low", alias="LLM_EFFORT_SUMMARY")
    llm_effort_distill: EffortSetting | None = Field(default="medium", alias="LLM_EFFORT_DISTILL")
    llm_effort_archive: EffortSetting | None = Field(default="medium", alias="LLM_EFFORT_ARCHIVE")
    llm_effort_compact: EffortSetting | None = Field(default="low", alias="LLM_EFFORT_COMPACT")

    history_weeks_cap: int = Field(default=50, ge=1, le=520, alias="HISTORY_WEEKS_CAP")
    history_token_budget: int = Field(default=120_000, ge=1000, alias="HISTORY_TOKEN_BUDGET")
    recent_turns: int = Field(default=10, ge=0, le=50, alias="RECENT_TURNS")
    max_message_bytes: int = Field(default=32_768, ge=1024, le=262_144, alias="MAX_MESSAGE_BYTES")
    project_time_zone: str = Field(default="Asia/Shanghai", alias="PROJECT_TIME_ZONE")
    flow_log_retention_days: int = Field(default=0, ge=0, alias="FLOW_LOG_RETENTION_DAYS")
    #: Days a sessions-table item (session, message, diagnosis) is kept after its last write (its
    #: ``expires_at``, the table's TTL attribute); 0 = until erased (docs/architecture.md, "Data governance").
    session_retention_days: int = Field(default=0, ge=0, alias="SESSION_RETENTION_DAYS")
    api_gateway_timeout_s: float = Field(default=30.0, gt=0, alias="API_GATEWAY_TIMEOUT_S")
    response_reserve_s: float = Field(default=3.0, ge=0.5, alias="RESPONSE_RESERVE_S")
    react_max_steps: int = Field(default=4, ge=1, le=10, alias="REACT_MAX_STEPS")
    clinical_data_source: Literal["demo"] = Field(default="demo", alias="CLINICAL_DATA_SOURCE")
    clinical_data_file: str = Field(default="", alias="CLINICAL_DATA_FILE")
    # A project's own clinical source (Project.clinical_data, REDCap): its token secret's name must
    # start with this prefix (the chat role may read only those secrets).
    clinical_token_secret_prefix: str = Field(default="agent-memory/redcap/", alias="CLINICAL_TOKEN_SECRET_PREFIX")
    # The other service-owned project secrets (docs/architecture.md, "Project secrets"): their name
    # prefixes, the recovery window of a deletion (days) and the key new secrets are encrypted with.
    reminder_webhook_secret_prefix: str = Field(default="agent-memory/reminder-webhook/",
                                                alias="REMINDER_WEBHOOK_SECRET_PREFIX")
    channel_secret_prefix: str = Field(default="agent-memory/channel/", alias="CHANNEL_SECRET_PREFIX")
    secret_recovery_window_days: int = Field(default=7, ge=7, le=30, alias="SECRET_RECOVERY_WINDOW_DAYS")
    project_secrets_kms_key_arn: str = Field(default="", alias="PROJECT_SECRETS_KMS_KEY_ARN")
    # Egress policy (docs/architecture.md, "Egress policy"): the private hosts / CIDRs the operator
    # allows (EgressAllowPrivate); EGRESS_LOCAL_RUNTIME is set by the local runtime alone (loopback and
    # plain http to it), never by the template.
    egress_allow_private: str = Field(default="", alias="EGRESS_ALLOW_PRIVATE")
    egress_local_runtime: bool = Field(default=False, alias="EGRESS_LOCAL_RUNTIME")
    # The local runtime's DNS (it has no network): name=address pairs besides localhost; ignored in AWS.
    egress_local_hosts: str = Field(default="", alias="EGRESS_LOCAL_HOSTS")
    # The team console's sign-in (admin function): the Cognito Hosted UI's domain
    # (``<prefix>.auth.<region>.amazoncognito.com``, "" = none: token sign-in only) and its app
    # client id (the JWT audience the HTTP API checks).
    console_hosted_ui_domain: str = Field(
        default="", alias="CONSOLE_HOSTED_UI_DOMAIN", pattern=r"^([a-z0-9-]+(\.[a-z0-9-]+)+)?$"
    )
    console_client_id: str = Field(default="", alias="CONSOLE_CLIENT_ID")

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

    # Reminders (the cron skill): the schedule group, the delivery function and the role the
    # scheduler assumes to invoke it, the schedules' dead-letter queue, and the delivery topic.
    # Empty schedule group = no reminder tools.
    reminder_schedule_group: str = Field(default="", alias="REMINDER_SCHEDULE_GROUP")
    reminder_function_arn: str = Field(default="", alias="REMINDER_FUNCTION_ARN")
    reminder_scheduler_role_arn: str = Field(default="", alias="REMINDER_SCHEDULER_ROLE_ARN")
    reminder_dlq_arn: str = Field(default="", alias="REMINDER_DLQ_ARN")
    reminder_topic_arn: str = Field(default="", alias="REMINDER_TOPIC_ARN")
    reminder_max_active: int = Field(default=50, ge=1, le=1000, alias="REMINDER_MAX_ACTIVE")

    # WeCom (docs/architecture.md, "WeCom"): the callback's inbound queue, the outbox (FIFO) and
    # WeCom's API host (the local emulator in ``make run``). Empty outbox = no WeCom deliveries.
    wecom_inbound_queue_url: str = Field(default="", alias="WECOM_INBOUND_QUEUE_URL")
    wecom_outbox_queue_url: str = Field(default="", alias="WECOM_OUTBOX_QUEUE_URL")
    wecom_api_base_url: str = Field(default="https://qyapi.weixin.qq.com", alias="WECOM_API_BASE_URL")

    @field_validator(
        "llm_effort_chat",
        "llm_effort_intent",
        "llm_effort_symptoms",
        "llm_effort_summary",
        "llm_effort_distill",
        "llm_effort_archive",
        "llm_effort_compact",
        mode="before",
    )
    @classmethod
    def _empty_effort_is_default(cls, value: Any) -> Any:
        """An empty value, ``default`` or ``none`` leaves the effort to the model (None)."""
        if isinstance(value, str) and value.strip().lower() in ("", "default", "none"):
            return None
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("anthropic_base_url", "bedrock_base_url", "bedrock_region", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        """An empty variable (a template parameter left blank) means "not set"."""
        return None if isinstance(value, str) and not value.strip() else value

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
