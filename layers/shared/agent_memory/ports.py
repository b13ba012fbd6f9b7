"""Ports: every Protocol the feature packages need from the outside world.

Adapters (``agent_memory.adapters``) implement them; ``agent_memory.wiring`` chooses which;
the unit tests pass the in-memory fakes of ``tests/fakes.py``. Ports import only the domain
(see ``docs/architecture.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

# Annotations only (postponed by ``from __future__ import annotations``): importing a port costs
# no domain module at run time, which keeps the no-LLM functions' cold import small.
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence
    from datetime import date, datetime

    from pydantic import SecretStr

    from agent_memory.domain.clinical import DataDictionary, IdentifierValue
    from agent_memory.domain.feedback import Feedback
    from agent_memory.domain.governance import ErasureKind, ErasureRecord, MessageRef, RemovalRecord
    from agent_memory.domain.jobs import Alert, FlowLogEntry, JobRequest, JobRun, ReviewItem
    from agent_memory.domain.llm import LLMRequest, LLMResponse, Provider
    from agent_memory.domain.models import ClinicalDataSource, HotMemory, Member, Project, WeeklyReport, YearlySummary
    from agent_memory.domain.records import (
        AuditRecord,
        Page,
        ReportRevision,
        ReviewEntry,
        RevisionSummary,
        StoredRevision,
    )
    from agent_memory.domain.reminders import Reminder, ReminderDelivery
    from agent_memory.domain.scrub import ScrubRecord, StoredText
    from agent_memory.domain.secrets import ProjectSecretRef
    from agent_memory.domain.session_models import (
        Diagnosis,
        DiagnosisRef,
        PatientRefs,
        SessionMessagePage,
        SessionPage,
    )
    from agent_memory.domain.turns import MessageRecord, SessionState, TurnContext, TurnWrite
    from agent_memory.domain.wecom import (
        WeComCallbackParams,
        WeComChannel,
        WeComChannelSettings,
        WeComInbound,
        WeComInboundMessage,
        WeComOutbound,
        WeComOutboundPart,
    )
    from agent_memory.domain.when import Recurrence, When


class LLMClient(Protocol):
    """Port implemented by ``AnthropicClient`` and ``OfflineLLM``.

    Raises (from ``agent_memory.domain.errors``): ``LLMUnavailable`` (overloaded / rate limited
    after retries), ``LLMDeadlineExceeded`` (no reply before ``request.deadline``),
    ``LLMBadRequest`` (the provider rejected the request).
    """

    provider: Provider

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Run one Messages-API call and return the reply."""
        ...


class ClinicalDataPort(Protocol):
    """Read-only access to a project's clinical data (subjects, visits, CRFs)."""

    def read(self, project_id: str, subject_id: str | None = None) -> dict[str, Any]:
        """Return one subject's record (``subject_id`` given) or a project summary.

        Returns:
            ``{"subject": {...}}`` or ``{"summary": {...}, "subjects": [ids]}``; ``{"error": str}``
            when the subject or project is unknown (never raises for unknown ids).
        """
        ...


class ClinicalRecordsPort(Protocol):
    """One project's clinical database in REDCap's terms (implemented by
    ``agent_memory.adapters.clinical.redcap.RedcapRecords``), bound to one turn's deadline.

    Raises (``agent_memory.domain.clinical``): ``ClinicalSourceUnavailable`` (unreachable, slower
    than the deadline, rate-limited past it), ``ClinicalSourceAuthError`` (token refused),
    ``ClinicalSourceRejected`` (the source rejected the request).
    """

    def dictionary(self) -> DataDictionary:
        """The data dictionary with events, form-event mapping and repeating instruments."""
        ...

    def export_records(
        self,
        *,
        records: Sequence[str] | None = None,
        fields: Sequence[str] | None = None,
        events: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Flat records (one row per record, event and repeat instance; REDCap's raw codes, every
        value a string but ``redcap_repeat_instance``; checkbox columns ``field___code``), only
        ``records`` / ``fields`` / ``events`` when given (the record-id field always included)."""
        ...


class ClinicalSourcesPort(Protocol):
    """Opens a project's configured clinical source (``Project.clinical_data``)."""

    def open(self, source: ClinicalDataSource, *, project_id: str, deadline: float | None) -> ClinicalRecordsPort:
        """The source's records for one turn of project ``project_id`` (the turn's own project: only
        its own token is ever read); every call made through it ends by ``deadline`` (a
        ``time.monotonic()`` instant; None = the adapter's own timeout).

        Raises (``agent_memory.domain.clinical``):
            ClinicalSourceTokenSetAgain: a legacy source naming a secret (``token_secret``);
            ClinicalSourceTokenMissing / ClinicalSourceTokenUnreadable: no usable token for the URL;
            ClinicalSourceEgressRefused: the URL is refused by the egress policy;
            ClinicalSourceAuthError: the URL or token is misconfigured.
        """
        ...


class SubjectIdentifiersPort(Protocol):
    """The values of a project's identifier fields, per subject (implemented on REDCap by
    ``agent_memory.adapters.clinical.identifiers.RedcapSubjectIdentifiers``): what the identifier
    firewall hashes into its subject identifier index (docs/architecture.md, "Identifiers").

    Raises (``agent_memory.domain.clinical``): ``ClinicalSourceError`` subclasses, as
    :class:`ClinicalRecordsPort` does.
    """

    def subject_identifiers(self, project: Project, *, deadline: float | None) -> list[IdentifierValue]:
        """Every subject's identifier values (fields flagged as identifiers whose values are text:
        names, phones, ID and record numbers, addresses, e-mail addresses), ``[]`` for a project
        without a clinical source. Calls end by ``deadline`` (a ``time.monotonic()`` instant)."""
        ...


class JobStore(Protocol):
    """Storage port of the jobs. Errors are domain exceptions (``VersionConflict``,
    ``ProjectNotFound``, ``ItemTooLarge``); see ``JobsRepository`` for the round trips."""

    def get_project(self, project_id: str) -> Project: ...

    def list_members(self, project_id: str) -> list[Member]: ...

    def load_hot_memory(self, project_id: str) -> HotMemory: ...

    def commit_hot_memory(
        self,
        hot: HotMemory,
        *,
        expected_version: int,
        actor: str,
        reason: str | None,
        now: datetime,
        tokens: int,
        run: JobRun | None,
    ) -> HotMemory: ...

    def read_flow_log(
        self, project_id: str, start: datetime, end: datetime, *, page_size: int | None = None
    ) -> list[FlowLogEntry]: ...

    def get_job_run(self, project_id: str, job: str, key: str) -> JobRun | None: ...

    def put_job_run(self, run: JobRun) -> bool: ...

    def put_review_items(self, items: list[ReviewItem]) -> int: ...

    def get_weekly_report(self, project_id: str, iso_week: str) -> WeeklyReport | None: ...

    def commit_weekly_report(self, report: WeeklyReport, run: JobRun) -> bool: ...

    def list_reports_between(
        self, project_id: str, first_week: str, last_week: str, *, page_size: int | None = None
    ) -> list[WeeklyReport]: ...

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]: ...

    def put_yearly_summary(self, summary: YearlySummary) -> bool: ...

    def claim_alert(self, project_id: str, dedupe_key: str, *, kind: str, now: datetime) -> bool: ...

    def release_alert(self, project_id: str, dedupe_key: str) -> None: ...


class Notifier(Protocol):
    """Delivers one alert to the project's admins. Raises on delivery failure."""

    def notify(self, alert: Alert) -> None:
        """Deliver ``alert`` (already byte-capped by :func:`cap_alert`)."""
        ...


class ActivityReader(Protocol):
    """Who was active (implemented by ``agent_memory.adapters.dynamo.activity.ActivityRepository``)."""

    def active_projects(self, local_dates: Sequence[date]) -> list[str]:
        """Distinct project ids with an activity marker on any of ``local_dates``."""
        ...


class JobSender(Protocol):
    """The fan-out queue (implemented by ``agent_memory.adapters.sqs.SqsJobQueue``)."""

    def send(self, requests: Sequence[JobRequest]) -> int:
        """Enqueue one message per request; returns how many were enqueued.

        Raises:
            EnqueueFailed: some requests could not be enqueued.
        """
        ...


class ConversationStore(Protocol):
    """The session append (``agent_memory.conversation.append``): read a session, write a turn."""

    def get_session(self, project_id: str, session_id: str) -> SessionState | None: ...

    def record_turn(self, write: TurnWrite) -> None:
        """Apply ``write`` in ONE transaction.

        Raises:
            VersionConflict: the session's version is not ``write.expected_version``.
            ItemTooLarge: an item would pass DynamoDB's 400 KB limit.
        """
        ...


class ChatStore(ConversationStore, Protocol):
    """What the chat turn needs from storage (implemented by ``ChatRepository``)."""

    def load_turn_context(
        self, project_id: str, session_id: str, *, now: datetime, user_id: str | None = None,
        patient_id: str | None = None,
    ) -> TurnContext:
        """Project, hot memory, session, (``user_id`` given) the asker's membership (``asker``,
        None when not a member: the route guard decides on it) and (``patient_id`` given) the
        patient's earlier-diagnosis references, in ONE read.

        ``TurnContext.patient_diagnoses``: the references of the patient's newest
        ``MAX_DIAGNOSIS_REFS`` diagnoses, oldest first, exactly those the diagnoses as stored
        give (the references item is written with each diagnosis); ``[]`` for a patient without
        diagnoses; None when ``patient_id`` is None, or when the store cannot tell from this read
        (a project with diagnoses written before the references items: the caller queries
        ``PatientDiagnoses.patient_diagnosis_refs``).

        Raises:
            ProjectNotFound: no project record.
        """
        ...

    def load_history(
        self, project_id: str, *, limit_weeks: int, page_size: int | None = None
    ) -> list[WeeklyReport]: ...

    def list_reports_between(self, project_id: str, first_week: str, last_week: str) -> list[WeeklyReport]:
        """Reports with ``first_week <= iso_week <= last_week`` (``YYYY-Www``), oldest first (one
        Query): the history of a question that names a period."""
        ...

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]: ...

    def get_message(
        self, project_id: str, session_id: str, message_id: str
    ) -> tuple[MessageRecord, dict[str, Any] | None]:
        """A message and its context manifest (the replay of an answered retry reads it).
        Raises MessageNotFound."""
        ...


class SessionsStore(ConversationStore, Protocol):
    """What these routes need from storage (``SessionsRepository``)."""

    def get_project(self, project_id: str) -> Project: ...

    def load_turn_context(
        self, project_id: str, session_id: str, *, now: datetime, user_id: str | None = None,
        patient_id: str | None = None,
    ) -> TurnContext: ...

    def create_session(self, session: SessionState) -> SessionState: ...

    def patient_erased(self, project_id: str, patient_id: str) -> bool: ...

    def list_messages(self, project_id: str, session_id: str, *, limit: int,
                      cursor: str | None = None) -> SessionMessagePage:
        """A page of the session's messages, oldest first; raises InvalidContinuationToken for a
        cursor this listing did not issue."""
        ...

    def list_patient_sessions(self, project_id: str, patient_id: str, *, limit: int, next_token: str | None = None,
                              page_size: int | None = None) -> SessionPage: ...

    def list_project_sessions(self, project_id: str, *, limit: int, next_token: str | None = None,
                              page_size: int | None = None) -> SessionPage: ...

    def add_diagnosis(self, diagnosis: Diagnosis, session: SessionState, *, expected_version: int,
                      patient_refs: PatientRefs | None = None) -> None:
        """Store ``diagnosis`` and ``session`` (its new state) and, with ``patient_refs`` (the
        patient's references as :meth:`patient_refs` returned them), the references with
        ``diagnosis.ref()`` merged in (the newest ``MAX_DIAGNOSIS_REFS``), in ONE transaction.

        Raises:
            AlreadyExists: the session already has a diagnosis with that id (nothing written).
            SessionErased: the session was erased (nothing written).
            VersionConflict: the session's version is not ``expected_version``, or the patient's
                references changed since they were read (nothing written: read both again).
            ItemTooLarge: an item would pass its byte budget.
        """
        ...

    def patient_refs(self, project_id: str, patient_id: str) -> PatientRefs:
        """The patient's references item as stored now (strongly consistent); without one, an
        unsaved one (``version == 0``) holding the patient's newest diagnoses (none for a patient
        without diagnoses), leaving out erased sessions."""
        ...

    def list_diagnoses(self, project_id: str, session_id: str) -> list[Diagnosis]: ...

    def get_diagnosis(self, project_id: str, session_id: str, diagnosis_id: str) -> Diagnosis: ...

    def patient_diagnoses(self, project_id: str, patient_id: str, *, diagnosis_id: str | None = None,
                          limit: int | None = None) -> list[Diagnosis]: ...

    def patient_diagnosis_refs(self, project_id: str, patient_id: str, *, limit: int) -> list[DiagnosisRef]:
        """References of the patient's newest ``limit`` diagnoses, newest first (a Query)."""
        ...


class MemberReader(Protocol):
    """The membership lookup of the route guard (``MemberRepository``): ONE GetItem."""

    def get_member(self, project_id: str, user_id: str) -> Member | None:
        """The membership of ``user_id`` in ``project_id`` (strongly consistent), or None."""
        ...


class MemberStore(MemberReader, Protocol):
    """Projects and their members (``agent_memory.adapters.dynamo.members.MemberRepository``).

    Writes that could leave a project without an admin are refused with ``LastAdmin`` in the same
    transaction that would have done it (the remaining admin's item is a condition of it).
    """

    def get_project(self, project_id: str) -> Project:
        """The project record. Raises ProjectNotFound."""
        ...

    def create_project(self, project: Project, *, rules: HotMemory | None = None, actor: str = "",
                       tokens: int = 0) -> None:
        """Store a new project and, with ``rules``, its first hot memory (version 1, revision by
        ``actor``, ``tokens`` of the rendered document) in the same write: all or nothing.
        Raises AlreadyExists when its id is taken (nothing written)."""
        ...

    def update_project(self, project: Project) -> None:
        """Replace an existing project's record. Raises ProjectNotFound."""
        ...

    def list_members(self, project_id: str) -> list[Member]:
        """Every member of the project, by user id (one Query)."""
        ...

    def memberships_of(self, user_id: str, *, limit: int) -> list[Member]:
        """The user's memberships across projects, by project id, at most ``limit`` (an index read:
        eventually consistent)."""
        ...

    def get_projects(self, project_ids: list[str]) -> list[Project]:
        """The records of those of ``project_ids`` that exist, by project id."""
        ...

    def put_member(self, member: Member) -> bool:
        """Create or replace a membership; True when it is new.

        Raises:
            LastAdmin: it would demote the project's last admin (nothing written).
            VersionConflict: a concurrent change of the same membership (nothing written).
        """
        ...

    def remove_member(self, project_id: str, user_id: str) -> bool:
        """Remove a membership; False when there was none.

        Raises:
            LastAdmin: it is the project's last admin (nothing removed).
            VersionConflict: a concurrent change of the project's admins (nothing removed).
        """
        ...


class PatientDiagnoses(Protocol):
    """The patient's earlier diagnoses when the turn's read could not tell them
    (``TurnContext.patient_diagnoses`` is None; ``SessionsRepository``)."""

    def patient_diagnosis_refs(self, project_id: str, patient_id: str, *, limit: int) -> list[DiagnosisRef]:
        """References of the patient's newest ``limit`` diagnoses, newest first (ONE Query)."""
        ...


class MessageReader(Protocol):
    """Messages no longer in the window (``SessionsRepository``)."""

    def messages_between(
        self, project_id: str, session_id: str, *, after_id: str | None, before_id: str, limit: int = 50
    ) -> list[MessageRecord]: ...


class AdminStore(Protocol):
    """Data access the admin use cases need (``agent_memory.adapters.dynamo.admin``)."""

    def get_project(self, project_id: str) -> Project: ...

    def load_hot_memory(self, project_id: str) -> HotMemory: ...

    def commit_hot_memory(
        self,
        hot: HotMemory,
        *,
        expected_version: int,
        actor: str,
        reason: str | None,
        now: datetime,
        tokens: int,
        audit: AuditRecord,
        decide: ReviewEntry | None = None,
    ) -> HotMemory: ...

    def list_revisions(self, project_id: str, *, limit: int, cursor: str | None) -> Page[RevisionSummary]: ...

    def get_revision(self, project_id: str, version: int) -> StoredRevision | None: ...

    def list_review(self, project_id: str, *, status: str | None) -> list[ReviewEntry]: ...

    def get_review(self, project_id: str, item_id: str) -> ReviewEntry | None: ...

    def decide_review(self, project_id: str, decided: ReviewEntry, *, audit: AuditRecord) -> None: ...

    def list_audit(self, project_id: str, *, limit: int, cursor: str | None) -> Page[AuditRecord]: ...

    def get_report(self, project_id: str, iso_week: str) -> WeeklyReport | None: ...

    def correct_report(
        self, previous: WeeklyReport, corrected: WeeklyReport, *, replaced_by: str, audit: AuditRecord
    ) -> None: ...

    def list_report_revisions(self, project_id: str, iso_week: str) -> list[ReportRevision]:
        """The replaced revisions of the week's report, newest first (not the current one)."""
        ...

    def put_review_items(self, items: list[ReviewItem]) -> int:
        """Queue review items (an item already queued is left as it is); how many were new."""
        ...

    def flow_log_messages(self, project_id: str, message_ids: list[str]) -> dict[str, FlowLogEntry]:
        """The cited flow-log messages still kept, by id (see :class:`EvidenceStore`)."""
        ...


class EvidenceStore(Protocol):
    """What the evidence view reads (implemented by ``AdminRepository``): the hot memory, the
    review queue and the cited messages of the flow log."""

    def get_project(self, project_id: str) -> Project: ...

    def load_hot_memory(self, project_id: str) -> HotMemory: ...

    def get_review(self, project_id: str, item_id: str) -> ReviewEntry | None: ...

    def flow_log_messages(self, project_id: str, message_ids: list[str]) -> dict[str, FlowLogEntry]:
        """The flow-log messages of ``message_ids`` still kept, by id; an id that carries no time
        (``domain.ids.message_time``) or is not in the flow log is left out."""
        ...


class HistoryReader(Protocol):
    """The weekly reports of an ISO-week range, for the chat's ``read_history`` tool (implemented by
    ``ProjectRepository``)."""

    def list_reports_between(self, project_id: str, first_week: str, last_week: str) -> list[WeeklyReport]:
        """Reports with ``first_week <= iso_week <= last_week`` (``YYYY-Www``), oldest first."""
        ...


class ViewStore(Protocol):
    """Reads of the views (implemented by ``ActivityRepository``)."""

    def project_hot_memory(self, project_id: str) -> tuple[Project, HotMemory]: ...

    def reports_between(
        self, project_id: str, first_week: str | None, last_week: str | None, *, limit: int
    ) -> list[WeeklyReport]: ...

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]: ...


class ContextStore(Protocol):
    """Reads needed to rebuild a context (implemented by ``ChatRepository``)."""

    def get_message(
        self, project_id: str, session_id: str, message_id: str
    ) -> tuple[MessageRecord, dict[str, Any] | None]: ...

    def get_messages(self, project_id: str, session_id: str, message_ids: list[str]) -> dict[str, MessageRecord]: ...

    def get_hot_memory_revision(self, project_id: str, version: int) -> HotMemory | None: ...

    def get_reports(self, project_id: str, weeks: list[str]) -> list[WeeklyReport]: ...

    def get_project(self, project_id: str) -> Any: ...

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]: ...


class ErasureStore(Protocol):
    """Erasure records and an erasure's reads, deletes and rewrites
    (``agent_memory.adapters.dynamo.erasure.ErasureRepository``)."""

    def get_erasure(self, project_id: str, kind: ErasureKind, target_id: str) -> ErasureRecord | None: ...

    def start_erasure(self, record: ErasureRecord) -> ErasureRecord:
        """Store ``record`` unless one exists for its target; returns the stored one."""
        ...

    def save_erasure(self, record: ErasureRecord) -> None: ...

    def running_erasures(self, project_id: str) -> list[ErasureRecord]: ...

    def patient_sessions(self, project_id: str, patient_id: str) -> dict[str, int]:
        """``{session_id: items}`` of the patient's sessions and of those holding their diagnoses."""
        ...

    def session_size(self, project_id: str, session_id: str) -> int | None: ...

    def session_message_refs(self, project_id: str, session_id: str) -> list[MessageRef]: ...

    def drop_diagnosis_refs(self, project_id: str, session_id: str) -> int:
        """Remove the references to the session's diagnoses from the facts of its patient's other
        sessions; how many were removed."""
        ...

    def scrub_memory_references(self, project_id: str, message_ids: set[str], *,
                                patient_id: str | None) -> dict[str, int]:
        """Remove ``message_ids`` from stored evidence and the patient's id from stored texts;
        returns ``evidence_refs`` and ``redactions``."""
        ...

    def delete_session_item(self, project_id: str, session_id: str) -> int: ...

    def delete_session_batch(self, project_id: str, session_id: str, *, limit: int) -> dict[str, int]: ...


class PatientRefsStore(Protocol):
    """The patients' diagnosis references items outside a diagnosis write
    (``agent_memory.adapters.dynamo.patient_refs_upkeep.PatientRefsRepository``)."""

    def drop_patient_refs(self, project_id: str, session_ids: list[str], *, now: datetime,
                          patient_id: str | None = None) -> int:
        """Remove the references to the diagnoses of ``session_ids`` from the patient's references
        item (``patient_id`` None: the first session's patient); an item that was full is refilled
        with the newest diagnoses left; an item left empty is deleted. Returns how many
        references were removed.

        Raises:
            VersionConflict: the item changed since it was read (run it again).
        """
        ...

    def delete_patient_refs_items(self, project_id: str, *, limit: int) -> int:
        """Delete up to ``limit`` of the project's patient references items; how many (0: none left)."""
        ...


class ExportReader(Protocol):
    """The export's reads, items as plain JSON values (``agent_memory.adapters.dynamo.export.ExportRepository``)."""

    def memory_items(self, project_id: str) -> Iterator[dict[str, Any]]: ...

    def project_session_ids(self, project_id: str) -> list[str]: ...

    def session_items(self, project_id: str, session_id: str) -> Iterator[dict[str, Any]]: ...

    def flow_log_items(self, project_id: str, utc_days: Iterable[str]) -> Iterator[dict[str, Any]]: ...


class ScrubStore(Protocol):
    """The identifier scrub of what a project stores (``adapters.dynamo.scrub.ScrubRepository``).
    ``get_project`` raises ProjectNotFound; ``start_scrub`` stores the record unless its run has
    one and returns the stored one; ``stored_texts`` yields every text attribute of the project
    (the flow log of the UTC days ``since`` .. ``until``, every session's partition, the
    MemoryTable partition); ``reread`` one as stored now (None: gone); ``rewrite`` writes
    ``value`` over ``text`` on condition that it is unchanged (its version, if any, incremented)
    and adds ``withheld`` and one item of ``text.area`` to the record's counts in ONE transaction
    (False: it changed since read)."""

    def get_project(self, project_id: str) -> Project: ...

    def start_scrub(self, record: ScrubRecord) -> ScrubRecord: ...

    def finish_scrub(self, record: ScrubRecord, *, at: datetime) -> ScrubRecord: ...

    def stored_texts(self, project_id: str, *, since: date, until: date) -> Iterator[StoredText]: ...

    def reread(self, text: StoredText) -> StoredText | None: ...

    def rewrite(self, record: ScrubRecord, text: StoredText, value: Any, withheld: dict[str, int]) -> bool: ...


class RemovalStore(Protocol):
    """The project removal's record, reads and deletes
    (``agent_memory.adapters.dynamo.removal.RemovalRepository``)."""

    def get_removal(self, project_id: str) -> RemovalRecord | None: ...

    def save_removal(self, record: RemovalRecord) -> None: ...

    def project_session_ids(self, project_id: str) -> list[str]: ...

    def project_size(self, project_id: str, *, stop_after: int) -> int: ...

    def project_reminders(self, project_id: str) -> list[Reminder]: ...

    def delete_project_item(self, project_id: str) -> int: ...

    def delete_flow_log_day(self, project_id: str, day: date) -> int: ...

    def delete_memory_batch(self, project_id: str, *, limit: int) -> int: ...


class FeedbackStore(Protocol):
    """Answer feedback (``agent_memory.adapters.dynamo.feedback.FeedbackRepository``)."""

    def get_message(self, project_id: str, session_id: str, message_id: str) -> MessageRecord:
        """Raises MessageNotFound."""
        ...

    def study_role_of(self, project_id: str, user_id: str) -> str | None:
        """The member's study role (PI, CRC, ...) or None."""
        ...

    def get_project(self, project_id: str) -> Project:
        """The project record (its identifier policy). Raises ProjectNotFound."""
        ...

    def put_feedback(self, feedback: Feedback, *, expires_at: datetime | None) -> None:
        """The rating (replacing the rater's earlier one) and its flow-log event, in one transaction."""
        ...

    def list_feedback(self, project_id: str, start: datetime | None, end: datetime | None) -> list[Feedback]: ...


class ReminderStore(Protocol):
    """Reminder items (``agent_memory.adapters.dynamo.reminders.ReminderRepository``)."""

    def put_reminder(self, reminder: Reminder) -> None: ...

    def get_reminder(self, project_id: str, reminder_id: str) -> Reminder | None: ...

    def list_reminders(self, project_id: str, *, owner: str | None = None) -> list[Reminder]:
        """The project's reminders (one owner's when given), oldest first."""
        ...

    def update_reminder(self, reminder: Reminder) -> None:
        """Overwrite a stored reminder (status, next firing, last firing)."""
        ...

    def study_role_of(self, project_id: str, user_id: str) -> str | None:
        """The member's study role (PI, CRC, ...) or None."""
        ...


class ReminderScheduler(Protocol):
    """The schedules (``agent_memory.adapters.scheduler.EventBridgeReminderScheduler``), and their
    expressions: the use cases keep a reminder's ``expression`` as the scheduler wrote it.

    Raises ExternalServiceError when the scheduler fails.
    """

    def expression(self, when: When) -> str:
        """The schedule expression of ``when`` in the scheduler's syntax (read in the reminder's time zone)."""
        ...

    def recurrence(self, expression: str) -> Recurrence:
        """The recurrence of an expression :meth:`expression` wrote for a recurring ``when``.

        Raises:
            ValueError: not such an expression.
        """
        ...

    def create(self, reminder: Reminder) -> None:
        """Create the schedule ``reminder.schedule_name`` firing ``reminder.expression`` in ``reminder.time_zone``."""
        ...

    def delete(self, reminder: Reminder) -> None:
        """Delete the schedule (already gone: no error)."""
        ...


class ReminderChannel(Protocol):
    """Where a firing goes (SNS topic with ``project_id`` / ``user_id`` attributes; the project's
    webhook). Raises on delivery failure (the scheduler retries, then the DLQ)."""

    def deliver(self, delivery: ReminderDelivery) -> list[str]:
        """Deliver; returns the channels used (``sns``, ``webhook``)."""
        ...


class HostResolver(Protocol):
    """DNS for the egress policy (``agent_memory.adapters.resolver.SystemResolver``; tests pass a fake)."""

    def resolve(self, host: str, port: int) -> list[str]:
        """The addresses ``host`` resolves to (IP strings); ``[]`` when it does not resolve."""
        ...


class ProjectSecretReader(Protocol):
    """Reads a service-owned project secret (docs/architecture.md, "Project secrets").

    Raises: ``SecretNotSet`` (none, or scheduled for deletion), ``SecretUnreadable`` (access denied,
    key refused), ``ExternalServiceError`` (the service failed).
    """

    def read(self, ref: ProjectSecretRef, *, fresh: bool = False) -> SecretStr:
        """The current value (cached a few minutes unless ``fresh``)."""
        ...


class ProjectSecretWriter(Protocol):
    """Writes service-owned project secrets; nothing here returns a value (write-only).

    Raises ``ExternalServiceError`` when the service fails.
    """

    def put(self, ref: ProjectSecretRef, value: SecretStr) -> None:
        """Create the secret (tagged ``project_id`` and ``purpose``, encrypted with the stack's key
        when one is set) or store a new current value; a secret scheduled for deletion is restored
        first. Idempotent: a retry leaves the same current value."""
        ...

    def delete(self, ref: ProjectSecretRef) -> bool:
        """Schedule the secret's deletion (the recovery window applies); False when there is none."""
        ...


class ReminderWebhookStore(Protocol):
    """The project's reminder webhook (``WEBHOOK`` item): ``(url, key's secret name)`` or None."""

    def webhook(self, project_id: str) -> tuple[str, str] | None: ...

    def put_webhook(self, project_id: str, url: str, secret_name: str) -> None: ...

    def delete_webhook(self, project_id: str) -> bool:
        """Remove it; False when there was none."""
        ...


class WeComChannelStore(Protocol):
    """A project's WeCom channel record (``CHANNEL#wecom``: what is set, never a secret)."""

    def get_channel(self, project_id: str) -> WeComChannel | None:
        """The record (strongly consistent), or None when the project has no WeCom channel."""
        ...

    def put_channel(self, channel: WeComChannel) -> None:
        """Create or replace the record."""
        ...

    def delete_channel(self, project_id: str) -> bool:
        """Remove the record; False when there was none."""
        ...


class WeComDirectory(Protocol):
    """Who a WeCom user is in a project (the ``WECOMUSER#`` items the member writes keep)."""

    def wecom_member(self, project_id: str, wecom_userid: str) -> str | None:
        """The user id of the member with that WeCom user id (ignoring case), or None."""
        ...


class WeComCallbackProtocol(Protocol):
    """WeCom's callback protocol (回调加解密) with one project's channel settings: signature, the
    timestamp window, AES, the corp id. Raises ``WeComSignatureInvalid`` / ``WeComCallbackStale``
    (401), ``WeComReceiverMismatch`` (403), ``WeComMalformedCallback`` (400), ``PayloadTooLarge``."""

    def verify_url(self, settings: WeComChannelSettings, params: WeComCallbackParams, echostr: str) -> str:
        """The decrypted ``echostr`` of WeCom's URL verification."""
        ...

    def open_message(self, settings: WeComChannelSettings, params: WeComCallbackParams,
                     body: str) -> WeComInboundMessage:
        """The checked, decrypted message of a callback ``POST`` body."""
        ...


class WeComInboundQueue(Protocol):
    """Where the callback puts a checked inbound message for the chat turn (the inbound queue).
    Raises ``ExternalServiceError`` when the queue cannot take it (WeCom then sends it again)."""

    def enqueue(self, inbound: WeComInbound) -> None: ...


class WeComOutbox(Protocol):
    """Where messages for a project's WeCom channel wait to be sent (the outbox queue: ordered per
    recipient, deduplicated on each message's ``dedupe_key``). Raises ``ExternalServiceError``."""

    def send(self, messages: Sequence[WeComOutbound]) -> int:
        """Split each message at WeCom's limits and queue its parts in order; returns the parts queued."""
        ...


class WeComSender(Protocol):
    """WeCom's API (``message/send``, the robot's ``webhook/send``) for one part of a message.

    Raises ``ExternalServiceError`` (``retryable`` for a transient fault) and ``EgressBlocked``."""

    def send_part(self, settings: WeComChannelSettings, part: WeComOutboundPart) -> None: ...
