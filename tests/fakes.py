"""In-memory fakes of every port in ``agent_memory.ports``: what the unit tests pass instead of
DynamoDB, SQS, SNS, the clinical data source, the LLM and the clock (no AWS, no sockets).

Storage: :class:`InMemoryStore` implements every storage port (``ChatStore``, ``SessionsStore``,
``ConversationStore``, ``PatientDiagnoses``, ``MessageReader``, ``JobStore``, ``AdminStore``,
``ViewStore``, ``ActivityReader``, ``ContextStore``) on one set of in-memory tables, and keeps the
contracts the ports and the DynamoDB adapters document:

- optimistic locks: a write based on a version that is no longer current raises ``VersionConflict``
  and writes nothing (a hot-memory conflict carries the current version, a report correction the
  current revision);
- ``ProjectNotFound`` wherever the adapters read the project record first;
- one call = one transaction: a ``TurnWrite`` (session, messages, flow log, answered messages,
  activity markers), a hot-memory commit (HOT, its revision, the job marker or the audit record and
  the review decision), a diagnosis with its session, a weekly report with its marker, a report
  correction with its previous text and audit record are applied whole or not at all; a diagnosis
  given the patient's references (``patient_refs``) writes them in the same call, under their
  version (0: none stored yet), like the adapter's references item;
- a turn's read naming a patient returns that patient's stored references; without them, ``[]``
  for a patient without diagnoses and None for one whose diagnoses were written around the
  references (rows put straight into the table, like diagnoses from before the references items);
- markers, review items, yearly summaries, alert claims and new weekly reports are written only
  when absent (the put says whether it wrote);
- listings come newest (or oldest) first like the adapters' queries and page with opaque cursors;
  a cursor this store did not issue for that listing is refused;
- an item over DynamoDB's 400 KB item limit raises ``ItemTooLarge``.

Rows are kept as JSON: a read returns a copy, as a database read does, and
:meth:`InMemoryStore.snapshot` compares whole states byte for byte.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, SecretStr

from agent_memory.adapters.dynamo.item_size import DYNAMODB_ITEM_LIMIT_BYTES
from agent_memory.domain.clinical import ClinicalEvent, DataDictionary, FieldDef, IdentifierValue
from agent_memory.domain.errors import (
    AlreadyDecided,
    AlreadyExists,
    DiagnosisNotFound,
    EnqueueFailed,
    ExternalServiceError,
    InvalidContinuationToken,
    InvalidInput,
    ItemTooLarge,
    LastAdmin,
    MessageNotFound,
    ProjectNotFound,
    SecretNotSet,
    SecretUnreadable,
    VersionConflict,
)
from agent_memory.domain.jobs import Alert, FlowLogEntry, JobRequest, JobRun, ReviewItem
from agent_memory.domain.llm import LLMRequest, LLMResponse, Provider, Usage
from agent_memory.domain.models import HotMemory, Member, Project, WeeklyReport, YearlySummary
from agent_memory.domain.records import (
    AuditRecord,
    Page,
    ReportRevision,
    ReviewEntry,
    RevisionSummary,
    StoredRevision,
    review_item_id,
    split_review_item_id,
)
from agent_memory.domain.secrets import ProjectSecretRef
from agent_memory.domain.session_models import (
    MAX_DIAGNOSIS_REFS,
    Diagnosis,
    DiagnosisRef,
    PatientRefs,
    SessionListItem,
    SessionMessage,
    SessionMessagePage,
    SessionPage,
    speaker_of,
)
from agent_memory.domain.text import utf8_len
from agent_memory.domain.turns import MessageRecord, SessionState, TurnContext, TurnWrite
from agent_memory.domain.wecom import (
    WeComChannel,
    WeComChannelSettings,
    WeComInbound,
    WeComOutbound,
    WeComOutboundPart,
)

if TYPE_CHECKING:
    from agent_memory.ports import LLMClient

#: Ends of the ISO-week range when a listing leaves one open (``YYYY-Www`` labels sort as text).
_FIRST_WEEK, _LAST_WEEK = "0000-W00", "9999-W99"


def sort_time(at: datetime) -> str:
    """A fixed-width UTC time: string order is time order (the adapters' sort-key format)."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ----------------------------------------------------------------------------------- rows
class StoredMessage(BaseModel):
    """A message row: the record, the context manifest of its turn, the message it answers."""

    record: MessageRecord
    context: dict[str, Any] | None = None
    reply_to: str | None = None


class FlowLogRow(BaseModel):
    """A flow-log row: the entry and its expiry (None: kept)."""

    entry: FlowLogEntry
    expires_at: datetime | None = None


class ReportRevisionRow(BaseModel):
    """A weekly report's text before an admin correction."""

    report: WeeklyReport
    replaced_at: datetime
    replaced_by: str


class AlertClaim(BaseModel):
    """An alert that was sent (so it is never sent twice)."""

    kind: str
    created_at: datetime


@dataclass
class Tables:
    """Every row, as JSON, by key; each key starts with the project id (tenancy)."""

    projects: dict[tuple[str], str] = field(default_factory=dict)
    members: dict[tuple[str, str], str] = field(default_factory=dict)
    hot: dict[tuple[str], str] = field(default_factory=dict)
    revisions: dict[tuple[str, int], str] = field(default_factory=dict)
    reports: dict[tuple[str, str], str] = field(default_factory=dict)
    report_revisions: dict[tuple[str, str, int], str] = field(default_factory=dict)
    yearly: dict[tuple[str, int], str] = field(default_factory=dict)
    activity: dict[tuple[str, str], str] = field(default_factory=dict)
    job_runs: dict[tuple[str, str, str], str] = field(default_factory=dict)
    reviews: dict[tuple[str, str, str], str] = field(default_factory=dict)
    alerts: dict[tuple[str, str], str] = field(default_factory=dict)
    audit: dict[tuple[str, str], str] = field(default_factory=dict)
    sessions: dict[tuple[str, str], str] = field(default_factory=dict)
    messages: dict[tuple[str, str, str], str] = field(default_factory=dict)
    diagnoses: dict[tuple[str, str, str], str] = field(default_factory=dict)
    patient_refs: dict[tuple[str, str], str] = field(default_factory=dict)
    flow_log: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def snapshot(self, project_id: str | None = None) -> dict[str, dict[tuple[Any, ...], str]]:
        """A copy of every table (only ``project_id``'s rows when given)."""
        return {
            f.name: {k: v for k, v in getattr(self, f.name).items() if project_id is None or k[0] == project_id}
            for f in fields(self)
        }


def new_keys(before: dict[str, dict[tuple[Any, ...], str]],
             after: dict[str, dict[tuple[Any, ...], str]]) -> dict[str, set[tuple[Any, ...]]]:
    """The keys each table gained between two snapshots (tables that gained none left out)."""
    gained = {name: set(after[name]) - set(before[name]) for name in after}
    return {name: keys for name, keys in gained.items() if keys}


def _json(model: BaseModel) -> str:
    return model.model_dump_json()


def _load[M: BaseModel](cls: type[M], raw: str) -> M:
    return cls.model_validate_json(raw)


def _check_size(what: str, raw: str) -> None:
    size = utf8_len(raw)
    if size > DYNAMODB_ITEM_LIMIT_BYTES:
        raise ItemTooLarge(f"{what} would be {size} bytes (limit {DYNAMODB_ITEM_LIMIT_BYTES})")


def _encode_cursor(listing: str, key: Sequence[str | int]) -> str:
    raw = json.dumps({"l": listing, "k": list(key)}, ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def _newest_first(listing: str, keys: Iterable[Any], *, limit: int, cursor: str | None) -> tuple[list[Any], str | None]:
    """One page of ``keys``, largest (newest) first, after the key ``cursor`` names, and the cursor
    of the next page: given whenever the page is full, as DynamoDB gives a LastEvaluatedKey.

    Raises:
        InvalidInput: ``cursor`` was not issued for ``listing``.
    """
    ordered = sorted(keys, reverse=True)
    if cursor:
        after = _decode_cursor(listing, cursor)
        if after is None or len(after) != 1:
            raise InvalidInput("invalid cursor")
        ordered = [k for k in ordered if k < after[0]]
    page = ordered[:limit]
    return page, _encode_cursor(listing, [page[-1]]) if page and len(page) == limit else None


def _decode_cursor(listing: str, cursor: str) -> list[Any] | None:
    """The key a cursor resumes after, or None when it was not issued for ``listing``."""
    try:
        data = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        return None
    if not isinstance(data, dict) or data.get("l") != listing or not isinstance(data.get("k"), list):
        return None
    key: list[Any] = data["k"]
    return key


# ---------------------------------------------------------------------------------- store
class InMemoryStore:
    """Every storage port on in-memory tables (module docstring: the contracts kept).

    Several stores may share one :class:`Tables` (two containers, or a store wrapped to race).
    Besides the ports it has the adapters' seeding writes (``put_project``, ``save_hot_memory``,
    ``put_weekly_report``) and a few test-only writes (``append_flow_log``, ``mark_active``,
    ``forget_job_run``).
    """

    def __init__(self, tables: Tables | None = None) -> None:
        self.tables = tables if tables is not None else Tables()
        self._request_tokens: set[str] = set()

    def snapshot(self, project_id: str | None = None) -> dict[str, dict[tuple[Any, ...], str]]:
        """A copy of every table (see :meth:`Tables.snapshot`)."""
        return self.tables.snapshot(project_id)

    # ------------------------------------------------------------------- projects
    def put_project(self, project: Project) -> None:
        """Create or replace the project record."""
        self.tables.projects[(project.project_id,)] = _json(project)

    def get_project(self, project_id: str) -> Project:
        """The project record. Raises ProjectNotFound."""
        return self._project(project_id)

    def _project(self, project_id: str) -> Project:
        raw = self.tables.projects.get((project_id,))
        if raw is None:
            raise ProjectNotFound(f"unknown project {project_id}")
        return _load(Project, raw)

    def create_project(self, project: Project, *, rules: HotMemory | None = None, actor: str = "",
                       tokens: int = 0) -> None:
        """Store a new project (and its first hot memory). Raises AlreadyExists when the id is taken."""
        if (project.project_id,) in self.tables.projects:
            raise AlreadyExists(f"project {project.project_id} already exists")
        if rules is not None:
            self.save_hot_memory(rules, expected_version=0, actor=actor, now=project.created_at, tokens=tokens,
                                 reason="baseline System Rules of a new project")
        self.put_project(project)

    def update_project(self, project: Project) -> None:
        """Replace an existing project. Raises ProjectNotFound."""
        self._project(project.project_id)
        self.put_project(project)

    # -------------------------------------------------------------------- members
    def get_member(self, project_id: str, user_id: str) -> Member | None:
        """The membership, or None."""
        raw = self.tables.members.get((project_id, user_id))
        return _load(Member, raw) if raw is not None else None

    def list_members(self, project_id: str) -> list[Member]:
        """Every member of the project, by user id."""
        return [_load(Member, raw) for (p, _), raw in sorted(self.tables.members.items()) if p == project_id]

    def memberships_of(self, user_id: str, *, limit: int) -> list[Member]:
        """The user's memberships, by project id, at most ``limit``."""
        return [_load(Member, raw) for (_, u), raw in sorted(self.tables.members.items()) if u == user_id][:limit]

    def get_projects(self, project_ids: list[str]) -> list[Project]:
        """The records of those of ``project_ids`` that exist, by project id."""
        return [_load(Project, self.tables.projects[(p,)]) for p in sorted(set(project_ids))
                if (p,) in self.tables.projects]

    def _other_admin(self, project_id: str, user_id: str) -> bool:
        return any(m.project_role == "admin" and m.user_id != user_id for m in self.list_members(project_id))

    def put_member(self, member: Member) -> bool:
        """Create or replace a membership; True when new. Raises LastAdmin when it would demote
        the last admin, AlreadyExists when another member has its WeCom user id (ignoring case)."""
        current = self.get_member(member.project_id, member.user_id)
        if (current is not None and current.project_role == "admin" and member.project_role != "admin"
                and not self._other_admin(member.project_id, member.user_id)):
            raise LastAdmin(f"{member.user_id} is the last admin of project {member.project_id}")
        holder = self.wecom_member(member.project_id, member.wecom_userid) if member.wecom_userid else None
        if holder is not None and holder != member.user_id:
            raise AlreadyExists("this WeCom user id belongs to another member of the project")
        self.tables.members[(member.project_id, member.user_id)] = _json(member)
        return current is None

    def wecom_member(self, project_id: str, wecom_userid: str) -> str | None:
        """The user id of the member with that WeCom user id (ignoring case), or None."""
        return next((m.user_id for m in self.list_members(project_id)
                     if m.wecom_userid and m.wecom_userid.lower() == wecom_userid.lower()), None)

    def remove_member(self, project_id: str, user_id: str) -> bool:
        """Remove a membership; False when there was none. Raises LastAdmin for the last admin."""
        current = self.get_member(project_id, user_id)
        if current is None:
            return False
        if current.project_role == "admin" and not self._other_admin(project_id, user_id):
            raise LastAdmin(f"{user_id} is the last admin of project {project_id}")
        del self.tables.members[(project_id, user_id)]
        return True

    # ----------------------------------------------------------------- hot memory
    def load_hot_memory(self, project_id: str) -> HotMemory:
        """The current hot memory (``version == 0`` when none is stored)."""
        return self._hot(project_id)

    def _hot(self, project_id: str) -> HotMemory:
        raw = self.tables.hot.get((project_id,))
        return _load(HotMemory, raw) if raw is not None else HotMemory(project_id=project_id, version=0)

    def _hot_version(self, project_id: str) -> int:
        return self._hot(project_id).version

    def _hot_rows(self, hot: HotMemory, *, expected_version: int, actor: str, reason: str | None, now: datetime,
                  tokens: int) -> tuple[HotMemory, StoredRevision, list[str]]:
        """The new current hot memory, its revision and the conditions that fail now."""
        new_version = expected_version + 1
        saved = HotMemory(project_id=hot.project_id, version=new_version, lines=list(hot.lines), updated_at=now,
                          updated_by=actor, dismissed_evidence=list(hot.dismissed_evidence),
                          dismissed_lines=list(hot.dismissed_lines))
        revision = StoredRevision(
            summary=RevisionSummary(version=new_version, created_at=now, created_by=actor, reason=reason,
                                    tokens=tokens),
            hot=saved,
        )
        _check_size("hot memory item", _json(saved))
        _check_size("hot memory revision item", _json(revision))
        failed = []
        if self._hot_version(hot.project_id) != expected_version:
            failed.append("hot memory version")
        if (hot.project_id, new_version) in self.tables.revisions:
            failed.append("revision exists")
        return saved, revision, failed

    def _write_hot(self, saved: HotMemory, revision: StoredRevision) -> None:
        self.tables.hot[(saved.project_id,)] = _json(saved)
        self.tables.revisions[(saved.project_id, saved.version)] = _json(revision)

    def save_hot_memory(self, hot: HotMemory, *, expected_version: int, actor: str, reason: str | None,
                        now: datetime, tokens: int) -> HotMemory:
        """Store a new version and its revision (seeding). Raises VersionConflict (current version)."""
        saved, revision, failed = self._hot_rows(hot, expected_version=expected_version, actor=actor,
                                                 reason=reason, now=now, tokens=tokens)
        if failed:
            raise VersionConflict("hot memory changed", current_version=self._hot_version(hot.project_id))
        self._write_hot(saved, revision)
        return hot.model_copy(update={"version": saved.version, "updated_at": now, "updated_by": actor})

    def commit_hot_memory(
        self,
        hot: HotMemory,
        *,
        expected_version: int,
        actor: str,
        reason: str | None,
        now: datetime,
        tokens: int,
        run: JobRun | None = None,
        audit: AuditRecord | None = None,
        decide: ReviewEntry | None = None,
    ) -> HotMemory:
        """One transaction: the new version, its revision, and the job's marker (``JobStore``) or
        the audit record and a review decision (``AdminStore``).

        Raises:
            AlreadyDecided: ``decide`` names an item that is no longer pending (checked first).
            VersionConflict: the hot memory moved on or the marker exists (current version).
        """
        if decide is not None:
            self._check_decision(decide)
        saved, revision, failed = self._hot_rows(hot, expected_version=expected_version, actor=actor,
                                                 reason=reason, now=now, tokens=tokens)
        marker = run.model_copy(update={"hot_version": saved.version}) if run is not None else None
        if marker is not None and self._job_run_key(marker) in self.tables.job_runs:
            failed.append("job marker exists")
        if audit is not None and self._audit_key(audit) in self.tables.audit:
            failed.append("audit record exists")
        if decide is not None and not self._pending(hot.project_id, decide):
            raise self._already_decided(hot.project_id, decide)
        if failed:
            raise VersionConflict("hot memory changed", current_version=self._hot_version(hot.project_id))
        self._write_hot(saved, revision)
        if marker is not None:
            self.tables.job_runs[self._job_run_key(marker)] = _json(marker)
        if audit is not None:
            self.tables.audit[self._audit_key(audit)] = _json(audit)
        if decide is not None:
            self._write_decision(hot.project_id, decide)
        return hot.model_copy(update={"version": saved.version, "updated_at": now, "updated_by": actor})

    def get_hot_memory_revision(self, project_id: str, version: int) -> HotMemory | None:
        """A stored version (its ``updated_*`` are the revision's ``created_*``), or None."""
        raw = self.tables.revisions.get((project_id, version))
        return _load(StoredRevision, raw).hot if raw is not None else None

    def get_revision(self, project_id: str, version: int) -> StoredRevision | None:
        """One stored version with its lines, or None."""
        raw = self.tables.revisions.get((project_id, version))
        return _load(StoredRevision, raw) if raw is not None else None

    def list_revisions(self, project_id: str, *, limit: int, cursor: str | None) -> Page[RevisionSummary]:
        """Stored versions newest first, one page. Raises InvalidInput for a foreign cursor."""
        page, next_cursor = _newest_first(f"revisions#{project_id}", (v for p, v in self.tables.revisions
                                                                     if p == project_id), limit=limit, cursor=cursor)
        items = [_load(StoredRevision, self.tables.revisions[(project_id, v)]).summary for v in page]
        return Page[RevisionSummary](items=items, next_cursor=next_cursor)

    # -------------------------------------------------------------------- reports
    def put_weekly_report(self, report: WeeklyReport, *, overwrite: bool = False) -> bool:
        """Store a report; False (nothing written) when one exists and ``overwrite`` is False."""
        key = (report.project_id, report.iso_week)
        if key in self.tables.reports and not overwrite:
            return False
        self.tables.reports[key] = _json(report)
        return True

    def _reports(self, project_id: str, first_week: str, last_week: str) -> list[WeeklyReport]:
        """Reports with ``first_week <= iso_week <= last_week``, oldest first."""
        weeks = sorted(w for p, w in self.tables.reports if p == project_id and first_week <= w <= last_week)
        return [_load(WeeklyReport, self.tables.reports[(project_id, w)]) for w in weeks]

    def load_history(self, project_id: str, *, limit_weeks: int, page_size: int | None = None) -> list[WeeklyReport]:
        """The ``limit_weeks`` newest weekly reports, newest first."""
        return list(reversed(self._reports(project_id, _FIRST_WEEK, _LAST_WEEK)))[:limit_weeks]

    def get_reports(self, project_id: str, weeks: list[str]) -> list[WeeklyReport]:
        """Reports of the given weeks, newest first; missing weeks skipped."""
        found = [self.tables.reports.get((project_id, w)) for w in dict.fromkeys(weeks)]
        return sorted((_load(WeeklyReport, raw) for raw in found if raw is not None),
                      key=lambda r: r.iso_week, reverse=True)

    def get_weekly_report(self, project_id: str, iso_week: str) -> WeeklyReport | None:
        """The report of one ISO week, or None."""
        raw = self.tables.reports.get((project_id, iso_week))
        return _load(WeeklyReport, raw) if raw is not None else None

    get_report = get_weekly_report

    def commit_weekly_report(self, report: WeeklyReport, run: JobRun) -> bool:
        """A NEW report and the archive marker together; False (nothing written) when either exists."""
        key = (report.project_id, report.iso_week)
        if key in self.tables.reports or self._job_run_key(run) in self.tables.job_runs:
            return False
        self.tables.reports[key] = _json(report)
        self.tables.job_runs[self._job_run_key(run)] = _json(run)
        return True

    def list_reports_between(self, project_id: str, first_week: str, last_week: str, *,
                             page_size: int | None = None) -> list[WeeklyReport]:
        """Reports with ``first_week <= iso_week <= last_week``, oldest first."""
        return self._reports(project_id, first_week, last_week)

    def reports_between(self, project_id: str, first_week: str | None, last_week: str | None, *,
                        limit: int) -> list[WeeklyReport]:
        """Reports in the range (None = open end), newest first, at most ``limit``. Raises ProjectNotFound."""
        self.get_project(project_id)
        found = self._reports(project_id, first_week or _FIRST_WEEK, last_week or _LAST_WEEK)
        return list(reversed(found))[:limit]

    def correct_report(self, previous: WeeklyReport, corrected: WeeklyReport, *, replaced_by: str,
                       audit: AuditRecord) -> None:
        """The correction, the previous text and the audit record together.

        Raises:
            VersionConflict: the stored revision is not ``previous.revision`` (current revision).
        """
        key = (previous.project_id, previous.iso_week)
        raw = self.tables.reports.get(key)
        current = _load(WeeklyReport, raw) if raw is not None else None
        old_key = (previous.project_id, previous.iso_week, previous.revision)
        if (current is None or current.revision != previous.revision or old_key in self.tables.report_revisions
                or self._audit_key(audit) in self.tables.audit):
            raise VersionConflict("someone else corrected the report first",
                                  current_version=current.revision if current else None)
        self.tables.reports[key] = _json(current.model_copy(update={
            "summary": corrected.summary, "revision": corrected.revision,
            "created_at": corrected.created_at, "created_by": corrected.created_by, "reason": corrected.reason,
        }))
        self.tables.report_revisions[old_key] = _json(
            ReportRevisionRow(report=previous, replaced_at=corrected.created_at, replaced_by=replaced_by))
        self.tables.audit[self._audit_key(audit)] = _json(audit)

    def list_report_revisions(self, project_id: str, iso_week: str) -> list[ReportRevision]:
        """The replaced revisions of the week's report, newest first."""
        rows = sorted(((r, raw) for (p, w, r), raw in self.tables.report_revisions.items()
                       if (p, w) == (project_id, iso_week)), reverse=True)
        out = []
        for _, raw in rows:
            row = _load(ReportRevisionRow, raw)
            out.append(ReportRevision(**row.report.model_dump(include=set(ReportRevision.model_fields)),
                                      replaced_at=row.replaced_at, replaced_by=row.replaced_by))
        return out

    def load_yearly_summaries(self, project_id: str) -> list[YearlySummary]:
        """Every yearly summary of the project, oldest year first."""
        years = sorted(y for p, y in self.tables.yearly if p == project_id)
        return [_load(YearlySummary, self.tables.yearly[(project_id, y)]) for y in years]

    def put_yearly_summary(self, summary: YearlySummary) -> bool:
        """Write the year's summary unless it exists; False when it existed."""
        key = (summary.project_id, summary.year)
        if key in self.tables.yearly:
            return False
        self.tables.yearly[key] = _json(summary)
        return True

    # ------------------------------------------------------------------ sessions
    def get_session(self, project_id: str, session_id: str) -> SessionState | None:
        """The session, or None."""
        return self._session(project_id, session_id)

    def _session(self, project_id: str, session_id: str) -> SessionState | None:
        raw = self.tables.sessions.get((project_id, session_id))
        return _load(SessionState, raw) if raw is not None else None

    def load_turn_context(
        self, project_id: str, session_id: str, *, now: datetime, user_id: str | None = None,
        patient_id: str | None = None,
    ) -> TurnContext:
        """Project, hot memory, session (a new unsaved one, ``version == 0``, when absent), the
        asker's membership (``user_id`` given; None when not a member) and the patient's
        references (``patient_id`` given; module docstring).

        Raises:
            ProjectNotFound: no project record.
        """
        project = self._project(project_id)
        session = self._session(project_id, session_id) or SessionState(
            project_id=project_id, session_id=session_id, created_at=now, updated_at=now, version=0)
        asker = self.get_member(project_id, user_id) if user_id is not None else None
        known: list[DiagnosisRef] | None = None
        if patient_id is not None:
            raw = self.tables.patient_refs.get((project_id, patient_id))
            if raw is not None:
                known = _load(PatientRefs, raw).refs
            elif not self.patient_diagnoses(project_id, patient_id, limit=1):
                known = []
        return TurnContext(project=project, hot_memory=self._hot(project_id), session=session, asker=asker,
                           patient_diagnoses=known)

    def _session_version_holds(self, project_id: str, session_id: str, expected_version: int) -> bool:
        """The version condition: 0 = the session must not exist; else its version must match."""
        raw = self.tables.sessions.get((project_id, session_id))
        if not expected_version:
            return raw is None
        return raw is not None and _load(SessionState, raw).version == expected_version

    def _session_row(self, session: SessionState, version: int) -> str:
        raw = _json(session.model_copy(update={"version": version}))
        _check_size("session item", raw)
        return raw

    def record_turn(self, write: TurnWrite) -> None:
        """Apply ``write`` whole or not at all (see ``ConversationStore.record_turn``).

        Raises:
            VersionConflict: the session's version is not ``write.expected_version``, a message or
                flow-log row of the turn exists, or an answered message is not a failed one.
            ItemTooLarge: the session or a message row is over 400 KB.
        """
        if write.client_request_token and write.client_request_token in self._request_tokens:
            return  # the same transaction again: applied once
        s = write.session
        session_row = self._session_row(s, write.expected_version + 1)
        message_rows = {}
        for m in write.new_messages:
            raw = _json(StoredMessage(record=m, context=write.contexts.get(m.message_id),
                                      reply_to=write.reply_to.get(m.message_id)))
            _check_size("message item", raw)
            message_rows[(s.project_id, s.session_id, m.message_id)] = raw
        expires = (write.now + timedelta(days=write.flow_log_retention_days)
                   if write.flow_log_retention_days > 0 else None)
        flow_rows = {(s.project_id, sort_time(m.at), m.message_id): _json(FlowLogRow(entry=_flow_entry(s, m),
                                                                                     expires_at=expires))
                     for m in write.flow_log}
        answered = {}
        for message_id in write.mark_ok:
            row = self.tables.messages.get((s.project_id, s.session_id, message_id))
            stored = _load(StoredMessage, row) if row is not None else None
            if stored is None or stored.record.status != "failed":
                raise VersionConflict("session changed concurrently", current_version=None)
            stored.record = stored.record.model_copy(update={"status": "ok"})
            answered[(s.project_id, s.session_id, message_id)] = _json(stored)
        if (not self._session_version_holds(s.project_id, s.session_id, write.expected_version)
                or any(k in self.tables.messages for k in message_rows)
                or any(k in self.tables.flow_log for k in flow_rows)):
            raise VersionConflict("session changed concurrently", current_version=None)
        self.tables.sessions[(s.project_id, s.session_id)] = session_row
        self.tables.messages.update(message_rows)
        self.tables.messages.update(answered)
        self.tables.flow_log.update(flow_rows)
        for local_date in sorted(set(write.activity_local_dates)):
            self.mark_active(s.project_id, local_date, write.now)
        if write.client_request_token:
            self._request_tokens.add(write.client_request_token)

    def create_session(self, session: SessionState) -> SessionState:
        """Store a new session (version 1). Raises AlreadyExists."""
        key = (session.project_id, session.session_id)
        if key in self.tables.sessions:
            raise AlreadyExists(f"session {session.session_id} already exists")
        self.tables.sessions[key] = self._session_row(session, 1)
        return session.model_copy(update={"version": 1})

    def _sessions_page(self, listing: str, sessions: Iterable[SessionState], *, limit: int,
                       next_token: str | None) -> SessionPage:
        """Newest ``updated_at`` first (then session id), one page of ``limit``."""
        ordered = sorted(sessions, key=lambda s: (sort_time(s.updated_at), s.session_id), reverse=True)
        if next_token:
            after = _decode_cursor(listing, next_token)
            if after is None or len(after) != 2:
                raise InvalidContinuationToken("next_token is not valid for this listing")
            ordered = [s for s in ordered if (sort_time(s.updated_at), s.session_id) < tuple(after)]
        page = ordered[:limit]
        token = None
        if len(ordered) > limit and page:
            token = _encode_cursor(listing, [sort_time(page[-1].updated_at), page[-1].session_id])
        return SessionPage(sessions=[_list_item(s) for s in page], next_token=token)

    def _project_sessions(self, project_id: str) -> list[SessionState]:
        return [_load(SessionState, raw) for (p, _), raw in self.tables.sessions.items() if p == project_id]

    def patient_erased(self, project_id: str, patient_id: str) -> bool:
        return (project_id, patient_id) in getattr(self, "erased_patients", set())

    def list_patient_sessions(self, project_id: str, patient_id: str, *, limit: int, next_token: str | None = None,
                              page_size: int | None = None) -> SessionPage:
        """A patient's sessions, newest first. Raises InvalidContinuationToken."""
        mine = [s for s in self._project_sessions(project_id) if s.patient_id == patient_id]
        return self._sessions_page(f"patient#{project_id}#{patient_id}", mine, limit=limit, next_token=next_token)

    def list_project_sessions(self, project_id: str, *, limit: int, next_token: str | None = None,
                              page_size: int | None = None) -> SessionPage:
        """A project's sessions, newest first. Raises InvalidContinuationToken."""
        return self._sessions_page(f"project#{project_id}", self._project_sessions(project_id), limit=limit,
                                   next_token=next_token)

    # ------------------------------------------------------------------ messages
    def get_message(
        self, project_id: str, session_id: str, message_id: str
    ) -> tuple[MessageRecord, dict[str, Any] | None]:
        """A message and its context manifest. Raises MessageNotFound."""
        raw = self.tables.messages.get((project_id, session_id, message_id))
        if raw is None:
            raise MessageNotFound(f"unknown message {message_id}")
        stored = _load(StoredMessage, raw)
        return stored.record, stored.context

    def get_messages(self, project_id: str, session_id: str, message_ids: list[str]) -> dict[str, MessageRecord]:
        """Messages by id; missing ids skipped."""
        rows = self.tables.messages
        keys = [(project_id, session_id, m) for m in dict.fromkeys(message_ids)]
        return {k[2]: _load(StoredMessage, rows[k]).record for k in keys if k in rows}

    def messages_between(self, project_id: str, session_id: str, *, after_id: str | None, before_id: str,
                         limit: int = 50) -> list[MessageRecord]:
        """The newest ``limit`` messages with ``after_id < id < before_id`` (ids sort by time), oldest first."""
        ids = sorted((m for p, s, m in self.tables.messages if (p, s) == (project_id, session_id)
                      and (after_id is None or m > after_id) and m < before_id), reverse=True)
        return [_load(StoredMessage, self.tables.messages[(project_id, session_id, m)]).record
                for m in reversed(ids[:limit])]

    # ----------------------------------------------------------------- diagnoses
    def add_diagnosis(self, diagnosis: Diagnosis, session: SessionState, *, expected_version: int,
                      patient_refs: PatientRefs | None = None) -> None:
        """The diagnosis, the updated session and (``patient_refs`` given) the patient's
        references with this diagnosis's merged in, together.

        Raises:
            AlreadyExists: the session already has a diagnosis with that id (checked first).
            VersionConflict: the session, or the patient's references, changed since they were read.
            ItemTooLarge: the diagnosis or the session is over 400 KB.
        """
        raw = _json(diagnosis)
        _check_size("diagnosis item", raw)
        session_row = self._session_row(session, expected_version + 1)
        key = (diagnosis.project_id, diagnosis.session_id, diagnosis.diagnosis_id)
        if key in self.tables.diagnoses:
            raise AlreadyExists(f"diagnosis {diagnosis.diagnosis_id} already exists")
        if not self._session_version_holds(session.project_id, session.session_id, expected_version):
            raise VersionConflict("session changed concurrently", current_version=None)
        refs_row = None
        if patient_refs is not None:
            refs_key = (patient_refs.project_id, patient_refs.patient_id)
            stored = self.tables.patient_refs.get(refs_key)
            if (_load(PatientRefs, stored).version if stored is not None else 0) != patient_refs.version:
                raise VersionConflict("the patient's references changed", current_version=None)
            updated = patient_refs.plus(diagnosis.ref())
            refs_row = (refs_key, _json(updated.model_copy(update={"version": patient_refs.version + 1})))
        self.tables.diagnoses[key] = raw
        self.tables.sessions[(session.project_id, session.session_id)] = session_row
        if refs_row is not None:
            self.tables.patient_refs[refs_row[0]] = refs_row[1]

    def patient_refs(self, project_id: str, patient_id: str) -> PatientRefs:
        """The patient's stored references, or an unsaved one (``version == 0``) built from the diagnoses."""
        raw = self.tables.patient_refs.get((project_id, patient_id))
        if raw is not None:
            return _load(PatientRefs, raw)
        refs = self.patient_diagnosis_refs(project_id, patient_id, limit=MAX_DIAGNOSIS_REFS)
        return PatientRefs(project_id=project_id, patient_id=patient_id, refs=list(reversed(refs)))

    def list_diagnoses(self, project_id: str, session_id: str) -> list[Diagnosis]:
        """A session's diagnoses in time order."""
        found = [_load(Diagnosis, raw) for (p, s, _), raw in self.tables.diagnoses.items()
                 if (p, s) == (project_id, session_id)]
        return sorted(found, key=lambda d: (d.created_at, d.diagnosis_id))

    def get_diagnosis(self, project_id: str, session_id: str, diagnosis_id: str) -> Diagnosis:
        """One diagnosis. Raises DiagnosisNotFound."""
        raw = self.tables.diagnoses.get((project_id, session_id, diagnosis_id))
        if raw is None:
            raise DiagnosisNotFound(f"unknown diagnosis {diagnosis_id}")
        return _load(Diagnosis, raw)

    def patient_diagnoses(self, project_id: str, patient_id: str, *, diagnosis_id: str | None = None,
                          limit: int | None = None) -> list[Diagnosis]:
        """A patient's diagnoses across sessions, newest first, optionally only ``diagnosis_id``."""
        found = [d for d in (_load(Diagnosis, raw) for (p, _, _), raw in self.tables.diagnoses.items()
                             if p == project_id)
                 if d.patient_id == patient_id and (diagnosis_id is None or d.diagnosis_id == diagnosis_id)]
        found.sort(key=lambda d: (sort_time(d.created_at), d.diagnosis_id), reverse=True)
        return found if limit is None else found[:limit]

    def patient_diagnosis_refs(self, project_id: str, patient_id: str, *, limit: int) -> list[DiagnosisRef]:
        """References of the patient's newest ``limit`` diagnoses."""
        return [d.ref() for d in self.patient_diagnoses(project_id, patient_id, limit=limit)]

    def list_messages(self, project_id: str, session_id: str, *, limit: int,
                      cursor: str | None = None) -> SessionMessagePage:
        """A page of the session's messages, oldest first. Raises InvalidContinuationToken."""
        ids = sorted(m for p, s, m in self.tables.messages if (p, s) == (project_id, session_id))
        after = _decode_cursor(f"messages#{project_id}#{session_id}", cursor) if cursor else [""]
        if after is None:
            raise InvalidContinuationToken("cursor is not valid for this listing")
        ids = [m for m in ids if m > after[0]]
        page = []
        for message_id in ids[:limit]:
            stored = _load(StoredMessage, self.tables.messages[(project_id, session_id, message_id)])
            m = stored.record
            page.append(SessionMessage(
                message_id=m.message_id, speaker=speaker_of(m.role, m.source), role=m.role, source=m.source,
                content=m.content, at=m.at, user_id=m.user_id, study_role=m.study_role, status=m.status,
                truncated=m.truncated, has_context=stored.context is not None,
            ))
        more = len(ids) > limit and page
        next_cursor = _encode_cursor(f"messages#{project_id}#{session_id}", [page[-1].message_id]) if more else None
        return SessionMessagePage(session_id=session_id, messages=page, next_cursor=next_cursor)

    # ------------------------------------------------------ flow log and activity
    def flow_log_messages(self, project_id: str, message_ids: list[str]) -> dict[str, FlowLogEntry]:
        """The kept flow-log messages of ``message_ids`` (feedback events aside), by id."""
        wanted = set(message_ids)
        rows = (_load(FlowLogRow, raw).entry for (p, _, _), raw in self.tables.flow_log.items() if p == project_id)
        return {e.message_id: e for e in rows if e.message_id in wanted and e.source != "feedback"}

    def append_flow_log(self, project_id: str, entry: FlowLogEntry) -> None:
        """Test-only: one flow-log row as a chat turn writes it."""
        self.tables.flow_log[(project_id, sort_time(entry.at), entry.message_id)] = _json(FlowLogRow(entry=entry))

    def mark_active(self, project_id: str, local_date: date | str, at: datetime) -> None:
        """The project's activity marker of one local date (what a turn writes per date)."""
        day = local_date if isinstance(local_date, str) else local_date.isoformat()
        self.tables.activity[(project_id, day)] = sort_time(at)

    def read_flow_log(self, project_id: str, start: datetime, end: datetime, *,
                      page_size: int | None = None) -> list[FlowLogEntry]:
        """Every flow-log message with ``start <= at < end``, in time order."""
        found = [_load(FlowLogRow, raw).entry for (p, _, _), raw in self.tables.flow_log.items() if p == project_id]
        return sorted((e for e in found if start <= e.at < end), key=lambda e: (e.at, e.message_id))

    def active_projects(self, local_dates: Sequence[date]) -> list[str]:
        """Distinct project ids with an activity marker on any of ``local_dates``, sorted."""
        days = {d.isoformat() for d in local_dates}
        return sorted({p for p, day in self.tables.activity if day in days})

    def project_hot_memory(self, project_id: str) -> tuple[Project, HotMemory]:
        """The project and its current hot memory. Raises ProjectNotFound."""
        return self._project(project_id), self._hot(project_id)

    # --------------------------------------------------------------- job markers
    @staticmethod
    def _job_run_key(run: JobRun) -> tuple[str, str, str]:
        return run.project_id, run.job, run.key

    def get_job_run(self, project_id: str, job: str, key: str) -> JobRun | None:
        """The completion marker, or None."""
        raw = self.tables.job_runs.get((project_id, job, key))
        return _load(JobRun, raw) if raw is not None else None

    def put_job_run(self, run: JobRun) -> bool:
        """Write the marker unless it exists; False when a run already finished."""
        if self._job_run_key(run) in self.tables.job_runs:
            return False
        self.tables.job_runs[self._job_run_key(run)] = _json(run)
        return True

    def forget_job_run(self, project_id: str, job: str, key: str) -> None:
        """Test-only: lose a marker (as a restore from an older backup would)."""
        del self.tables.job_runs[(project_id, job, key)]

    # ---------------------------------------------------------------- review queue
    def put_review_items(self, items: list[ReviewItem]) -> int:
        """Queue candidates; one already queued (same day and id) is left as is. Returns how many were new."""
        written = 0
        for r in items:
            key = (r.project_id, r.day, r.review_id)
            if key in self.tables.reviews:
                continue
            entry = ReviewEntry(item_id=review_item_id(r.day, r.review_id),
                                **r.model_dump(exclude={"project_id"}))
            self.tables.reviews[key] = _json(entry)
            written += 1
        return written

    def list_review(self, project_id: str, *, status: str | None) -> list[ReviewEntry]:
        """The review queue, oldest day first; ``status`` filters."""
        keys = sorted(k for k in self.tables.reviews if k[0] == project_id)
        entries = [_load(ReviewEntry, self.tables.reviews[k]) for k in keys]
        return [e for e in entries if status is None or e.status == status]

    def get_review(self, project_id: str, item_id: str) -> ReviewEntry | None:
        """One item by its route id ``{day}_{review_id}``, or None. Raises ReviewItemNotFound (bad id)."""
        day, review_id = split_review_item_id(item_id)
        raw = self.tables.reviews.get((project_id, day, review_id))
        return _load(ReviewEntry, raw) if raw is not None else None

    @staticmethod
    def _check_decision(decided: ReviewEntry) -> None:
        if decided.decided_by is None or decided.decided_at is None:
            raise ValueError("a decision needs decided_by and decided_at")

    def _stored_review(self, project_id: str, decided: ReviewEntry) -> ReviewEntry | None:
        raw = self.tables.reviews.get((project_id, decided.day, decided.review_id))
        return _load(ReviewEntry, raw) if raw is not None else None

    def _pending(self, project_id: str, decided: ReviewEntry) -> bool:
        stored = self._stored_review(project_id, decided)
        return stored is not None and stored.status == "pending"

    def _already_decided(self, project_id: str, decided: ReviewEntry) -> AlreadyDecided:
        stored = self._stored_review(project_id, decided)
        status = stored.status if stored else "unknown"
        return AlreadyDecided(f"review item {decided.item_id} was already {status}", status=status)

    def _write_decision(self, project_id: str, decided: ReviewEntry) -> None:
        key = (project_id, decided.day, decided.review_id)
        stored = _load(ReviewEntry, self.tables.reviews[key])
        self.tables.reviews[key] = _json(stored.model_copy(update={
            "status": decided.status, "decided_by": decided.decided_by, "decided_at": decided.decided_at,
            "decision_reason": decided.decision_reason or None, "approved_text": decided.approved_text or None,
        }))

    def decide_review(self, project_id: str, decided: ReviewEntry, *, audit: AuditRecord) -> None:
        """The decision (the item must still be pending) and its audit record. Raises AlreadyDecided."""
        self._check_decision(decided)
        if not self._pending(project_id, decided) or self._audit_key(audit) in self.tables.audit:
            raise self._already_decided(project_id, decided)
        self._write_decision(project_id, decided)
        self.tables.audit[self._audit_key(audit)] = _json(audit)

    # ----------------------------------------------------------------------- audit
    @staticmethod
    def _audit_key(audit: AuditRecord) -> tuple[str, str]:
        return audit.project_id, f"{sort_time(audit.at)}#{audit.audit_id}"

    def list_audit(self, project_id: str, *, limit: int, cursor: str | None) -> Page[AuditRecord]:
        """Admin changes newest first, one page. Raises InvalidInput for a foreign cursor."""
        page, next_cursor = _newest_first(f"audit#{project_id}", (sk for p, sk in self.tables.audit
                                                                 if p == project_id), limit=limit, cursor=cursor)
        items = [_load(AuditRecord, self.tables.audit[(project_id, sk)]) for sk in page]
        return Page[AuditRecord](items=items, next_cursor=next_cursor)

    # ---------------------------------------------------------------------- alerts
    def claim_alert(self, project_id: str, dedupe_key: str, *, kind: str, now: datetime) -> bool:
        """Record that the alert is being sent; False when it was sent before."""
        if (project_id, dedupe_key) in self.tables.alerts:
            return False
        self.tables.alerts[(project_id, dedupe_key)] = _json(AlertClaim(kind=kind, created_at=now))
        return True

    def release_alert(self, project_id: str, dedupe_key: str) -> None:
        """Forget a claim whose delivery failed (so a retry sends it)."""
        self.tables.alerts.pop((project_id, dedupe_key), None)


def _flow_entry(session: SessionState, m: MessageRecord) -> FlowLogEntry:
    return FlowLogEntry(message_id=m.message_id, session_id=session.session_id, role=m.role, content=m.content,
                        at=m.at, user_id=m.user_id, study_role=m.study_role, status=m.status)


def _list_item(s: SessionState) -> SessionListItem:
    return SessionListItem(session_id=s.session_id, patient_id=s.patient_id, type=s.type, name=s.name,
                           created_at=s.created_at, updated_at=s.updated_at, message_count=s.message_count,
                           diagnosis_count=s.diagnosis_count)


#: Above every message id (``m`` + digits + hex, or a test's own ids): ``messages_between`` up to it reads all.
_AFTER_EVERY_ID = "~"


def stored_messages(reader: Any, project_id: str, session_id: str) -> list[MessageRecord]:
    """Every stored message of a session, oldest first, through the ``MessageReader`` port (the
    fake or the DynamoDB repository alike)."""
    messages: list[MessageRecord] = reader.messages_between(project_id, session_id, after_id=None,
                                                           before_id=_AFTER_EVERY_ID, limit=1_000_000)
    return messages


def project_partition(store: Any) -> Any:
    """Where the seeding writes of the project's partition go (``put_project``, ``save_hot_memory``,
    ``put_weekly_report``...): the ``ProjectRepository`` a DynamoDB repository holds (``projects``),
    or the store itself (the in-memory fake, a ``ProjectRepository``)."""
    return getattr(store, "projects", store)


# ------------------------------------------------------------------- other ports
@dataclass
class InMemoryNotifier:
    """``Notifier``: keeps every alert it was given (tests assert on ``alerts``); raises
    ``RuntimeError`` while ``fail`` is set (a delivery failure)."""

    alerts: list[Alert] = field(default_factory=list)
    fail: bool = False

    def notify(self, alert: Alert) -> None:
        """Record ``alert``, or raise while ``fail`` is set."""
        if self.fail:
            raise RuntimeError("notifier unavailable")
        self.alerts.append(alert)


@dataclass
class InMemoryJobQueue:
    """``JobSender``: keeps what it enqueued; requests for a project in ``failing`` are not
    enqueued and make ``send`` raise ``EnqueueFailed`` after the others were."""

    sent: list[JobRequest] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)

    def send(self, requests: Sequence[JobRequest]) -> int:
        """Enqueue each request; returns how many were enqueued. Raises EnqueueFailed."""
        ok = [r for r in requests if r.project_id not in self.failing]
        self.sent.extend(ok)
        failed = len(requests) - len(ok)
        if failed:
            raise EnqueueFailed(f"{failed} job requests could not be enqueued", failed=failed)
        return len(ok)


@dataclass
class InMemoryClinicalRecords:
    """``ClinicalRecordsPort`` over REDCap-shaped metadata rows and flat records; records every
    export (records, fields) and honours ``fields`` like REDCap (record id and the ``redcap_*``
    columns always; a checkbox field as its ``field___code`` columns). ``fail`` (an exception)
    is raised by every call while set."""

    metadata: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    events: list[ClinicalEvent] = field(default_factory=list)
    repeating: frozenset[str] = frozenset()
    exports: list[tuple[tuple[str, ...] | None, tuple[str, ...] | None]] = field(default_factory=list)
    fail: Exception | None = None

    def dictionary(self) -> DataDictionary:
        if self.fail is not None:
            raise self.fail
        return DataDictionary(fields=tuple(FieldDef.from_metadata(r) for r in self.metadata),
                              events=tuple(self.events), repeating=self.repeating)

    def export_records(self, *, records: Sequence[str] | None = None, fields: Sequence[str] | None = None,
                       events: Sequence[str] | None = None) -> list[dict[str, Any]]:
        if self.fail is not None:
            raise self.fail
        self.exports.append((tuple(records) if records else None, tuple(fields) if fields else None))
        rid = self.metadata[0]["field_name"]
        keep = None if not fields else {rid, "redcap_event_name", "redcap_repeat_instrument",
                                         "redcap_repeat_instance", *fields}
        out = []
        for r in self.rows:
            if records and r[rid] not in records:
                continue
            if events and r.get("redcap_event_name") not in events:
                continue
            out.append({k: v for k, v in r.items() if keep is None or k in keep or k.split("___")[0] in keep})
        return out


@dataclass
class InMemorySubjectIdentifiers:
    """``SubjectIdentifiersPort`` over identifier values per project id; records every read
    (project id, deadline). ``fail`` (an exception, e.g. ``ClinicalSourceUnavailable``) is raised
    by every read while set."""

    values: dict[str, list[IdentifierValue]] = field(default_factory=dict)
    reads: list[tuple[str, float | None]] = field(default_factory=list)
    fail: Exception | None = None

    def subject_identifiers(self, project: Project, *, deadline: float | None) -> list[IdentifierValue]:
        self.reads.append((project.project_id, deadline))
        if self.fail is not None:
            raise self.fail
        return list(self.values.get(project.project_id, []))


@dataclass
class InMemoryClinicalData:
    """``ClinicalDataPort`` over ``{project: {"target_enrolment": n, "subjects": {id: record}}}``;
    records every read. Never raises for unknown ids (an ``{"error": ...}`` answer instead)."""

    projects: dict[str, dict[str, Any]]
    reads: list[tuple[str, str | None]] = field(default_factory=list)

    def read(self, project_id: str, subject_id: str | None = None) -> dict[str, Any]:
        """One subject's record, or the project's summary and subject ids."""
        self.reads.append((project_id, subject_id))
        project = self.projects.get(project_id)
        if project is None:
            return {"error": f"no clinical data for project {project_id}"}
        subjects: dict[str, Any] = project.get("subjects", {})
        if subject_id:
            key = subject_id.strip().upper()
            if key not in subjects:
                return {"error": f"subject {key} not found"}
            return {"subject": {"subject_id": key, **subjects[key]}}
        enrolled = [s for s, record in subjects.items() if record.get("status") == "enrolled"]
        return {"summary": {"subjects": len(subjects), "enrolled": len(enrolled),
                            "target": project.get("target_enrolment")},
                "subjects": sorted(subjects)}


#: What a scripted LLM answers: a reply, an error to raise, or a function of the request.
Reply = LLMResponse | BaseException | Callable[[LLMRequest], LLMResponse]


class ScriptedLLM:
    """``LLMClient`` answering from a queue of replies and recording every request.

    Each call takes the next queued reply; once the queue is empty, ``then`` answers (e.g. the
    offline provider) or, without one, the last reply is given again (one reply serves every
    call). ``raised`` counts the errors it raised. ``provider`` defaults to ``then``'s, else
    ``anthropic`` (what makes the jobs use structured calls).
    """

    def __init__(self, *replies: Reply, then: LLMClient | None = None, provider: Provider | None = None) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.then = then
        self.provider: Provider = provider or (then.provider if then is not None else "anthropic")
        self.requests: list[LLMRequest] = []
        self.raised = 0
        self._last: Reply | None = None

    def queue(self, *replies: Reply) -> None:
        """Queue more replies (before the ``then`` client)."""
        self.replies.extend(replies)

    def queue_json(self, payload: Any, *, stop_reason: str = "end_turn", usage: Usage | None = None) -> None:
        """Queue a structured-output reply: ``payload`` as the JSON text of one text block."""
        self.replies.append(json_reply(payload, stop_reason=stop_reason, usage=usage))

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Record ``request`` and answer with the next reply."""
        self.requests.append(request)
        if self.replies:
            reply = self._last = self.replies.popleft()
        elif self.then is not None:
            return self.then.complete(request)
        elif self._last is not None:
            reply = self._last
        else:
            raise AssertionError("ScriptedLLM: no reply scripted for this request")
        if isinstance(reply, BaseException):
            self.raised += 1
            raise reply
        if isinstance(reply, LLMResponse):
            return reply
        return reply(request)


def text_reply(text: str, *, stop_reason: str = "end_turn", model: str = "claude-test") -> LLMResponse:
    """A reply of one text block."""
    return LLMResponse(content=[{"type": "text", "text": text}], stop_reason=stop_reason, provider="anthropic",
                       model=model)


def json_reply(
    payload: Any, *, stop_reason: str = "end_turn", usage: Usage | None = None, model: str = "claude-test"
) -> LLMResponse:
    """A structured-output reply: ``payload`` serialised as the text of one text block (what a
    call with ``output_schema`` gets back), with ``usage`` as the provider would report it."""
    return LLMResponse(content=[{"type": "text", "text": json.dumps(payload, ensure_ascii=False)}],
                       stop_reason=stop_reason, provider="anthropic", model=model, usage=usage)


def tool_reply(name: str, payload: Any, *, stop_reason: str = "tool_use", model: str = "claude-test") -> LLMResponse:
    """A reply of one ``tool_use`` block calling ``name`` with ``payload`` (``max_tokens``: a cut call)."""
    return LLMResponse(content=[{"type": "tool_use", "id": "toolu_test_1", "name": name, "input": payload}],
                       stop_reason=stop_reason, provider="anthropic", model=model)


def reply(*content: dict[str, Any], stop_reason: str = "end_turn", usage: Usage | None = None,
          model: str = "claude-test") -> LLMResponse:
    """A reply of the given content blocks (kept exactly as given), with ``usage`` as reported."""
    return LLMResponse(content=list(content), stop_reason=stop_reason, provider="anthropic", model=model,
                       usage=usage)


def text_block(text: str) -> dict[str, Any]:
    """A ``text`` content block."""
    return {"type": "text", "text": text}


def thinking_block(thinking: str = "", signature: str = "EqQBCkgIARABGAIiQL3sig") -> dict[str, Any]:
    """A ``thinking`` block as current models return it (the text is empty at the default
    ``display``; the signature covers the block and what came before it)."""
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def redacted_thinking_block(data: str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw") -> dict[str, Any]:
    """A ``redacted_thinking`` block (opaque ``data``)."""
    return {"type": "redacted_thinking", "data": data}


def tool_use_block(name: str, payload: Any, tool_use_id: str = "toolu_test_1") -> dict[str, Any]:
    """A ``tool_use`` content block."""
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": payload}


def refusal_reply(partial_text: str = "", usage: Usage | None = None) -> LLMResponse:
    """``stop_reason: refusal``, with whatever text came before the refusal (often none)."""
    content = [text_block(partial_text)] if partial_text else []
    return reply(*content, stop_reason="refusal", usage=usage)


def empty_reply(*, with_thinking: bool = True, usage: Usage | None = None) -> LLMResponse:
    """An ``end_turn`` reply without text (at most a thinking block)."""
    return reply(*([thinking_block()] if with_thinking else []), stop_reason="end_turn", usage=usage)


def pause_turn_reply(*content: dict[str, Any], usage: Usage | None = None) -> LLMResponse:
    """``stop_reason: pause_turn``: a paused turn to be sent back as it is to continue."""
    return reply(*content, stop_reason="pause_turn", usage=usage)


class FakeClock:
    """A clock at ``at`` that moves ``tick`` forward at every reading (``tick`` 0: frozen)."""

    def __init__(self, at: datetime, tick: timedelta = timedelta(0)) -> None:
        self.at = at
        self.tick = tick

    def __call__(self) -> datetime:
        self.at += self.tick
        return self.at


@dataclass(frozen=True)
class Call:
    """One method call a :class:`Recorder` saw, and what it raised (if anything)."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    error: BaseException | None = None


class Recorder:
    """Wraps any port: delegates every method call and records it (name, arguments, error)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[Call] = []

    def count(self, name: str) -> int:
        """How many times ``name`` was called."""
        return sum(1 for c in self.calls if c.name == name)

    def errors(self, name: str, kind: type[BaseException]) -> int:
        """How many calls of ``name`` raised ``kind``."""
        return sum(1 for c in self.calls if c.name == name and isinstance(c.error, kind))

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.inner, name)
        if not callable(target):
            return target

        def recorded(*args: Any, **kwargs: Any) -> Any:
            try:
                result = target(*args, **kwargs)
            except BaseException as exc:
                self.calls.append(Call(name, args, kwargs, exc))
                raise
            self.calls.append(Call(name, args, kwargs))
            return result

        return recorded


# ------------------------------------------------------------------- egress and secrets
@dataclass
class FakeResolver:
    """``HostResolver`` with scripted answers: ``answers[host]`` is a list of address lists, one per
    lookup in turn (the last repeats), so a test can answer a public address when a URL is
    configured and another on the next lookup (DNS rebinding). Unknown hosts do not resolve.
    ``lookups`` lists every host asked for."""

    answers: dict[str, list[list[str]]] = field(default_factory=dict)
    lookups: list[str] = field(default_factory=list)

    def resolve(self, host: str, port: int) -> list[str]:
        """The next scripted answer for ``host`` (``[]``: does not resolve)."""
        self.lookups.append(host)
        script = self.answers.get(host)
        if not script:
            return []
        return list(script.pop(0) if len(script) > 1 else script[0])


@dataclass
class InMemorySecrets:
    """``ProjectSecretReader`` and ``ProjectSecretWriter`` like the Secrets Manager adapter: values
    by name with their tags; a deleted secret awaits deletion (reads say not set; a put restores
    it). ``unreadable`` names read as ``SecretUnreadable`` (access denied); ``fail_puts`` makes a
    put raise ``ExternalServiceError`` (nothing stored). ``log`` records (operation, name)."""

    values: dict[str, str] = field(default_factory=dict)
    tags: dict[str, dict[str, str]] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    unreadable: set[str] = field(default_factory=set)
    fail_puts: bool = False
    log: list[tuple[str, str]] = field(default_factory=list)

    def put(self, ref: ProjectSecretRef, value: SecretStr) -> None:
        """Store ``value`` as the current value of ``ref.name`` (restoring a deleted one)."""
        if self.fail_puts:
            raise ExternalServiceError("secretsmanager", "InternalServiceError", retryable=True)
        self.log.append(("put", ref.name))
        self.deleted.discard(ref.name)
        self.values[ref.name] = value.get_secret_value()
        self.tags[ref.name] = {"project_id": ref.project_id, "purpose": ref.purpose}

    def read(self, ref: ProjectSecretRef, *, fresh: bool = False) -> SecretStr:
        """The current value. Raises SecretNotSet / SecretUnreadable."""
        self.log.append(("read", ref.name))
        if ref.name in self.unreadable:
            raise SecretUnreadable(f"the {ref.purpose} secret of project {ref.project_id} cannot be read")
        if ref.name not in self.values or ref.name in self.deleted:
            raise SecretNotSet(f"the {ref.purpose} secret of project {ref.project_id} is not set")
        return SecretStr(self.values[ref.name])

    def delete(self, ref: ProjectSecretRef) -> bool:
        """Schedule deletion; False when there is none (or it is already scheduled)."""
        self.log.append(("delete", ref.name))
        if ref.name not in self.values or ref.name in self.deleted:
            return False
        self.deleted.add(ref.name)
        return True

    def current(self, name: str) -> str | None:
        """The readable value of ``name`` (None when not set or deleted): for assertions."""
        return None if name in self.deleted else self.values.get(name)


@dataclass
class InMemoryWebhooks:
    """``ReminderWebhookStore``: ``(url, secret name)`` per project."""

    items: dict[str, tuple[str, str]] = field(default_factory=dict)

    def webhook(self, project_id: str) -> tuple[str, str] | None:
        return self.items.get(project_id)

    def put_webhook(self, project_id: str, url: str, secret_name: str) -> None:
        self.items[project_id] = (url, secret_name)

    def delete_webhook(self, project_id: str) -> bool:
        return self.items.pop(project_id, None) is not None


@dataclass
class InMemoryWeComChannels:
    """``WeComChannelStore``: the ``CHANNEL#wecom`` records by project."""

    records: dict[str, WeComChannel] = field(default_factory=dict)

    def get_channel(self, project_id: str) -> WeComChannel | None:
        return self.records.get(project_id)

    def put_channel(self, channel: WeComChannel) -> None:
        self.records[channel.project_id] = channel

    def delete_channel(self, project_id: str) -> bool:
        return self.records.pop(project_id, None) is not None


@dataclass
class RecordingOutbox:
    """``WeComOutbox``: the messages queued, in order; each counts as its parts at WeCom's limits
    (the SQS adapter's own split). ``fail`` makes ``send`` raise (nothing queued)."""

    sent: list[WeComOutbound] = field(default_factory=list)
    fail: bool = False

    def send(self, messages: Sequence[WeComOutbound]) -> int:
        from agent_memory.adapters.wecom.queues import outbound_parts

        if self.fail:
            raise ExternalServiceError("sqs", "ServiceUnavailable", retryable=True)
        self.sent.extend(messages)
        return sum(len(outbound_parts(m)) for m in messages)


@dataclass
class RecordingInboundQueue:
    """``WeComInboundQueue``: the messages the callback queued."""

    queued: list[WeComInbound] = field(default_factory=list)

    def enqueue(self, inbound: WeComInbound) -> None:
        self.queued.append(inbound)


@dataclass
class RecordingWeComSender:
    """``WeComSender``: the parts sent, with the corp id and agent id of the settings used."""

    sent: list[tuple[str, int, WeComOutboundPart]] = field(default_factory=list)

    def send_part(self, settings: WeComChannelSettings, part: WeComOutboundPart) -> None:
        self.sent.append((settings.corp_id, settings.agent_id, part))


if TYPE_CHECKING:  # every fake satisfies its port (checked by mypy)
    from agent_memory import ports

    _store = InMemoryStore()
    _ports: tuple[
        ports.ChatStore, ports.SessionsStore, ports.ConversationStore, ports.AdminStore, ports.JobStore,
        ports.ViewStore, ports.ContextStore, ports.PatientDiagnoses, ports.MessageReader, ports.ActivityReader,
        ports.Notifier, ports.JobSender, ports.ClinicalDataPort, ports.LLMClient,
    ] = (_store, _store, _store, _store, _store, _store, _store, _store, _store, _store, InMemoryNotifier(),
         InMemoryJobQueue(), InMemoryClinicalData({}), ScriptedLLM())
    _clinical_records: ports.ClinicalRecordsPort = InMemoryClinicalRecords([], [])
    _secret_ports: tuple[ports.ProjectSecretReader, ports.ProjectSecretWriter, ports.HostResolver,
                         ports.ReminderWebhookStore] = (InMemorySecrets(), InMemorySecrets(), FakeResolver(),
                                                        InMemoryWebhooks())
    _wecom_ports: tuple[ports.WeComChannelStore, ports.WeComOutbox, ports.WeComInboundQueue, ports.WeComSender,
                        ports.WeComDirectory] = (InMemoryWeComChannels(), RecordingOutbox(), RecordingInboundQueue(),
                                                 RecordingWeComSender(), _store)
