"""Cold-start wiring: settings -> bound tables and the collaborators of each function.

Handlers call these once at import time (module level), so SnapStart snapshots them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_memory.adapters.dynamo.repository import DynamoRepository
from agent_memory.adapters.dynamo.tables import bind_tables
from agent_memory.config import Settings
from agent_memory.jobs.deps import JobCaps, JobDeps, utc_now
from agent_memory.jobs.notifier import LoggingNotifier
from agent_memory.ports import Notifier

if TYPE_CHECKING:
    from agent_memory.adapters.dynamo.sessions import SessionsRepository
    from agent_memory.chat.turn import ChatDeps
    from agent_memory.consultation.session_memory import SessionMemory
    from agent_memory.consultation.sessions import SessionsDeps
    from agent_memory.ports import LLMClient


def bind(settings: Settings) -> DynamoRepository:
    """Bind the PynamoDB models to the configured tables and return a repository."""
    bind_tables(
        memory_table=settings.memory_table,
        sessions_table=settings.sessions_table,
        flow_log_table=settings.flow_log_table,
    )
    return DynamoRepository()


def build_chat_deps(settings: Settings) -> ChatDeps:
    """Everything a chat turn needs, from the settings (LLM provider, classifier, caps)."""
    from agent_memory.adapters.clinical.demo import DemoClinicalData, load_clinical_file
    from agent_memory.adapters.llm.factory import build_llm
    from agent_memory.chat.intents import IntentClassifier, LLMIntentClassifier, RuleIntentClassifier
    from agent_memory.chat.prompt import PromptBudget
    from agent_memory.chat.turn import ChatConfig, ChatDeps
    from agent_memory.conversation.cache import SessionCache

    repo = bind(settings)
    llm = build_llm(settings)
    rules = RuleIntentClassifier()
    classifier: IntentClassifier = (
        LLMIntentClassifier(llm, settings.fast_model_id, fallback=rules)
        if settings.intent_classifier == "llm" and llm.provider == "anthropic"
        else rules
    )
    from agent_memory.adapters.dynamo.sessions import SessionsRepository

    return ChatDeps(
        store=repo,
        llm=llm,
        classifier=classifier,
        clinical=DemoClinicalData(load_clinical_file(settings.clinical_data_file)),
        cache=SessionCache(max_messages=50),
        memory=build_session_memory(settings, SessionsRepository(), llm=llm),
        config=ChatConfig(
            chat_model_id=settings.chat_model_id,
            max_output_tokens=settings.llm_max_output_tokens,
            max_message_bytes=settings.max_message_bytes,
            react_max_steps=settings.react_max_steps,
            flow_log_retention_days=settings.flow_log_retention_days,
            budget=PromptBudget(
                hot_memory_tokens=settings.hot_memory_token_cap,
                history_weeks=settings.history_weeks_cap,
                history_tokens=settings.history_token_budget,
                recent_turns=settings.recent_turns,
            ),
        ),
    )


def build_session_memory(settings: Settings, repo: SessionsRepository, *, llm: LLMClient | None) -> SessionMemory:
    """Symptom extractor + rolling summariser (issue 3). The LLM variants only with a real
    provider (``llm.provider == "anthropic"``) and when configured; each falls back offline."""
    from agent_memory.consultation.session_memory import SessionMemory
    from agent_memory.consultation.summary import ExtractiveSummariser, LLMSummariser, Summariser
    from agent_memory.consultation.symptoms.extract import (
        LLMSymptomExtractor,
        RuleSymptomExtractor,
        SymptomExtractor,
    )

    rules = RuleSymptomExtractor()
    real = llm is not None and llm.provider == "anthropic"
    extractor: SymptomExtractor = (
        LLMSymptomExtractor(llm, settings.fast_model_id, fallback=rules)
        if real and llm is not None and settings.symptom_extractor == "llm"
        else rules
    )
    summariser: Summariser = (
        LLMSummariser(llm, settings.fast_model_id)
        if real and llm is not None and settings.session_summariser == "llm"
        else ExtractiveSummariser()
    )
    return SessionMemory(
        extractor=extractor, summariser=summariser, patients=repo, reader=repo, recent_turns=settings.recent_turns
    )


def build_sessions_deps(settings: Settings) -> SessionsDeps:
    """The session routes' collaborators: no LLM at all (rule extractor, extractive summary),
    so the sessions function never imports ``anthropic``."""
    from agent_memory.adapters.dynamo.sessions import SessionsRepository
    from agent_memory.consultation.sessions import SessionsConfig, SessionsDeps

    bind(settings)
    repo = SessionsRepository()
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


def build_job_deps(
    settings: Settings,
    *,
    notifier: Notifier | None = None,
    alert_topic_arn: str | None = None,
    sns_client: Any | None = None,
) -> JobDeps:
    """Everything the jobs need, from the settings (called once at cold start).

    - store: ``JobsRepository`` on the tables named in the settings (``bind_tables``);
    - llm: the Anthropic client when ``LLM_PROVIDER=anthropic``, else None (the rule-based
      extractor, offline compactor and extractive summary are used);
    - notifier: ``notifier`` if given; else the SNS adapter on ``alert_topic_arn`` (or the
      settings' ``alert_topic_arn`` attribute when it has one, e.g. from ``ALERT_TOPIC_ARN``);
      else a notifier that only logs (local runs);
    - caps: the hot-memory cap and the fast model id from the settings.
    """
    from agent_memory.adapters.dynamo.jobs import JobsRepository
    from agent_memory.adapters.dynamo.tables import bind_tables

    bind_tables(
        memory_table=settings.memory_table,
        sessions_table=settings.sessions_table,
        flow_log_table=settings.flow_log_table,
    )
    llm = None
    if settings.llm_provider == "anthropic":
        from agent_memory.adapters.llm.factory import build_llm

        llm = build_llm(settings)
    topic = alert_topic_arn if alert_topic_arn is not None else str(getattr(settings, "alert_topic_arn", "") or "")
    if notifier is None:
        if topic:
            from agent_memory.adapters.sns import SnsNotifier

            notifier = SnsNotifier(topic, client=sns_client)
        else:
            notifier = LoggingNotifier()
    return JobDeps(
        store=JobsRepository(),
        llm=llm,
        notifier=notifier,
        clock=utc_now,
        caps=JobCaps(hot_memory_token_cap=settings.hot_memory_token_cap, llm_model_id=settings.fast_model_id),
    )
