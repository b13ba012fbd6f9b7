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
    from agent_memory.adapters.secrets import SecretsManagerProjectSecrets
    from agent_memory.adapters.wecom.api import WeComApi
    from agent_memory.channels.wecom import WeComSettingsDeps
    from agent_memory.chat.turn import ChatDeps
    from agent_memory.config import Settings
    from agent_memory.consultation.session_memory import SessionMemory
    from agent_memory.consultation.sessions import SessionsDeps
    from agent_memory.domain.egress import EgressPolicy
    from agent_memory.domain.secrets import SecretNaming
    from agent_memory.events.dispatcher import DispatcherDeps
    from agent_memory.events.jobs import WorkerDeps
    from agent_memory.events.reminders import ReminderFunctionDeps
    from agent_memory.events.wecom import WeComInboundDeps, WeComSenderDeps
    from agent_memory.governance.erasure import GovernanceDeps
    from agent_memory.governance.scrub import ScrubDeps
    from agent_memory.http.routes.admin import AdminFunctionDeps
    from agent_memory.http.routes.api import ApiFunctionDeps
    from agent_memory.http.routes.chat import ChatFunctionDeps
    from agent_memory.http.routes.governance import GovernanceFunctionDeps
    from agent_memory.http.routes.sessions import SessionsFunctionDeps
    from agent_memory.http.routes.wecom_callback import WeComCallbackFunctionDeps
    from agent_memory.identifiers import IdentifierFirewall
    from agent_memory.jobs.deps import JobDeps
    from agent_memory.ports import (
        ClinicalSourcesPort,
        ContextStore,
        FeedbackStore,
        HostResolver,
        LLMClient,
        MemberStore,
        Notifier,
        ProjectSecretReader,
        ReminderChannel,
        ReminderScheduler,
        WeComOutbox,
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


def build_clinical_sources(settings: Settings) -> ClinicalSourcesPort:
    """The REDCap sources of a function: each project's own token from its own secret, every
    connection through the egress policy (docs/architecture.md, "Egress policy")."""
    from agent_memory.adapters.clinical.redcap import RedcapSources

    return RedcapSources(egress=egress_policy(settings), resolver=host_resolver(settings),
                         secrets=build_project_secrets(settings), naming=secret_naming(settings))


def build_firewall(settings: Settings, sources: ClinicalSourcesPort | None = None) -> IdentifierFirewall:
    """The identifier firewall of a function (docs/architecture.md, "Identifiers"): the patterns,
    and each project's subject identifier index read from its REDCap (``Project.clinical_data``)
    through ``sources`` (default: a new ``RedcapSources``; the chat function passes its own, so the
    data dictionary is read once per container), with the project's own token
    (:func:`build_clinical_sources`)."""
    from agent_memory.adapters.clinical.identifiers import RedcapSubjectIdentifiers
    from agent_memory.identifiers import IdentifierFirewall

    if sources is None:
        sources = build_clinical_sources(settings)
    return IdentifierFirewall(RedcapSubjectIdentifiers(sources))


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
    sources = build_clinical_sources(settings)
    return ChatDeps(
        store=store,
        llm=llm,
        classifier=classifier,
        clinical=DemoClinicalData(load_clinical_file(settings.clinical_data_file)),
        clinical_sources=sources,
        firewall=build_firewall(settings, sources),
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
    """The sessions function: no LLM at all (rule extractor, extractive summary); the identifier
    firewall of transcript turns and feedback reasons."""
    from agent_memory.adapters.dynamo.sessions import SessionsRepository
    from agent_memory.consultation.sessions import SessionsConfig, SessionsDeps

    _bind_tables(settings)
    repo = SessionsRepository(session_retention_days=settings.session_retention_days)
    return SessionsDeps(
        store=repo,
        memory=build_session_memory(settings, repo, llm=None),
        firewall=build_firewall(settings),
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


def build_reminder_channel(settings: Settings, *, sns_client: Any | None = None,
                           secrets: ProjectSecretReader | None = None) -> ReminderChannel:
    """The delivery channels of the ReminderFunction: the ``REMINDER_TOPIC_ARN`` topic and the
    project's webhook, POSTed through the egress-guarded session (the egress policy on every
    connection), signed with the project's own key (``{ReminderWebhookSecretPrefix}{project_id}``,
    read through Powertools Parameters): a webhook record naming any other secret is refused."""
    from agent_memory.adapters.dynamo.reminders import ReminderRepository
    from agent_memory.adapters.egress import guarded_session
    from agent_memory.adapters.reminder_channel import SnsWebhookChannel
    from agent_memory.reminders.webhook import webhook_key

    _bind_tables(settings)
    policy, naming = egress_policy(settings), secret_naming(settings)
    reader = secrets if secrets is not None else build_project_secrets(settings)
    channel: ReminderChannel = SnsWebhookChannel(
        settings.reminder_topic_arn, webhook_of=ReminderRepository().webhook,
        key_of=lambda project_id, name: webhook_key(reader, naming, project_id, name),
        sns_client=sns_client, http=guarded_session(policy, host_resolver(settings)), policy=policy,
    )
    outbox = build_wecom_outbox(settings)
    if outbox is None:
        return channel
    from agent_memory.adapters.dynamo.channels import WeComChannelRepository
    from agent_memory.channels.notify import ReminderChannels, WeComReminders

    return ReminderChannels([channel, WeComReminders(WeComChannelRepository(), build_members(settings), outbox)])


def build_wecom_outbox(settings: Settings, *, sqs_client: Any | None = None) -> WeComOutbox | None:
    """The WeCom outbox (``WECOM_OUTBOX_QUEUE_URL``, a FIFO queue); None when not configured (then
    reminders and alerts go to SNS and the webhook only)."""
    if not settings.wecom_outbox_queue_url:
        return None
    from agent_memory.adapters.wecom.queues import SqsWeComOutbox

    return SqsWeComOutbox(settings.wecom_outbox_queue_url, client=sqs_client)


def build_wecom_settings_deps(settings: Settings) -> WeComSettingsDeps:
    """The WeCom channel settings' collaborators (admin function): the ``CHANNEL#wecom`` records, the
    project secrets' writer and names."""
    from agent_memory.adapters.dynamo.channels import WeComChannelRepository
    from agent_memory.channels.wecom import WeComSettingsDeps

    _bind_tables(settings)
    return WeComSettingsDeps(store=WeComChannelRepository(), secrets=build_project_secrets(settings),
                             naming=secret_naming(settings))


def build_wecom_api(settings: Settings, *, session: Any | None = None) -> WeComApi:
    """WeCom's API client on ``WECOM_API_BASE_URL`` under the egress policy: each request's URL checked
    and pinned to that scheme, host and port (else EgressBlocked, nothing sent), each connection through
    the guarded transport (docs/architecture.md, "Egress policy"). Raises EgressRefused (cold start)."""
    from agent_memory.adapters.egress import guarded_session
    from agent_memory.adapters.wecom.api import WeComApi
    from agent_memory.domain.errors import EgressBlocked

    policy = egress_policy(settings)
    pinned = policy.check_form(settings.wecom_api_base_url, field="WECOM_API_BASE_URL")[:3]

    def check(url: str) -> None:
        target = policy.check_form(url, field="WECOM_API_BASE_URL")
        if target[:3] != pinned:
            raise EgressBlocked("WeCom requests go to WECOM_API_BASE_URL's host only", "host", target[1])

    return WeComApi(base_url=settings.wecom_api_base_url, check_url=check,
                    session=session if session is not None else guarded_session(policy, host_resolver(settings)))


def egress_policy(settings: Settings) -> EgressPolicy:
    """The operator's egress policy (``EGRESS_ALLOW_PRIVATE``, ``EGRESS_LOCAL_RUNTIME``).

    Raises:
        ValueError: a malformed allow-list entry (at cold start, naming it).
    """
    from agent_memory.domain.egress import EgressPolicy

    return EgressPolicy.parse(settings.egress_allow_private, local_runtime=settings.egress_local_runtime)


def secret_naming(settings: Settings) -> SecretNaming:
    """The project secrets' name prefixes; the Anthropic key's secret is reserved (no prefix may cover it).

    Raises:
        ValueError: a prefix covering another one or the Anthropic key's secret (at cold start).
    """
    from agent_memory.domain.secrets import SecretNaming

    reserved = (settings.anthropic_secret_name,) if settings.anthropic_secret_name else ()
    return SecretNaming(
        redcap_token_prefix=settings.clinical_token_secret_prefix,
        reminder_webhook_prefix=settings.reminder_webhook_secret_prefix,
        channel_prefix=settings.channel_secret_prefix, reserved_names=reserved,
    )


def host_resolver(settings: Settings) -> HostResolver:
    """DNS for the egress policy: the operating system's, or in the local runtime
    (``EGRESS_LOCAL_RUNTIME``) a fixed table (``localhost`` and ``EGRESS_LOCAL_HOSTS``: it has no
    network, so a URL typed there never makes a DNS query).

    Raises:
        ValueError: a malformed ``EGRESS_LOCAL_HOSTS`` entry (at cold start).
    """
    from agent_memory.adapters.resolver import StaticResolver, SystemResolver

    if settings.egress_local_runtime:
        return StaticResolver.parse(settings.egress_local_hosts)
    return SystemResolver()


def build_project_secrets(settings: Settings, *, client: Any | None = None) -> SecretsManagerProjectSecrets:
    """The Secrets Manager store of the project secrets (``PROJECT_SECRETS_KMS_KEY_ARN``,
    ``SECRET_RECOVERY_WINDOW_DAYS``)."""
    from agent_memory.adapters.secrets import SecretsManagerProjectSecrets

    return SecretsManagerProjectSecrets(client, kms_key_id=settings.project_secrets_kms_key_arn,
                                        recovery_window_days=settings.secret_recovery_window_days)


def build_governance_deps(settings: Settings) -> GovernanceDeps:
    """The governance function (and the worker's erase jobs): the admin store (project, hot memory,
    review queue), the erasure store with the idempotency table, the patients' references upkeep,
    the export and removal stores, the job queue for large erasures (``JOB_QUEUE_URL``; none:
    inline), and the project secrets a removal deletes (with ``SECRET_RECOVERY_WINDOW_DAYS``)."""
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
        secrets=build_project_secrets(settings), naming=secret_naming(settings),
    )


def build_scrub_deps(settings: Settings) -> ScrubDeps:
    """The identifier scrub (the worker's scrub jobs): its store on the tables, the firewall with
    the projects' subject identifier indexes, the clock."""
    from agent_memory.adapters.dynamo.scrub import ScrubRepository
    from agent_memory.governance.scrub import ScrubDeps

    _bind_tables(settings)
    return ScrubDeps(store=ScrubRepository(), firewall=build_firewall(settings), clock=lambda: datetime.now(UTC))


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
        outbox = build_wecom_outbox(settings)
        if outbox is not None:
            from agent_memory.adapters.dynamo.channels import WeComChannelRepository
            from agent_memory.channels.notify import Notifiers, WeComAlerts

            notifier = Notifiers([notifier, WeComAlerts(WeComChannelRepository(), build_members(settings), outbox)])
    return JobDeps(
        store=JobsRepository(),
        llm=llm,
        notifier=notifier,
        clock=utc_now,
        firewall=build_firewall(settings),
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
    the clock, the writers of the project secrets (the REDCap token of the clinical source, the
    reminder webhook's key, the WeCom channel's credentials) with the egress policy their URLs pass,
    and the console's Hosted UI (domain, client id)."""
    from agent_memory.adapters.dynamo.admin import AdminRepository
    from agent_memory.adapters.dynamo.reminders import ReminderRepository
    from agent_memory.config import get_settings
    from agent_memory.http.routes.admin import AdminFunctionDeps
    from agent_memory.projects.clinical_source import ClinicalSourceDeps
    from agent_memory.reminders.webhook import WebhookDeps

    settings = get_settings()
    _bind_tables(settings)
    policy, resolver, naming = egress_policy(settings), host_resolver(settings), secret_naming(settings)
    secrets = build_project_secrets(settings)
    return AdminFunctionDeps(
        store=AdminRepository(), members=build_members(settings), hot_memory_token_cap=settings.hot_memory_token_cap,
        clinical=ClinicalSourceDeps(policy=policy, resolver=resolver, secrets=secrets, naming=naming),
        webhooks=WebhookDeps(store=ReminderRepository(), secrets=secrets, naming=naming, policy=policy,
                             resolver=resolver),
        clock=lambda: datetime.now(UTC),
        wecom=build_wecom_settings_deps(settings),
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
    erase job of the container, the governance use cases' (:func:`build_governance_deps`), on the
    first scrub job the identifier scrub's (:func:`build_scrub_deps`)."""
    from agent_memory.config import get_settings
    from agent_memory.events.jobs import WorkerDeps

    settings = get_settings()
    return WorkerDeps(
        jobs=build_job_deps(settings), governance=functools.cache(lambda: build_governance_deps(settings)),
        scrub=functools.cache(lambda: build_scrub_deps(settings)),
    )


def build_reminder_function() -> ReminderFunctionDeps:
    """The reminder function: the reminder use cases' collaborators (None without
    ``REMINDER_SCHEDULE_GROUP``) and the delivery channels."""
    from agent_memory.config import get_settings
    from agent_memory.events.reminders import ReminderFunctionDeps

    settings = get_settings()
    return ReminderFunctionDeps(reminders=build_reminder_deps(settings), channel=build_reminder_channel(settings))


def build_wecom_callback_function() -> WeComCallbackFunctionDeps:
    """The WeCom callback function: the project secrets' reader and names (the channel's Token and
    EncodingAESKey), WeCom's callback protocol and the inbound queue (``WECOM_INBOUND_QUEUE_URL``).
    No table, no LLM."""
    from agent_memory.adapters.wecom.crypto import WeComCallbacks
    from agent_memory.adapters.wecom.queues import SqsWeComInboundQueue
    from agent_memory.channels.wecom import WeComCallbackDeps
    from agent_memory.config import get_settings
    from agent_memory.http.routes.wecom_callback import WeComCallbackFunctionDeps

    settings = get_settings()
    return WeComCallbackFunctionDeps(callback=WeComCallbackDeps(
        secrets=build_project_secrets(settings), naming=secret_naming(settings), protocol=WeComCallbacks(),
        queue=SqsWeComInboundQueue(settings.wecom_inbound_queue_url),
    ))


def build_wecom_inbound_function() -> WeComInboundDeps:
    """The WeCom inbound consumer: the chat turn's collaborators (:func:`build_chat_deps`), the
    channel records, the WeCom directory (the members' ``WECOMUSER#`` items), the outbox and the
    idempotency table.

    Raises:
        ValueError: ``WECOM_OUTBOX_QUEUE_URL`` is not set (the answers would have nowhere to go).
    """
    from agent_memory.adapters.dynamo.channels import WeComChannelRepository
    from agent_memory.adapters.dynamo.members import MemberRepository
    from agent_memory.chat.wecom import WeComTurnDeps
    from agent_memory.config import get_settings
    from agent_memory.events.wecom import WeComInboundDeps

    settings = get_settings()
    outbox = build_wecom_outbox(settings)
    if outbox is None:
        raise ValueError("WECOM_OUTBOX_QUEUE_URL is required by the WeCom inbound consumer")
    chat = build_chat_deps(settings)
    return WeComInboundDeps(
        turns=WeComTurnDeps(chat=chat, channels=WeComChannelRepository(), directory=MemberRepository(), outbox=outbox),
        idempotency_table=settings.idempotency_table_name(), reserve_s=settings.response_reserve_s * 3,
    )


def build_wecom_sender_function() -> WeComSenderDeps:
    """The WeCom outbox consumer: the project secrets' reader and names (the channel's Secret and
    robot key), WeCom's API under the egress policy (:func:`build_wecom_api`), the idempotency table."""
    from agent_memory.channels.wecom import WeComDeliveryDeps
    from agent_memory.config import get_settings
    from agent_memory.events.wecom import WeComSenderDeps

    settings = get_settings()
    return WeComSenderDeps(
        delivery=WeComDeliveryDeps(secrets=build_project_secrets(settings), naming=secret_naming(settings),
                                   sender=build_wecom_api(settings)),
        idempotency_table=settings.idempotency_table_name(),
    )
