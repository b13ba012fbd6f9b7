"""The sessions function's routes: sessions, patients, transcript import, diagnoses, follow-up
comparison, answer feedback and reminders (members of the project; the feedback list: admins).

Each route calls ONE use case of ``agent_memory.consultation.sessions``, ``agent_memory.feedback``
or ``agent_memory.reminders`` and returns its model. No LLM here (rule-based symptom extraction,
extractive summary): this module never imports ``anthropic``. Listings always query DynamoDB,
never a cache.
"""

# No ``from __future__ import annotations``: Powertools resolves the body, query and dependency
# models from these annotations at runtime.
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from agent_memory.consultation import patients, sessions
from agent_memory.consultation.sessions import SessionsDeps
from agent_memory.feedback import service as feedback
from agent_memory.http.feedback_requests import FeedbackRequest, FromQuery, RatingQuery, ToQuery, as_utc
from agent_memory.http.guard import CurrentCaller, guarded_resolver, member_lookup
from agent_memory.http.powertools import APIGatewayHttpResolver, Depends, Query, Response
from agent_memory.http.requests import Limit
from agent_memory.http.responses import created, model_response
from agent_memory.http.routing import Routes
from agent_memory.http.session_requests import CreateSessionRequest, DiagnosisRequest, NextToken, TranscriptRequest
from agent_memory.observability import metrics
from agent_memory.ports import FeedbackStore, MemberReader
from agent_memory.reminders import service as reminders
from agent_memory.reminders.service import ReminderDeps

routes = Routes()
_P = "/v1/projects/<project_id>"
#: The cursor of a session's messages listing (opaque; ``next_cursor`` of the page before).
MessageCursor = Annotated[str | None, Query(max_length=512)]
#: Whose reminders: the caller's (``own``) or everyone's (``all``: admins).
ReminderScope = Annotated[
    Literal["own", "all"] | None, Query(description="own: the caller's; all: everyone's (admins)")
]


@dataclass(frozen=True)
class SessionsFunctionDeps:
    """The sessions function's collaborators (built by ``wiring.build_sessions_function``);
    ``reminders`` is None when no schedule group is configured (the reminder routes then fail)."""

    sessions: SessionsDeps
    feedback: FeedbackStore
    reminders: ReminderDeps | None
    members: MemberReader
    flow_log_retention_days: int

    def reminder_deps(self) -> ReminderDeps:
        """The reminder use cases' collaborators.

        Raises:
            RuntimeError: ``REMINDER_SCHEDULE_GROUP`` is not configured.
        """
        if self.reminders is None:
            raise RuntimeError("REMINDER_SCHEDULE_GROUP is not configured")
        return self.reminders


def function_deps() -> SessionsFunctionDeps:
    """The function's collaborators: given to the resolver by :func:`sessions_app`."""
    raise RuntimeError("the sessions function's collaborators are given by sessions_app()")


Deps = Annotated[SessionsFunctionDeps, Depends(function_deps)]


@routes.post(f"{_P}/sessions", "member", status_code=201)
def create_session(
    project_id: str, body: CreateSessionRequest, caller: CurrentCaller, deps: Deps
) -> Response[dict[str, Any]]:
    """Create a session (members; 201); 409 if the id exists."""
    view = sessions.create_session(
        deps.sessions, project_id=project_id, user_id=caller.user_id, session_id=body.session_id,
        patient_id=body.patient_id, session_type=body.type, name=body.name,
    )
    metrics.add_metric(name="SessionsCreated", unit="Count", value=1)
    return created(view.model_dump(mode="json"))


_UNISSUED_TOKEN = "a next_token this listing did not issue"


@routes.get(f"{_P}/sessions", "member", rules={400: _UNISSUED_TOKEN})
def list_sessions(project_id: str, deps: Deps, limit: Limit = 20, next_token: NextToken = None) -> dict[str, Any]:
    """The project's sessions, newest first (members; DynamoDB, paginated)."""
    page = sessions.list_project_sessions(deps.sessions, project_id=project_id, limit=limit, next_token=next_token)
    return page.model_dump(mode="json")


@routes.get(f"{_P}/sessions/<session_id>", "member")
def get_session(project_id: str, session_id: str, deps: Deps) -> dict[str, Any]:
    """Metadata, facts, summary, diagnosis references and the recent window (members)."""
    return sessions.get_session(deps.sessions, project_id=project_id, session_id=session_id).model_dump(mode="json")


@routes.get(f"{_P}/sessions/<session_id>/messages", "member", rules={400: "a cursor this listing did not issue"})
def list_messages(
    project_id: str, session_id: str, deps: Deps, limit: Limit = 50, cursor: MessageCursor = None
) -> Response[str]:
    """The session's messages, oldest first, each with its speaker (a member with their study
    role, the assistant, or a transcript's patient or doctor) and whether what the model saw for
    it is kept (``has_context``: admins read it at ``.../messages/{message_id}/context``) (members;
    ``next_cursor`` for the next page)."""
    return model_response(sessions.list_messages(
        deps.sessions, project_id=project_id, session_id=session_id, limit=limit, cursor=cursor,
    ))


@routes.post(f"{_P}/sessions/<session_id>/transcript", "member", rules={
    413: "a turn over MAX_MESSAGE_BYTES (32,768 by default), or all turns over MAX_TRANSCRIPT_BYTES (1,000,000 by "
         "default), in UTF-8 bytes",
    422: "a turn's `at` before 2000-01-01, more than a day after the import, or earlier than the turn before it; "
         "the project's identifier policy is `reject` and a turn holds identifiers (`identifiers_rejected` with "
         "`kinds`; no turn stored)",
})
def post_transcript(
    project_id: str, session_id: str, body: TranscriptRequest, caller: CurrentCaller, deps: Deps
) -> dict[str, Any]:
    """Append turns recorded elsewhere (members; no LLM reply)."""
    appended = sessions.import_transcript(
        deps.sessions, project_id=project_id, session_id=session_id, user_id=caller.user_id, turns=body.turns,
        study_role=caller.member.study_role if caller.member else None,
    )
    metrics.add_metric(name="TranscriptTurnsImported", unit="Count", value=appended)
    return {"appended": appended}


@routes.post(f"{_P}/sessions/<session_id>/diagnoses", "member", status_code=201, rules={
    413: "a report over MAX_REPORT_BYTES UTF-8 bytes (100,000 by default)",
    422: "a report nested more than 32 levels, or holding values JSON cannot carry",
})
def post_diagnosis(
    project_id: str, session_id: str, body: DiagnosisRequest, caller: CurrentCaller, deps: Deps
) -> Response[dict[str, Any]]:
    """Store a diagnosis with the session's symptom snapshot (members; 201)."""
    diagnosis = sessions.add_diagnosis(
        deps.sessions, project_id=project_id, session_id=session_id, user_id=caller.user_id,
        report=body.report, diagnosis_id=body.diagnosis_id,
    )
    metrics.add_metric(name="DiagnosesStored", unit="Count", value=1)
    return created(diagnosis.model_dump(mode="json"))


@routes.get(f"{_P}/sessions/<session_id>/diagnoses", "member")
def list_diagnoses(project_id: str, session_id: str, deps: Deps) -> dict[str, Any]:
    """The session's diagnoses in time order (members)."""
    found = sessions.list_diagnoses(deps.sessions, project_id=project_id, session_id=session_id)
    return {"diagnoses": [d.model_dump(mode="json") for d in found]}


@routes.get(f"{_P}/sessions/<session_id>/diagnoses/<diagnosis_id>", "member")
def get_diagnosis(project_id: str, session_id: str, diagnosis_id: str, deps: Deps) -> dict[str, Any]:
    """One diagnosis with its full report (members)."""
    return sessions.get_diagnosis(
        deps.sessions, project_id=project_id, session_id=session_id, diagnosis_id=diagnosis_id
    ).model_dump(mode="json")


@routes.get(f"{_P}/patients", "member")
def list_patients(project_id: str, deps: Deps) -> Response[str]:
    """The project's patients, most recently active first: sessions, visits, diagnoses, first and
    latest activity (members; from the newest 1,000 sessions: ``complete`` says whether that was all)."""
    return model_response(patients.list_patients(deps.sessions, project_id=project_id))


@routes.get(f"{_P}/patients/<patient_id>/trend", "member")
def get_symptom_trend(project_id: str, patient_id: str, deps: Deps) -> Response[str]:
    """The patient's symptoms over their visits with a diagnosis, oldest first: per symptom and
    visit present, denied, resolved or not mentioned, from each diagnosis's frozen snapshot
    (members; 404 for an erased patient)."""
    return model_response(patients.symptom_trend(deps.sessions, project_id=project_id, patient_id=patient_id))


@routes.get(f"{_P}/patients/<patient_id>/sessions", "member", rules={400: _UNISSUED_TOKEN})
def list_patient_sessions(
    project_id: str, patient_id: str, deps: Deps, limit: Limit = 20, next_token: NextToken = None
) -> dict[str, Any]:
    """The patient's sessions, newest first (members; DynamoDB PatientIndex, paginated)."""
    return sessions.list_patient_sessions(
        deps.sessions, project_id=project_id, patient_id=patient_id, limit=limit, next_token=next_token
    ).model_dump(mode="json")


@routes.get(f"{_P}/patients/<patient_id>/compare", "member", rules={
    422: "a diagnosis id that names diagnoses in several sessions of the patient",
})
def compare(
    project_id: str,
    patient_id: str,
    deps: Deps,
    from_ref: Annotated[str, Query(alias="from", min_length=1, max_length=300)],
    to_ref: Annotated[str, Query(alias="to", min_length=1, max_length=300)],
) -> dict[str, Any]:
    """Follow-up comparison (members): ``from`` a diagnosis id, ``to`` a diagnosis id or ``current:<session_id>``."""
    return sessions.compare_visits(
        deps.sessions, project_id=project_id, patient_id=patient_id, from_ref=from_ref, to_ref=to_ref
    ).model_dump(mode="json", by_alias=True)


@routes.put(f"{_P}/sessions/<session_id>/messages/<message_id>/feedback", "member", rules={
    422: "the project's identifier policy is `reject` and the reason or a tag holds identifiers "
         "(`identifiers_rejected` with `kinds`; nothing stored)",
})
def put_feedback(
    project_id: str, session_id: str, message_id: str, body: FeedbackRequest, caller: CurrentCaller, deps: Deps
) -> dict[str, Any]:
    """Rate an assistant message (members; one rating per user, a second PUT replaces it)."""
    return feedback.rate_message(
        deps.feedback, project_id=project_id, session_id=session_id, message_id=message_id,
        user_id=caller.user_id, rating=body.rating, reason=body.reason, tags=body.tags, now=datetime.now(UTC),
        study_role=caller.member.study_role if caller.member else None,
        flow_log_retention_days=deps.flow_log_retention_days, firewall=deps.sessions.firewall,
    ).model_dump(mode="json")


@routes.get(f"{_P}/feedback", "admin", rules={422: "from not before to"})
def list_feedback(
    project_id: str, deps: Deps, rating: RatingQuery = None, from_at: FromQuery = None, to_at: ToQuery = None
) -> dict[str, Any]:
    """The project's answer feedback, oldest first, with counts per rating (admins)."""
    return feedback.list_feedback(
        deps.feedback, project_id, rating=rating, start=as_utc(from_at), end=as_utc(to_at)
    ).model_dump(mode="json")


@routes.get(f"{_P}/reminders", "member", rules={403: "scope=all from a member (everyone's reminders are the admins')"})
def list_reminders(project_id: str, caller: CurrentCaller, deps: Deps, scope: ReminderScope = None) -> dict[str, Any]:
    """Active reminders (members): ``?scope=own`` the caller's, ``?scope=all`` everyone's (admins);
    without ``scope`` an admin's call lists everyone's, a member's their own."""
    found = reminders.list_reminders(
        deps.reminder_deps(), project_id, user_id=caller.user_id, admin=caller.role_in(project_id) == "admin",
        scope=scope,
    )
    return {"project_id": project_id, "reminders": [r.model_dump(mode="json") for r in found]}


@routes.delete(f"{_P}/reminders/<reminder_id>", "member")
def delete_reminder(project_id: str, reminder_id: str, caller: CurrentCaller, deps: Deps) -> dict[str, Any]:
    """Cancel a reminder and delete its schedule (its owner or an admin)."""
    return reminders.cancel_reminder(
        deps.reminder_deps(), project_id, reminder_id, user_id=caller.user_id,
        admin=caller.role_in(project_id) == "admin",
    ).model_dump(mode="json")


def sessions_app(deps: SessionsFunctionDeps) -> APIGatewayHttpResolver:
    """The sessions function's event handler."""
    return guarded_resolver(routes, membership=member_lookup(deps.members), provide={function_deps: deps})
