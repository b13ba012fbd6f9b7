"""Session and patient memory over HTTP through the local stack: the whole stack, the real
handlers (SessionsFunction and ChatFunction), moto. A consultation over several turns, relative
dates of a transcript in the project's local day, a patient's 80 sessions listed page by page,
sessions written straight to DynamoDB, diagnoses, comparison, the demo clinic, and auth on every
route."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
import requests

from agent_memory.adapters.dynamo.sessions import SessionsRepository
from agent_memory.domain.models import Project
from agent_memory.domain.turns import SessionState
from infra.local.events import build_http_api_event
from infra.local.stack import LocalStack
from tests.support.auth import bearer


@pytest.fixture(scope="module")
def clinic(local_stack: LocalStack) -> str:
    """A fresh clinic project (Asia/Shanghai) for this module."""
    project_id = f"clinic-{uuid.uuid4().hex[:8]}"
    local_stack.repo.projects.put_project(Project(project_id=project_id, name=project_id, time_zone="Asia/Shanghai",
                                         kind="clinic", created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    return project_id


def auth(*projects: str, user: str = "doc-1") -> dict[str, str]:
    return bearer(",".join(projects), user)


class Api:
    def __init__(self, stack: LocalStack, project_id: str) -> None:
        self.base = f"{stack.base_url}/v1/projects/{project_id}"
        self.headers = auth(f"{project_id}:member")

    def get(self, path: str, **params: Any) -> requests.Response:
        return requests.get(self.base + path, params=params or None, headers=self.headers, timeout=30)

    def post(self, path: str, body: Any) -> requests.Response:
        return requests.post(self.base + path, json=body, headers=self.headers, timeout=30)


def _sid() -> str:
    return f"s-{uuid.uuid4().hex[:10]}"


# ------------------------------------------------- a consultation over several turns
def test_seed_002_scenario_over_http(local_stack: LocalStack, clinic: str) -> None:
    api = Api(local_stack, clinic)
    sid, patient = _sid(), f"pt-{uuid.uuid4().hex[:6]}"

    # Given a consultation created for a patient
    created = api.post("/sessions", {"session_id": sid, "patient_id": patient, "type": "consultation",
                                     "name": "初诊"})
    assert created.status_code == 201, created.text
    assert created.json()["session_id"] == sid and created.json()["patient_id"] == patient
    assert api.post("/sessions", {"session_id": sid, "patient_id": None, "type": "research",
                                  "name": None}).status_code == 409

    # When turn 1 is 头痛、怕冷、不出汗, a diagnosis follows, and a later turn says 头痛加重了
    first = api.post(f"/sessions/{sid}/messages", {"content": "头痛、怕冷、不出汗", "patient_id": patient})
    assert first.status_code == 200, first.text
    dx = api.post(f"/sessions/{sid}/diagnoses", {"report": {"证型": "风寒表实证"}, "diagnosis_id": None})
    assert dx.status_code == 201, dx.text
    snapshot = dx.json()["symptoms_snapshot"]
    assert api.post(f"/sessions/{sid}/messages", {"content": "头痛加重了"}).status_code == 200

    # Then the session's facts hold all three, 头痛 worsening
    session = api.get(f"/sessions/{sid}").json()
    assert {"session_id", "patient_id", "message_count", "diagnosis_count", "updated_at", "summary",
            "facts"} <= set(session)
    assert session["message_count"] == 4 and session["diagnosis_count"] == 1
    facts = {s["name"]: s for s in session["facts"]["symptoms"]}
    assert len(facts) == 3 and facts["头痛"]["trend"] == "worsening"
    for s in facts.values():
        assert {"name", "status", "onset", "onset_approximate", "trend", "evidence"} <= set(s)
        assert s["status"] in ("present", "denied") and first.json()["user_message_id"] in s["evidence"]

    # And the diagnosis keeps the turn-1 snapshot
    stored = api.get(f"/sessions/{sid}/diagnoses/{dx.json()['diagnosis_id']}").json()
    assert stored["symptoms_snapshot"] == snapshot
    assert {s["name"]: s["trend"] for s in snapshot}["头痛"] is None
    listed = api.get(f"/sessions/{sid}/diagnoses").json()["diagnoses"]
    assert [d["diagnosis_id"] for d in listed] == [dx.json()["diagnosis_id"]]

    # And the follow-up comparison shows the changed trend
    compared = api.get(f"/patients/{patient}/compare", **{"from": dx.json()["diagnosis_id"], "to": f"current:{sid}"})
    assert compared.status_code == 200, compared.text
    body = compared.json()
    assert body["persisting"] and "头痛" in body["persisting"]
    assert body["changed_trend"] == [{"name": "头痛", "from": None, "to": "worsening"}]
    assert body["new"] == [] and body["resolved"] == []


# ---------------------------------------------------- a patient's sessions, all listed
def test_b15b_patient_listing_returns_all_80_sessions_over_http(local_stack: LocalStack, clinic: str) -> None:
    # Given 80 sessions of pt-1 written straight to DynamoDB (no container ever saw them)
    api = Api(local_stack, clinic)
    local_stack.repo  # noqa: B018 - binds the models to the stack's tables
    repo = SessionsRepository()
    patient = f"pt-1-{uuid.uuid4().hex[:4]}"
    ids = []
    for i in range(80):
        at = datetime(2026, 2, 1, i // 60, i % 60, tzinfo=UTC)
        sid = f"b15-{i:02d}-{uuid.uuid4().hex[:4]}"
        repo.create_session(SessionState(project_id=clinic, session_id=sid, patient_id=patient, type="consultation",
                                         created_at=at, updated_at=at, message_count=i))
        ids.append(sid)

    # When the listing is read in pages of 5 and in one page
    seen: list[dict[str, Any]] = []
    token: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 5}
        if token:
            params["next_token"] = token
        page = api.get(f"/patients/{patient}/sessions", **params)
        assert page.status_code == 200, page.text
        pages += 1
        seen += page.json()["sessions"]
        token = page.json()["next_token"]
        if not token:
            break
    whole = api.get(f"/patients/{patient}/sessions", limit=100).json()

    # Then all 80, newest first, stable, no duplicates, with counts
    assert [s["session_id"] for s in seen] == list(reversed(ids)) == [s["session_id"] for s in whole["sessions"]]
    assert pages == 16 and whole["next_token"] is None
    assert {"message_count", "diagnosis_count", "updated_at"} <= set(seen[0]) and seen[0]["message_count"] == 79

    # And a tampered token is 400
    first = api.get(f"/patients/{patient}/sessions", limit=5).json()["next_token"]
    data = json.loads(base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)))
    data["k"]["patient_pk"] = f"{clinic}#someone-else"
    forged = base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    for bad in (forged, "garbage!!", first[:-3]):
        response = api.get(f"/patients/{patient}/sessions", limit=5, next_token=bad)
        assert response.status_code == 400, (bad, response.text)
    assert api.get(f"/patients/{patient}/sessions", limit=0).status_code == 422


# ------------------------------------------- relative dates in the project's local day
def test_b11_transcript_import_dates_onsets_in_the_projects_local_day(local_stack: LocalStack, clinic: str) -> None:
    api = Api(local_stack, clinic)
    sid = _sid()
    api.post("/sessions", {"session_id": sid, "patient_id": "pt-7", "type": "consultation", "name": None})

    # When pt-7's message at 2026-03-10 07:30 +08:00 is imported
    response = api.post(f"/sessions/{sid}/transcript", {"turns": [
        {"role": "patient", "content": "孩子昨天开始发烧，上周起咳嗽", "at": "2026-03-09T23:30:00Z"}]})

    # Then fever 2026-03-09, cough 2026-03-02..08 approximate
    assert response.status_code == 200, response.text
    assert response.json() == {"appended": 1}
    session = api.get(f"/sessions/{sid}").json()
    facts = {s["name"]: s for s in session["facts"]["symptoms"]}
    assert facts["发烧"]["onset"] == "2026-03-09" and facts["发烧"]["onset_approximate"] is False
    assert facts["咳嗽"]["onset_approximate"] is True
    assert list(facts["咳嗽"]["onset_range"]) == ["2026-03-02", "2026-03-08"]
    assert facts["发烧"]["evidence"] == [session["window"][0]["message_id"]]
    assert session["window"][0]["source"] == "transcript"


def test_a_transcript_of_the_most_turns_allowed_is_written_in_transactions_dynamodb_accepts(
    local_stack: LocalStack, clinic: str
) -> None:
    # Given a consultation and a transcript of 200 turns (the most one request may carry), spread
    # over two local days
    api = Api(local_stack, clinic)
    sid = _sid()
    api.post("/sessions", {"session_id": sid, "patient_id": "pt-long", "type": "consultation", "name": None})
    turns = [
        {"role": "patient" if i % 2 else "doctor", "content": f"第{i}句",
         "at": f"2026-03-{9 + i // 100:02d}T{(i % 100) // 10:02d}:{i % 10:02d}:00Z"}
        for i in range(200)
    ]

    # When it is imported
    response = api.post(f"/sessions/{sid}/transcript", {"turns": turns})

    # Then every turn is stored (in chunks, each within DynamoDB's 100 items per transaction)
    assert response.status_code == 200, response.text
    assert response.json() == {"appended": 200}
    assert api.get(f"/sessions/{sid}").json()["message_count"] == 200


def test_transcript_import_resolves_short_answers_and_rejects_bad_input_writing_nothing(
    local_stack: LocalStack, clinic: str
) -> None:
    api = Api(local_stack, clinic)
    sid = _sid()

    # Given bad requests: an over-size turn (413), a bad role (422), no turns (422)
    assert api.post(f"/sessions/{sid}/transcript",
                    {"turns": [{"role": "patient", "content": "头" * 20_000, "at": None}]}).status_code == 413
    assert api.post(f"/sessions/{sid}/transcript",
                    {"turns": [{"role": "nurse", "content": "x", "at": None}]}).status_code == 422
    assert api.post(f"/sessions/{sid}/transcript", {"turns": []}).status_code == 422
    assert api.get(f"/sessions/{sid}").status_code == 404  # nothing was written

    # When a valid transcript with short answers is imported
    response = api.post(f"/sessions/{sid}/transcript", {"turns": [
        {"role": "patient", "content": "孩子头痛", "at": None},
        {"role": "doctor", "content": "有没有发烧？", "at": None},
        {"role": "patient", "content": "没有", "at": None},
        {"role": "doctor", "content": "咳嗽吗？", "at": None},
        {"role": "patient", "content": "是的", "at": None},
    ]})

    # Then the answers resolve against the doctor's questions
    assert response.json() == {"appended": 5}
    facts = {s["name"]: s["status"] for s in api.get(f"/sessions/{sid}").json()["facts"]["symptoms"]}
    assert facts == {"头痛": "present", "发烧": "denied", "咳嗽": "present"}


@pytest.mark.parametrize("turn", [
    {"role": "patient", "content": "头痛", "at": "0001-01-01T00:00:00Z"},
    {"role": "patient", "content": "头痛", "at": "2099-01-01T00:00:00Z"},
    {"role": "patient", "content": "头痛", "at": 1773100000},
    {"role": "patient", "content": "头痛", "at": "2026-03-10"},
    {"role": "patient", "content": "头痛", "at": None, "speaker": "张三"},
], ids=["year-1", "year-2099", "epoch-int", "bare-date", "extra-field"])
def test_transcript_turn_with_a_bad_time_or_an_unknown_field_is_422_writing_nothing(
    local_stack: LocalStack, clinic: str, turn: dict[str, Any]
) -> None:
    api = Api(local_stack, clinic)
    sid = _sid()
    response = api.post(f"/sessions/{sid}/transcript", {"turns": [turn]})
    assert response.status_code == 422, response.text
    assert "turns" in response.json()["reason"]
    assert api.get(f"/sessions/{sid}").status_code == 404


@pytest.mark.parametrize("name", ["a\u0000b", "line\u0007bell", "  \u200b "], ids=["nul", "bel", "blank"])
def test_a_session_name_with_control_characters_or_nothing_visible_is_422_writing_nothing(
    local_stack: LocalStack, clinic: str, name: str
) -> None:
    api = Api(local_stack, clinic)
    sid = _sid()
    response = api.post("/sessions", {"session_id": sid, "name": name})
    assert response.status_code == 422, response.text
    assert "name" in response.json()["reason"]
    assert api.get(f"/sessions/{sid}").status_code == 404


def test_transcript_with_times_out_of_order_is_422_naming_the_turn(local_stack: LocalStack, clinic: str) -> None:
    api = Api(local_stack, clinic)
    sid = _sid()
    response = api.post(f"/sessions/{sid}/transcript", {"turns": [
        {"role": "patient", "content": "头痛", "at": "2026-03-09T10:00:00+08:00"},
        {"role": "doctor", "content": "多久了？", "at": "2026-03-09T10:05:00+08:00"},
        {"role": "patient", "content": "两天", "at": "2026-03-09T09:00:00+08:00"},
    ]})
    assert response.status_code == 422, response.text
    assert "turns[2]" in response.json()["reason"]
    assert api.get(f"/sessions/{sid}").status_code == 404


# ------------------------------------------------------------------- diagnoses
def test_diagnosis_with_a_report_nested_too_deep_is_422_and_the_diagnoses_stay_readable(
    local_stack: LocalStack, clinic: str
) -> None:
    # Given a session and a report nested 40 levels deep (the limit is 32)
    api = Api(local_stack, clinic)
    sid = _sid()
    assert api.post("/sessions", {"session_id": sid, "patient_id": None, "type": "consultation",
                                  "name": None}).status_code == 201
    report: dict[str, Any] = {"证型": "风寒表实证"}
    for _ in range(39):
        report = {"下一层": report}

    # When it is posted, Then 422 with the reason
    response = api.post(f"/sessions/{sid}/diagnoses", {"report": report, "diagnosis_id": None})
    assert response.status_code == 422, response.text
    assert "nested more than 32 levels" in response.json()["reason"]

    # and nothing was stored: the listing is readable and empty, the count unchanged
    listed = api.get(f"/sessions/{sid}/diagnoses")
    assert listed.status_code == 200 and listed.json() == {"diagnoses": []}
    assert api.get(f"/sessions/{sid}").json()["diagnosis_count"] == 0


# ------------------------------------------------------------------- listings
def test_project_listing_and_demo_clinic_seed(local_stack: LocalStack, clinic: str) -> None:
    # The module's project lists its sessions, newest first
    api = Api(local_stack, clinic)
    listed = api.get("/sessions", limit=3)
    assert listed.status_code == 200 and len(listed.json()["sessions"]) <= 3
    stamps = [s["updated_at"] for s in listed.json()["sessions"]]
    assert stamps == sorted(stamps, reverse=True)

    # The seeded demo clinic has patients with sessions, transcripts and a diagnosis
    demo = Api(local_stack, "demo-clinic")
    sessions = demo.get("/sessions", limit=100).json()["sessions"]
    patients = {s["patient_id"] for s in sessions if s["patient_id"]}
    assert len(patients) >= 2
    assert any(s["message_count"] > 0 for s in sessions)
    assert sum(s["diagnosis_count"] for s in sessions) >= 1


# ------------------------------------------------------------------------- auth
#: (method, path under the project, JSON body or None) of every session route.
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("POST", "/sessions", {"session_id": None, "patient_id": None, "type": "consultation", "name": None}),
    ("GET", "/sessions", None),
    ("GET", "/sessions/s-x", None),
    ("POST", "/sessions/s-x/transcript", {"turns": [{"role": "patient", "content": "头痛", "at": None}]}),
    ("POST", "/sessions/s-x/diagnoses", {"report": {}, "diagnosis_id": None}),
    ("GET", "/sessions/s-x/diagnoses", None),
    ("GET", "/sessions/s-x/diagnoses/d-x", None),
    ("GET", "/patients/pt-x/sessions", None),
    ("GET", "/patients/pt-x/compare?from=d-1&to=current:s-x", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_every_session_route_is_401_without_a_token_and_403_for_another_project(
    local_stack: LocalStack, clinic: str, method: str, path: str, body: Any
) -> None:
    url = f"{local_stack.base_url}/v1/projects/{clinic}{path}"
    # No token: the gateway answers 401
    assert requests.request(method, url, json=body, timeout=30).status_code == 401
    # A member of another project: the function answers 403 (before validation or reads)
    other = requests.request(method, url, json=body, headers=auth("demo-iit:admin", user="doc-elsewhere"), timeout=30)
    assert other.status_code == 403, other.text
    assert other.json()["error"] == "forbidden"


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_every_session_route_is_401_in_the_function_without_claims(
    local_stack: LocalStack, clinic: str, method: str, path: str, body: Any
) -> None:
    # Given an event that reached the function without verified claims
    template_path = "/v1/projects/{project_id}" + _template_path(path.split("?")[0])
    concrete = f"/v1/projects/{clinic}{path.split('?')[0]}"
    params = _path_params(template_path, concrete)
    event = build_http_api_event(method, concrete, [("content-type", "application/json")],
                                 path.split("?")[1] if "?" in path else "",
                                 json.dumps(body).encode() if body is not None else b"",
                                 f"{method} {template_path}", params, None)

    # When the SessionsFunction handles it, Then 401
    result = local_stack.invoke("SessionsFunction", event)
    assert result["statusCode"] == 401, result


def _template_path(path: str) -> str:
    parts = path.split("/")
    names = {"sessions": "session_id", "diagnoses": "diagnosis_id", "patients": "patient_id"}
    out = []
    for i, part in enumerate(parts):
        if i > 0 and parts[i - 1] in names and part not in ("transcript", "diagnoses", "sessions", "compare"):
            out.append("{" + names[parts[i - 1]] + "}")
        else:
            out.append(part)
    return "/".join(out)


def _path_params(template: str, concrete: str) -> dict[str, str]:
    return {t[1:-1]: c for t, c in zip(template.split("/"), concrete.split("/"), strict=True) if t.startswith("{")}
