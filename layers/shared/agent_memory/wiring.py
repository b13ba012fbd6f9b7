"""Cold-start wiring: settings -> the collaborators of each function, ONE builder per function.

Each handler calls its function's builder once at module level (so SnapStart snapshots the result)
and gives what it built to its event handler (``agent_memory.http.routes.<function>``) or event
handler (``agent_memory.events``); no other code chooses adapters. Every builder binds the
PynamoDB models to the configured tables first. The per-function builders (``build_*_function``,
``build_job_*``, ``build_reminder_function``) read the settings themselves; the smaller builders
below them take the settings (tests and ``make bench`` use them).

Each builder imports the modules of its own function, so a function loads only what it runs (the
api function's cold start would grow by about a quarter with every function's modules). The
``anthropic`` SDK is imported by :func:`build_llm` only, for the anthropic and bedrock providers: the
functions that never call an LLM (sessions, admin, api, dispatcher) never import it (a test imports the
sessions function in a fresh interpreter to check).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agent_memory.adapters.dynamo.tables import bind_tables

if TYPE_CHECKING:
    from agent_memory.adapters.dynamo.sessions import SessionsRepository
    from agent_memory.chat.turn import ChatDeps
    from agent_memory.config import Settings
    from agent_memory.consultation.session_memory import SessionMemory
    from agent_memory.consultation.sessions import SessionsDeps
    from agent_memory.events.dispatcher import DispatcherDeps
    from agent_memory.events.jobs import WorkerDeps
    from agent_memory.events.reminders import ReminderFunctionDeps
    from agent_memory.governance.erasure import GovernanceDeps
    from agent_memory.http.routes.admin import AdminFunctionDeps
    from agent_memory.http.routes.api import ApiFunctionDeps
    from agent_memory.http.routes.chat import ChatFunctionDeps
    from agent_memory.http.routes.governance import GovernanceFunctionDeps
    from agent_memory.http.routes.sessions import SessionsFunctionDeps
    from agent_memory.jobs.deps import JobDeps
    from agent_memory.ports import (
        ContextStore,
        FeedbackStore,
        LLMClient,
        MemberStore,
        Notifier,
        ReminderChannel,
        ReminderScheduler,
    )
    from agent_memory.reminders.service import ReminderDeps
    from agent_memory.store_settings import StoreSettings


def _bind_tables(settings: StoreSettings) -> None:
    """Point the PynamoDB models at the tables named in the settings."""
    bind_tables(
        memory_table=settings.memory_table,
        sessions_table=settings.sessions_table,
        flow_log_table=settings.flow_log_table,
    )


def build_members(settings: StoreSettings) -> MemberStore:
    """The projects and members store (``MemberRepository``): the route guard's membership lookup
    in every HTTP function, and the project and member routes of the admin function."""
    from agent_memory.adapters.dynamo.members import MemberRepository

    _bind_tables(settings)
    return MemberRepository()


def build_llm(settings: Settings) -> LLMClient:
    """The LLM client of ``LLM_PROVIDER``:

    - ``offline``: ``OfflineLLM()`` (no network);
    - ``anthropic``: ``AnthropicClient`` on the Claude API (``ANTHROPIC_BASE_URL`` if set), its API key
      read from Secrets Manager (``ANTHROPIC_SECRET_NAME``) through Powertools Parameters now and again
      whenever the cached value is older than ``ANTHROPIC_SECRET_MAX_AGE_S`` (a rotated key applies
      without publishing a new version);
    - ``bedrock``: ``BedrockClient`` (``AnthropicBedrock``, the function's IAM role, no key; region
      ``BEDROCK_REGION`` or the function's, endpoint ``ANTHROPIC_BEDROCK_BASE_URL`` if set).

    Raises:
        ValueError: the provider is ``anthropic`` but no secret name is configured, or the secret
            holds no key.
    """
    if settings.llm_provider == "offline":
        from agent_memory.adapters.llm.offline import OfflineLLM

        return OfflineLLM()
    # Imported here: the SDK is slow to import and only the real providers need it.
    if settings.llm_provider == "bedrock":
        from agent_memory.adapters.llm.anthropic import BedrockClient

        return BedrockClient(
            aws_region=settings.bedrock_region,
            base_url=settings.bedrock_base_url,
            max_retries=settings.llm_max_retries,
        )
    if not settings.anthropic_secret_name:
        raise ValueError("ANTHROPIC_SECRET_NAME is required when LLM_PROVIDER=anthropic")
    from agent_memory.adapters.llm.anthropic import AnthropicClient, SecretApiKey

    return AnthropicClient(
        SecretApiKey(settings.anthropic_secret_name, max_age_s=settings.anthropic_secret_max_age_s),
        base_url=settings.anthropic_base_url,
        max_retries=settings.llm_max_retries,
    )


def _real_llm(llm: LLMClient | None) -> LLMClient | None:
    """``llm`` unless it is missing or offline (the offline provider answers no structured call)."""
    return llm if llm is not None and llm.provider != "offline" else None


def build_session_memory(settings: Settings, repo: SessionsRepository, *, llm: LLMClient | None) -> SessionMemory:
    """Symptom extractor + rolling summariser. The LLM variants only with a real provider
    (``anthropic`` or ``bedrock``) and when configured; each falls back offline."""
    from agent_memory.consultation.session_memory import SessionMemory
    from agent_memory.consultation.summary import ExtractiveSummariser, LLMSummariser, Summariser
    from agent_memory.consultation.symptoms import LLMSymptomExtractor, RuleSymptomExtractor, SymptomExtractor

    rules = RuleSymptomExtractor()
    real = _real_llm(llm)
    extractor: SymptomExtractor = (
        LLMSymptomExtractor(real, settings.fast_model_id, fallback=rules, effort=settings.llm_effort_symptoms)
        if real is not None and settings.symptom_extractor == "llm"
        else rules
    )
    summariser: Summariser = (
        LLMSummariser(real, settings.fast_model_id, effort=settings.llm_effort_summary)
        if real is not None and settings.session_summariser == "llm"
        else ExtractiveSummariser()
    )
    return SessionMemory(
        extractor=extractor, summariser=summariser, patients=repo, reader=repo, recent_turns=settings.recent_turns
    )


def build_chat_deps(settings: Settings) -> ChatDeps:
    """The chat function: everything a turn needs (LLM provider, classifier, clinical data, caps)."""
    from agent_memory.adapters.clinical.demo import DemoClinicalData, load_clinical_file
    from agent_memory.adapters.clinical.redcap import RedcapSources
    from agent_memory.adapters.dynamo.chat import ChatRepository
    from agent_memory.adapters.dynamo.sessions import SessionsRepository
    from agent_memory.chat.intents import IntentClassifier, LLMIntentClassifier, RuleIntentClassifier
    from agent_memory.chat.prompt import PromptBudget
    from agent_memory.chat.turn import ChatConfig, ChatDeps
    from agent_memory.conversation.cache import SessionCache

    _bind_tables(settings)
    llm = build_llm(settings)
    rules = RuleIntentClassifier()
    classifier: IntentClassifier = (
        LLMIntentClassifier(llm, settings.fast_model_id, fallback=rules, effort=settings.llm_effort_intent)
        if settings.intent_classifier == "llm" and _real_llm(llm) is not None
        else rules
    )
    store = ChatRepository(session_retention_days=settings.session_retention_days)
    return ChatDeps(
        store=store,
        llm=llm,
        classifier=classifier,
        clinical=DemoClinicalData(load_clinical_file(settings.clinical_data_file)),
        clinical_sources=RedcapSources(token_secret_prefix=settings.clinical_token_secret_prefix),
        cache=SessionCache(max_messages=50),
        memory=build_session_memory(settings, SessionsRepository(chat=store), llm=llm),
        history=store.projects,
        reminders=build_reminder_deps(settings),
        config=ChatConfig(
            chat_model_id=settings.chat_model_id,
            max_output_tokens=settings.llm_max_output_tokens,
            max_message_bytes=settings.max_message_bytes,
            react_max_steps=settings.react_max_steps,
            flow_log_retention_days=settings.flow_log_retention_days,
            effort=settings.llm_effort_chat,
            budget=PromptBudget(
                hot_memory_tokens=settings.hot_memory_token_cap,
                history_weeks=settings.history_weeks_cap,
                history_tokens=settings.history_token_budget,
                recent_turns=settings.recent_turns,
            ),
        ),
    )


def build_sessions_deps(settings: Settings) -> SessionsDeps:
    """The sessions function: no LLM at all (rule extractor, extractive summary)."""
    from agent_memory.adapters.dynamo.sessions import SessionsRepository
    from agent_memory.consultation.sessions import SessionsConfig, SessionsDeps

    _bind_tables(settings)
    repo = SessionsRepository(session_retention_days=settings.session_retention_days)
    return SessionsDeps(
        store=repo,
        memory=build_session_memory(settings, repo, llm=None),
        config=SessionsConfig(
            max_message_bytes=settings.max_message_bytes,
            max_transcript_bytes=settings.max_transcript_bytes,
            max_report_bytes=settings.max_report_bytes,
            recent_turns=settings.recent_turns,
            flow_log_retention_days=settings.flow_log_retention_days,
        ),
    )


def build_feedback_store(settings: Settings) -> FeedbackStore:
    """The answer-feedback store (sessions function): ratings in the SessionsTable, events in the flow log."""
    from agent_memory.adapters.dynamo.feedback import FeedbackRepository

    _bind_tables(settings)
    return FeedbackRepository()


def build_reminder_deps(settings: Settings, *, scheduler_client: Any | None = None) -> ReminderDeps | None:
    """The reminder use cases' collaborators (chat tools, the reminder routes, the delivery): the
    reminder items in the MemoryTable and EventBridge Scheduler; None when no schedule group is
    configured (``REMINDER_SCHEDULE_GROUP``): then the chat offers no reminder tools."""
    if not settings.reminder_schedule_group:
        return None
    from agent_memory.adapters.dynamo.reminders import ReminderRepository
    from agent_memory.adapters.scheduler import EventBridgeReminderScheduler, SchedulerTarget
    from agent_memory.reminders.service import ReminderDeps

    _bind_tables(settings)
    target = SchedulerTarget(
        group=settings.reminder_schedule_group, function_arn=settings.reminder_function_arn,
        role_arn=settings.reminder_scheduler_role_arn, dlq_arn=settings.reminder_dlq_arn,
    )
    return ReminderDeps(
        store=ReminderRepository(), scheduler=EventBridgeReminderScheduler(target, client=scheduler_client),
        max_active=settings.reminder_max_active,
    )


def build_reminder_channel(settings: Settings, *, sns_client: Any | None = None) -> ReminderChannel:
    """The delivery channels of the ReminderFunction: the ``REMINDER_TOPIC_ARN`` topic and the
    project's webhook, its HMAC key read from Secrets Manager through Powertools Parameters."""
    from agent_memory.adapters.dynamo.reminders import ReminderRepository
    from agent_memory.adapters.reminder_channel import SnsWebhookChannel

    _bind_tables(settings)

    def secret_of(name: str) -> str:
        from aws_lambda_powertools.utilities import parameters

        return str(parameters.get_secret(name, max_age=300))

    return SnsWebhookChannel(settings.reminder_topic_arn, webhook_of=ReminderRepository().webhook,
                             secret_of=secret_of, sns_client=sns_client)


def build_governance_deps(settings: Settings) -> GovernanceDeps:
    """The governance function (and the worker's erase jobs): the admin store (project, hot memory,
    review queue), the erasure store with the idempotency table, the patients' references upkeep,
    the export and removal stores, the job queue for large erasures (``JOB_QUEUE_URL``; none:
    inline)."""
    from agent_memory.adapters.dynamo.admin import AdminRepository
    from agent_memory.adapters.dynamo.erasure import ErasureRepository
    from agent_memory.adapters.dynamo.export import ExportRepository
    from agent_memory.adapters.dynamo.patient_refs_upkeep import PatientRefsRepository
    from agent_memory.adapters.dynamo.removal import RemovalRepository
    from agent_memory.adapters.sqs import SqsJobQueue
    from agent_memory.governance.erasure import GovernanceDeps

    _bind_tables(settings)
    return GovernanceDeps(
        admin=AdminRepository(), erasures=ErasureRepository(idempotency_table=settings.idempotency_table),
        patient_refs=PatientRefsRepository(), exports=ExportRepository(), removals=RemovalRepository(),
        jobs=SqsJobQueue(settings.job_queue_url) if settings.job_queue_url else None,
        clock=lambda: datetime.now(UTC),
        schedules=_schedule_deleter(settings),
    )


def _schedule_deleter(settings: Settings) -> ReminderScheduler | None:
    """The reminder schedules of a removed project are deleted through this (only ``delete`` is
    used: no target function, role or DLQ is needed); None without ``REMINDER_SCHEDULE_GROUP``."""
    if not settings.reminder_schedule_group:
        return None
    from agent_memory.adapters.scheduler import EventBridgeReminderScheduler, SchedulerTarget

    return EventBridgeReminderScheduler(SchedulerTarget(
        group=settings.reminder_schedule_group, function_arn="", role_arn="", dlq_arn="",
    ))


def build_job_deps(
    settings: Settings,
    *,
    notifier: Notifier | None = None,
    alert_topic_arn: str | None = None,
    sns_client: Any | None = None,
) -> JobDeps:
    """The job worker: everything the jobs need.

    - store: ``JobsRepository`` on the tables named in the settings;
    - llm: the Claude client when ``LLM_PROVIDER`` is ``anthropic`` or ``bedrock``, else None (the
      rule-based extractor, offline compactor and extractive summary are used);
    - notifier: ``notifier`` if given; else the SNS adapter on ``alert_topic_arn`` (default: the
      settings' ``ADMIN_ALERTS_TOPIC_ARN``); else a notifier that only logs (local runs);
    - caps: the hot-memory cap, the fast model id and the output cap from the settings.
    """
    from agent_memory.adapters.dynamo.jobs import JobsRepository
    from agent_memory.adapters.sns import SnsNotifier
    from agent_memory.jobs.deps import JobCaps, JobDeps, utc_now
    from agent_memory.jobs.notifier import LoggingNotifier

    _bind_tables(settings)
    llm = build_llm(settings) if settings.llm_provider != "offline" else None
    topic = settings.alert_topic_arn if alert_topic_arn is None else alert_topic_arn
    if notifier is None:
        notifier = SnsNotifier(topic, client=sns_client) if topic else LoggingNotifier()
    return JobDeps(
        store=JobsRepository(),
        llm=llm,
        notifier=notifier,
        clock=utc_now,
        caps=JobCaps(
            hot_memory_token_cap=settings.hot_memory_token_cap,
            llm_model_id=settings.fast_model_id,
            llm_max_output_tokens=settings.llm_max_output_tokens,
            distill_effort=settings.llm_effort_distill,
            archive_effort=settings.llm_effort_archive,
            compact_effort=settings.llm_effort_compact,
        ),
    )


# ------------------------------------------------------------------------------ one per function
def build_api_function() -> ApiFunctionDeps:
    """The API function: read-only stores of the project views and (made on first use) of the turn
    contexts, the guard's membership lookup, the stage. Reads only the store settings (the stage
    and the tables: docs/architecture.md, "Cold start")."""
    from agent_memory.adapters.dynamo.activity import ActivityRepository
    from agent_memory.http.routes.api import ApiFunctionDeps
    from agent_memory.store_settings import get_store_settings

    settings = get_store_settings()
    _bind_tables(settings)
    return ApiFunctionDeps(
        views=ActivityRepository(), contexts=functools.cache(_context_store), members=build_members(settings),
        stage=settings.stage, hot_memory_token_cap=settings.hot_memory_token_cap,
    )


def _context_store() -> ContextStore:
    """The turn-context store of the api function (``ApiFunctionDeps.contexts``)."""
    from agent_memory.adapters.dynamo.chat import ChatRepository

    return ChatRepository()


def build_chat_function() -> ChatFunctionDeps:
    """The chat function: the turn's collaborators (:func:`build_chat_deps`), the guard's
    membership lookup, the idempotency table and the turn's time budget."""
    from agent_memory.config import get_settings
    from agent_memory.http.routes.chat import ChatFunctionDeps

    settings = get_settings()
    return ChatFunctionDeps(
        chat=build_chat_deps(settings), members=build_members(settings),
        idempotency_table=settings.idempotency_table_name(),
        api_gateway_timeout_s=settings.api_gateway_timeout_s, response_reserve_s=settings.response_reserve_s,
    )


def build_sessions_function() -> SessionsFunctionDeps:
    """The sessions function: sessions, feedback and reminder use cases' collaborators (no LLM)."""
    from agent_memory.config import get_settings
    from agent_memory.http.routes.sessions import SessionsFunctionDeps

    settings = get_settings()
    return SessionsFunctionDeps(
        sessions=build_sessions_deps(settings), feedback=build_feedback_store(settings),
        reminders=build_reminder_deps(settings), members=build_members(settings),
        flow_log_retention_days=settings.flow_log_retention_days,
    )


def build_admin_function() -> AdminFunctionDeps:
    """The admin function: the admin store, the projects and members store, the hot-memory cap,
    the REDCap token secrets' prefix, the clock, the console's Hosted UI (domain, client id)."""
    from agent_memory.adapters.dynamo.admin import AdminRepository
    from agent_memory.config import get_settings
    from agent_memory.http.routes.admin import AdminFunctionDeps

    settings = get_settings()
    _bind_tables(settings)
    return AdminFunctionDeps(
        store=AdminRepository(), members=build_members(settings), hot_memory_token_cap=settings.hot_memory_token_cap,
        clinical_token_secret_prefix=settings.clinical_token_secret_prefix, clock=lambda: datetime.now(UTC),
        hosted_ui_domain=settings.console_hosted_ui_domain or None,
        console_client_id=settings.console_client_id or None,
    )


def build_governance_function() -> GovernanceFunctionDeps:
    """The governance function: the governance use cases' collaborators, the guard's lookup."""
    from agent_memory.config import get_settings
    from agent_memory.http.routes.governance import GovernanceFunctionDeps

    settings = get_settings()
    return GovernanceFunctionDeps(governance=build_governance_deps(settings), members=build_members(settings))


def build_job_dispatcher() -> DispatcherDeps:
    """The job dispatcher: the activity index, the job queue (``JOB_QUEUE_URL``), the default
    project time zone of a schedule's payload."""
    from agent_memory.adapters.dynamo.activity import ActivityRepository
    from agent_memory.adapters.sqs import SqsJobQueue
    from agent_memory.config import get_settings
    from agent_memory.events.dispatcher import DispatcherDeps

    settings = get_settings()
    _bind_tables(settings)
    return DispatcherDeps(
        activity=ActivityRepository(), sender=SqsJobQueue(settings.job_queue_url),
        default_time_zone=settings.project_time_zone,
    )


def build_job_worker() -> WorkerDeps:
    """The job worker: the jobs' collaborators (:func:`build_job_deps`) and, made on the first
    erase job of the container, the governance use cases' (:func:`build_governance_deps`)."""
    from agent_memory.config import get_settings
    from agent_memory.events.jobs import WorkerDeps

    settings = get_settings()
    return WorkerDeps(
        jobs=build_job_deps(settings), governance=functools.cache(lambda: build_governance_deps(settings))
    )


def build_reminder_function() -> ReminderFunctionDeps:
    """The reminder function: the reminder use cases' collaborators (None without
    ``REMINDER_SCHEDULE_GROUP``) and the delivery channels."""
    from agent_memory.config import get_settings
    from agent_memory.events.reminders import ReminderFunctionDeps

    settings = get_settings()
    return ReminderFunctionDeps(reminders=build_reminder_deps(settings), channel=build_reminder_channel(settings))
