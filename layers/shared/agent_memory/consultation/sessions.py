"""Session and patient memory routes, as logic . No AWS, no HTTP here:
the store (``SessionsRepository``), the session memory and the clock are passed in.

- create / get a session; list a project's or a patient's sessions (always read from
  DynamoDB, newest ``updated_at`` first, paginated; never from a container cache);
- transcript import: turns recorded elsewhere are appended as messages (``patient`` -> user,
  ``doctor`` -> assistant, ``source = "transcript"``), written to the flow log, and the window,
  facts and summary are updated by the same code as a chat turn (:mod:`agent_memory.consultation.session_memory`,
  :func:`agent_memory.chat.turn.trim_window`); no LLM reply;
- diagnoses: stored with a snapshot (a copy) of the session's symptoms, the session's
  ``diagnosis_count`` + 1 in the same transaction;
- follow-up comparison of two visits of a patient.

Transcript transactions: a request is written in ONE TransactWriteItems when its items fit
DynamoDB's 100-item limit (1 session item + 2 per turn (message + flow log) + 1 activity marker
per local day), i.e. up to about 48 turns. A longer request (at most ``MAX_TRANSCRIPT_TURNS``
turns, ``max_transcript_bytes`` bytes) is written in order in chunks of that size, each chunk
atomic (so at most ``ceil(200 / 48) = 5`` transactions); every check (sizes, validation, the
project) runs before the first write, so a 4xx writes nothing.
"""

from __future__ import annotations

import copy
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import BaseModel

from agent_memory.consultation.session_memory import (
    SessionMemory,
    TurnMemory,
    merge_diagnosis_refs,
)
from agent_memory.conversation.append import Append, append_messages, version_conflict_retrying
from agent_memory.domain.errors import (
    DiagnosisNotFound,
    InvalidInput,
    PatientNotFound,
    PayloadTooLarge,
    SessionNotFound,
    VersionConflict,
)
from agent_memory.domain.ids import epoch_ms
from agent_memory.domain.models import StudyRole
from agent_memory.domain.session_models import (
    CompareSide,
    Comparison,
    Diagnosis,
    SessionMessagePage,
    SessionPage,
    TranscriptTurn,
    TrendChange,
    report_problem,
)
from agent_memory.domain.text import content_problem, utf8_len
from agent_memory.domain.turns import MessageRecord, SessionState, TurnContext
from agent_memory.identifiers import IdentifierFirewall
from agent_memory.ports import SessionsStore

#: DynamoDB's limit of items in one TransactWriteItems.
MAX_TRANSACT_ITEMS = 100
#: Items of every session append besides its messages and activity markers: the condition check
#: that the session was not erased and the session item (``ports.ConversationStore.record_turn``).
APPEND_FIXED_ITEMS = 2
#: Turns accepted in one transcript request (422 above it).
MAX_TRANSCRIPT_TURNS = 200
#: Earliest ``at`` of a transcript turn; the latest is the import time + ``TRANSCRIPT_FUTURE_SLACK``.
TRANSCRIPT_EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
TRANSCRIPT_FUTURE_SLACK = timedelta(days=1)


@dataclass(frozen=True)
class SessionsConfig:
    """Caps (UTF-8 bytes) and settings of these routes (from ``Settings``)."""

    max_message_bytes: int = 32_768
    max_transcript_bytes: int = 1_000_000
    max_report_bytes: int = 100_000
    recent_turns: int = 10
    flow_log_retention_days: int = 0


@dataclass
class SessionsDeps:
    """Collaborators of the session routes; tests pass fakes or moto-backed ones."""

    store: SessionsStore
    memory: SessionMemory
    config: SessionsConfig = field(default_factory=SessionsConfig)
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    #: The identifier firewall of the transcript turns (docs/architecture.md, "Identifiers");
    #: default: the patterns alone (no subject identifier index).
    firewall: IdentifierFirewall = field(default_factory=lambda: IdentifierFirewall(None))


# ---------------------------------------------------------------- views
class SessionView(BaseModel):
    """``GET .../sessions/{session_id}``: metadata, facts, summary, diagnosis refs, window."""

    session_id: str
    project_id: str
    patient_id: str | None
    type: str
    name: str | None
    created_by: str | None
    created_at: datetime
    updated_at: datetime
    message_count: int
    diagnosis_count: int
    version: int
    summary: str
    facts: dict[str, list[dict[str, Any]]]
    diagnoses: list[dict[str, Any]]
    window: list[dict[str, Any]]


def session_view(session: SessionState) -> SessionView:
    """The API view of a session item."""
    facts = session.facts or {}
    symptoms = [_symptom_view(s) for s in facts.get("symptoms") or [] if isinstance(s, dict)]
    return SessionView(
        session_id=session.session_id,
        project_id=session.project_id,
        patient_id=session.patient_id,
        type=session.type,
        name=session.name,
        created_by=session.created_by,
        created_at=session.created_at,
        updated_at=session.updated_at,
        message_count=session.message_count,
        diagnosis_count=session.diagnosis_count,
        version=session.version,
        summary=session.summary,
        facts={"symptoms": symptoms},
        diagnoses=list(facts.get("diagnoses") or []),
        window=[
            {"message_id": m.message_id, "role": m.role, "content": m.content, "at": m.at.isoformat(),
             "source": m.source, "status": m.status}
            for m in session.window
        ],
    )


def _symptom_view(s: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": s.get("name"),
        "status": s.get("status"),
        "onset": s.get("onset"),
        "onset_approximate": bool(s.get("onset_approximate")),
        "trend": s.get("trend"),
        "evidence": list(s.get("evidence") or []),
    }
    for extra in ("onset_range", "onset_phrase"):
        if extra in s:
            out[extra] = s[extra]
    return out


# -------------------------------------------------------------- sessions
def create_session(
    deps: SessionsDeps,
    *,
    project_id: str,
    user_id: str,
    session_id: str | None,
    patient_id: str | None,
    session_type: Literal["consultation", "research"],
    name: str | None,
) -> SessionView:
    """Create a session (an id is generated when none is given). A patient's new session
    carries the references of the patient's earlier diagnoses (their references item,
    ``SessionsStore.patient_refs``).

    Raises:
        ProjectNotFound (404), AlreadyExists (409).
    """
    deps.store.get_project(project_id)
    now = deps.now()
    sid = session_id or f"s{int(now.timestamp() * 1000):013d}{secrets.token_hex(4)}"
    facts: dict[str, Any] = {"symptoms": []}
    if patient_id:
        refs = deps.store.patient_refs(project_id, patient_id).refs
        facts["diagnoses"] = merge_diagnosis_refs([], [r.model_dump(mode="json") for r in refs])
    session = SessionState(
        project_id=project_id, session_id=sid, patient_id=patient_id, type=session_type, name=name,
        created_by=user_id, created_at=now, updated_at=now, facts=facts,
    )
    return session_view(deps.store.create_session(session))


def get_session(deps: SessionsDeps, *, project_id: str, session_id: str) -> SessionView:
    """The session (strongly consistent read). Raises SessionNotFound."""
    return session_view(_require_session(deps, project_id, session_id))


def list_project_sessions(deps: SessionsDeps, *, project_id: str, limit: int, next_token: str | None) -> SessionPage:
    """A project's sessions, newest first, from DynamoDB. Raises ProjectNotFound, InvalidContinuationToken."""
    deps.store.get_project(project_id)
    return deps.store.list_project_sessions(project_id, limit=limit, next_token=next_token)


def list_patient_sessions(
    deps: SessionsDeps, *, project_id: str, patient_id: str, limit: int, next_token: str | None
) -> SessionPage:
    """A patient's sessions, newest first, from DynamoDB. Raises ProjectNotFound,
    InvalidContinuationToken, PatientNotFound (an erased patient with no session since: 404)."""
    deps.store.get_project(project_id)
    page = deps.store.list_patient_sessions(project_id, patient_id, limit=limit, next_token=next_token)
    if not page.sessions and next_token is None and deps.store.patient_erased(project_id, patient_id):
        raise PatientNotFound(f"patient {patient_id} was erased")
    return page


def list_messages(
    deps: SessionsDeps, *, project_id: str, session_id: str, limit: int, cursor: str | None
) -> SessionMessagePage:
    """A page of the session's messages, oldest first, each with its speaker. Raises
    SessionNotFound (404), InvalidContinuationToken (400)."""
    _require_session(deps, project_id, session_id)
    return deps.store.list_messages(project_id, session_id, limit=limit, cursor=cursor)


def _require_session(deps: SessionsDeps, project_id: str, session_id: str) -> SessionState:
    session = deps.store.get_session(project_id, session_id)
    if session is None:
        raise SessionNotFound(f"unknown session {session_id}")
    return session


# ------------------------------------------------------------ transcript
def import_transcript(
    deps: SessionsDeps, *, project_id: str, session_id: str, user_id: str, turns: Sequence[TranscriptTurn],
    study_role: StudyRole | None = None,
) -> int:
    """Append turns recorded elsewhere (see module docstring); returns how many were appended.

    The session is created on first use (type ``consultation``), like a chat session. The doctor's
    turns are the importing member's: they carry ``user_id`` and ``study_role`` (the member's study
    role at the time of the import); the patient, who is no member, has no study role. Every turn
    passes the identifier firewall under the project's policy before anything is stored (all turns
    are checked before the first write).

    Raises:
        InvalidInput (422): no turns, too many, an empty one, or a time (``at``, resolved in the
            project's zone) before 2000-01-01, more than a day after now, or before the
            previous turn's (the reason names the turn index).
        PayloadTooLarge (413): a turn over ``max_message_bytes`` or the request over
            ``max_transcript_bytes``.
        IdentifiersRejected (422): the project's policy is ``reject`` and a turn holds identifiers
            (the kinds found in all the turns).
        ProjectNotFound (404). Nothing is written in any of these cases.
    """
    cfg = deps.config
    _validate_transcript(turns, cfg)
    now = deps.now()
    ctx = deps.store.load_turn_context(project_id, session_id, now=now)
    screened = deps.firewall.screen_all(ctx.project, [t.content for t in turns])
    turns = [t.model_copy(update={"content": r.text}) if r.found else t for t, r in zip(turns, screened, strict=True)]
    tz = ctx.project.time_zone
    messages = _transcript_messages(turns, user_id=user_id, now=now, zone=ZoneInfo(tz), study_role=study_role)
    updates = deps.memory.extract(messages, prior=ctx.session.window, time_zone=tz)
    refs = deps.memory.load_diagnosis_refs(ctx.session, None)
    session: SessionState | None = ctx.session
    for chunk, chunk_updates in _chunks(messages, updates, ZoneInfo(tz)):
        turn = TurnMemory(project_id=project_id, session_id=session_id, time_zone=tz,
                          fact_updates=chunk_updates, diagnosis_refs=refs)
        session = _write_chunk(deps, ctx, session, chunk, turn, user_id=user_id)
        refs = None
    return len(messages)


def _validate_transcript(turns: Sequence[TranscriptTurn], cfg: SessionsConfig) -> None:
    if not turns:
        raise InvalidInput("turns must not be empty")
    if len(turns) > MAX_TRANSCRIPT_TURNS:
        raise InvalidInput(f"at most {MAX_TRANSCRIPT_TURNS} turns per request")
    total = 0
    for i, t in enumerate(turns):
        problem = content_problem(t.content)
        if problem is not None:
            raise InvalidInput(f"turns[{i}].content {problem}")
        size = utf8_len(t.content)
        if size > cfg.max_message_bytes:
            raise PayloadTooLarge(
                f"turns[{i}].content is {size} UTF-8 bytes; the limit is {cfg.max_message_bytes}",
                limit_bytes=cfg.max_message_bytes, actual_bytes=size,
            )
        total += size
    if total > cfg.max_transcript_bytes:
        raise PayloadTooLarge(
            f"the transcript is {total} UTF-8 bytes; the limit is {cfg.max_transcript_bytes}",
            limit_bytes=cfg.max_transcript_bytes, actual_bytes=total,
        )


def _transcript_messages(
    turns: Sequence[TranscriptTurn], *, user_id: str, now: datetime, zone: ZoneInfo,
    study_role: StudyRole | None = None,
) -> list[MessageRecord]:
    """Messages of the turns: times resolved (naive = project local; missing = previous + 1 ms,
    or the import time for the first), ids sortable by time and, within a millisecond, by order.

    Raises:
        InvalidInput: a time before :data:`TRANSCRIPT_EARLIEST`, after ``now`` +
            :data:`TRANSCRIPT_FUTURE_SLACK`, or before the previous turn's time.
    """
    out: list[MessageRecord] = []
    previous: datetime | None = None
    latest = now.astimezone(UTC) + TRANSCRIPT_FUTURE_SLACK
    for seq, t in enumerate(turns):
        try:
            if t.at is None:
                at = previous + timedelta(milliseconds=1) if previous else now
            elif t.at.tzinfo is None:
                at = t.at.replace(tzinfo=zone)
            else:
                at = t.at
            at = at.astimezone(UTC)
            in_range = TRANSCRIPT_EARLIEST <= at <= latest
        except OverflowError:  # e.g. 0001-01-01T00:00 read at +08:00 is before year 1 in UTC
            in_range = False
        if not in_range:
            raise InvalidInput(f"turns[{seq}].at must be between {TRANSCRIPT_EARLIEST.date().isoformat()} "
                               "and one day after now")
        if previous is not None and at < previous:
            raise InvalidInput(f"turns[{seq}].at is earlier than turns[{seq - 1}].at; times must not decrease")
        previous = at
        out.append(MessageRecord(
            message_id=f"m{epoch_ms(at):013d}{seq % 0x10000:04x}{secrets.token_hex(2)}",
            role="user" if t.role == "patient" else "assistant",
            content=t.content,
            at=at,
            user_id=user_id,
            study_role=study_role if t.role == "doctor" else None,
            source="transcript",
        ))
    return out


def _local_date(m: MessageRecord, zone: ZoneInfo) -> str:
    return m.at.astimezone(zone).date().isoformat()


def _chunks(
    messages: list[MessageRecord], updates: list[list[Any]], zone: ZoneInfo
) -> list[tuple[list[MessageRecord], list[list[Any]]]]:
    """Consecutive chunks whose transaction fits :data:`MAX_TRANSACT_ITEMS`: the not-erased check
    and the session item, 2 per message (message + flow-log item), 1 activity marker per local day."""
    chunks: list[tuple[list[MessageRecord], list[list[Any]]]] = []
    current: list[MessageRecord] = []
    current_updates: list[list[Any]] = []
    days: set[str] = set()
    for m, u in zip(messages, updates, strict=True):
        day = _local_date(m, zone)
        items = APPEND_FIXED_ITEMS + 2 * (len(current) + 1) + len(days | {day})
        if current and items > MAX_TRANSACT_ITEMS:
            chunks.append((current, current_updates))
            current, current_updates, days = [], [], set()
        current.append(m)
        current_updates.append(u)
        days.add(day)
    if current:
        chunks.append((current, current_updates))
    return chunks


def _write_chunk(
    deps: SessionsDeps,
    ctx: TurnContext,
    session: SessionState | None,
    chunk: list[MessageRecord],
    turn: TurnMemory,
    *,
    user_id: str,
) -> SessionState:
    """One chunk through the one session append (re-read and re-applied on a version conflict)."""
    memory = deps.memory
    base = session or SessionState(
        project_id=ctx.project.project_id, session_id=turn.session_id,
        created_at=deps.now(), updated_at=deps.now(), version=0,
    )

    def update(current: SessionState, updated: SessionState, full_window: list[MessageRecord]) -> SessionState:
        return memory.apply(current, updated, turn, full_window=full_window, cache=None)

    done = append_messages(
        deps.store, base, Append(new=chunk, flow=chunk, fill={"type": "consultation", "created_by": user_id}),
        time_zone=ctx.project.time_zone, now=deps.now,
        keep_user_turns=deps.config.recent_turns + 2,
        flow_log_retention_days=deps.config.flow_log_retention_days,
        update=update,
    )
    return done.written


# ------------------------------------------------------------- diagnoses
def add_diagnosis(
    deps: SessionsDeps,
    *,
    project_id: str,
    session_id: str,
    user_id: str,
    report: dict[str, Any],
    diagnosis_id: str | None,
) -> Diagnosis:
    """Store a diagnosis with a snapshot of the session's symptoms at this moment (a deep copy
    of the facts as read in the same optimistic-lock cycle that writes it). With a patient, the
    patient's references item gets its reference in the same transaction (so the first turn of
    the patient's next session reads it in its one BatchGetItem); two diagnoses of one patient
    written at once both end up in it (the loser of the race is re-read and retried).

    Raises:
        InvalidInput (422): the report is not storable JSON (nested more than
            ``MAX_REPORT_DEPTH`` levels, NaN, a non-JSON value); checked before any write.
        PayloadTooLarge (413): the report is over ``max_report_bytes``.
        SessionNotFound (404), AlreadyExists (409).
    """
    problem = report_problem(report)
    if problem is not None:
        raise InvalidInput(f"report: {problem}")
    size = utf8_len(json.dumps(report, ensure_ascii=False, separators=(",", ":")))
    if size > deps.config.max_report_bytes:
        raise PayloadTooLarge(
            f"the report is {size} UTF-8 bytes; the limit is {deps.config.max_report_bytes}",
            limit_bytes=deps.config.max_report_bytes, actual_bytes=size,
        )
    for attempt in version_conflict_retrying():
        with attempt:
            return _add_diagnosis_once(deps, project_id, session_id, user_id, report, diagnosis_id)
    raise VersionConflict("session changed concurrently")  # pragma: no cover (the policy re-raises)


def _add_diagnosis_once(
    deps: SessionsDeps, project_id: str, session_id: str, user_id: str, report: dict[str, Any],
    diagnosis_id: str | None,
) -> Diagnosis:
    """One optimistic-lock write of a diagnosis on the session as read now (raises VersionConflict)."""
    session = _require_session(deps, project_id, session_id)
    now = deps.now().astimezone(UTC)
    did = diagnosis_id or f"d{int(now.timestamp() * 1000):013d}{secrets.token_hex(4)}"
    diagnosis = Diagnosis(
        project_id=project_id, session_id=session_id, diagnosis_id=did, patient_id=session.patient_id,
        created_at=now, created_by=user_id, report=report,
        symptoms_snapshot=copy.deepcopy(list((session.facts or {}).get("symptoms") or [])),
    )
    facts = dict(session.facts or {})
    prior: list[dict[str, Any]] = list(facts.get("diagnoses") or [])
    patient_refs = deps.store.patient_refs(project_id, session.patient_id) if session.patient_id else None
    if "diagnoses" not in facts and patient_refs is not None:  # references never loaded yet
        prior = [r.model_dump(mode="json") for r in patient_refs.refs]
    facts["diagnoses"] = merge_diagnosis_refs(prior, [diagnosis.ref().model_dump(mode="json")])
    updated = session.model_copy(update={
        "diagnosis_count": session.diagnosis_count + 1, "updated_at": now, "facts": facts,
    })
    deps.store.add_diagnosis(diagnosis, updated, expected_version=session.version, patient_refs=patient_refs)
    return diagnosis


def list_diagnoses(deps: SessionsDeps, *, project_id: str, session_id: str) -> list[Diagnosis]:
    """A session's diagnoses in time order. Raises SessionNotFound."""
    _require_session(deps, project_id, session_id)
    return deps.store.list_diagnoses(project_id, session_id)


def get_diagnosis(deps: SessionsDeps, *, project_id: str, session_id: str, diagnosis_id: str) -> Diagnosis:
    """One diagnosis (full report). Raises DiagnosisNotFound."""
    return deps.store.get_diagnosis(project_id, session_id, diagnosis_id)


# ------------------------------------------------------------ comparison
CURRENT_PREFIX = "current:"


def compare_visits(
    deps: SessionsDeps, *, project_id: str, patient_id: str, from_ref: str, to_ref: str
) -> Comparison:
    """Compare two visits of a patient: each side a diagnosis id (its snapshot) or
    ``current:<session_id>`` (that session's facts now). See :class:`Comparison`.

    Raises:
        DiagnosisNotFound / SessionNotFound (404): not a diagnosis / session of this patient.
        InvalidInput (422): a diagnosis id that the patient has in several sessions.
    """
    deps.store.get_project(project_id)
    side_from, before = _side(deps, project_id, patient_id, from_ref)
    side_to, after = _side(deps, project_id, patient_id, to_ref)
    return compare_facts(patient_id, side_from, before, side_to, after)


def _side(deps: SessionsDeps, project_id: str, patient_id: str, ref: str) -> tuple[CompareSide, list[dict[str, Any]]]:
    if ref.startswith(CURRENT_PREFIX):
        sid = ref[len(CURRENT_PREFIX):]
        session = deps.store.get_session(project_id, sid) if sid else None
        if session is None or session.patient_id != patient_id:
            raise SessionNotFound(f"patient {patient_id} has no session {sid}")
        return (
            CompareSide(kind="current", session_id=sid, at=session.updated_at),
            list((session.facts or {}).get("symptoms") or []),
        )
    found = deps.store.patient_diagnoses(project_id, patient_id, diagnosis_id=ref)
    if not found:
        raise DiagnosisNotFound(f"patient {patient_id} has no diagnosis {ref}")
    if len(found) > 1:
        raise InvalidInput(f"diagnosis id {ref} exists in {len(found)} sessions of this patient")
    d = found[0]
    return (
        CompareSide(kind="diagnosis", session_id=d.session_id, diagnosis_id=d.diagnosis_id, at=d.created_at),
        d.symptoms_snapshot,
    )


def compare_facts(
    patient_id: str,
    side_from: CompareSide,
    before: Sequence[dict[str, Any]],
    side_to: CompareSide,
    after: Sequence[dict[str, Any]],
) -> Comparison:
    """New / resolved / persisting / changed-trend / not-mentioned symptoms (pure)."""
    b = {str(s.get("name")): s for s in before if isinstance(s, dict) and s.get("name")}
    a = {str(s.get("name")): s for s in after if isinstance(s, dict) and s.get("name")}
    b_present = {n for n, s in b.items() if s.get("status") == "present"}
    a_present = {n for n, s in a.items() if s.get("status") == "present"}
    # gone at the later side: denied, or stated as gone ("不咳了": present with ``resolved``)
    a_gone = {n for n, s in a.items() if s.get("status") == "denied" or s.get("resolved")}
    a_present -= a_gone
    persisting = sorted(b_present & a_present)

    def brief(s: dict[str, Any] | None) -> dict[str, Any] | None:
        if s is None:
            return None
        return {"status": s.get("status"), "onset": s.get("onset"), "trend": s.get("trend")}

    return Comparison(
        patient_id=patient_id,
        from_=side_from,
        to=side_to,
        new=sorted(a_present - b_present),
        resolved=sorted(b_present & a_gone),
        persisting=persisting,
        changed_trend=[
            TrendChange(name=n, from_trend=b[n].get("trend"), to_trend=a[n].get("trend"))
            for n in persisting if b[n].get("trend") != a[n].get("trend")
        ],
        not_mentioned=sorted(b_present - a_present - a_gone),
        symptoms={n: {"from": brief(b.get(n)), "to": brief(a.get(n))} for n in sorted(set(a) | set(b))},
    )


__all__ = [
    "MAX_TRANSCRIPT_TURNS",
    "SessionView",
    "SessionsConfig",
    "SessionsDeps",
    "add_diagnosis",
    "compare_facts",
    "compare_visits",
    "create_session",
    "get_diagnosis",
    "get_session",
    "import_transcript",
    "list_diagnoses",
    "list_messages",
    "list_patient_sessions",
    "list_project_sessions",
    "session_view",
]
