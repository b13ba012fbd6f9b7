"""PyCap against the local REDCap API server (infra/local/redcap_server.py): the export formats
REDCap really returns, its error contract, and the REDCap adapter's failure handling (403 ->
auth error + admin metric, 429 -> backoff inside the deadline, slow / unreachable -> unavailable)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redcap
import requests

from agent_memory.adapters.clinical.redcap import RedcapSources, load_token
from agent_memory.chat.clinical_tools import ClinicalToolSet
from agent_memory.domain.clinical import (
    ClinicalSourceAuthError,
    ClinicalSourceRejected,
    ClinicalSourceTokenMissing,
    ClinicalSourceTokenUnreadable,
    ClinicalSourceUnavailable,
)
from agent_memory.domain.models import ClinicalDataSource
from infra.local.demo.redcap_project import DEMO_TOKEN, SEEDED_ERRORS
from infra.local.redcap_server import NO_PERMISSION, LocalRedcap, demo_server
from infra.local.stack import free_port

SECRET = "agent-memory/redcap/demo-iit"
IDENTIFIER_FIELDS = ["subj_name", "resident_id", "phone", "email"]


@pytest.fixture(scope="module")
def server() -> Iterator[LocalRedcap]:
    with demo_server() as s:
        yield s


@pytest.fixture
def project(server: LocalRedcap) -> redcap.Project:
    return redcap.Project(server.api_url, DEMO_TOKEN)


def _source(server: LocalRedcap, secret: str = SECRET) -> ClinicalDataSource:
    return ClinicalDataSource(source="redcap", api_url=server.api_url, token_secret=secret)


def _sources(token: str = DEMO_TOKEN) -> RedcapSources:
    return RedcapSources(token_secret_prefix="agent-memory/redcap/", token_loader=lambda _name: token)


# ------------------------------------------------------------------ REDCap's export formats
def test_records_are_flat_rows_per_event_and_repeat_instance(project: redcap.Project) -> None:
    rows = project.export_records(records=["P001"])
    assert [(r["redcap_event_name"], r["redcap_repeat_instrument"], r["redcap_repeat_instance"]) for r in rows][:4] == [
        ("screening_arm_1", "", ""), ("baseline_arm_1", "", ""),
        ("baseline_arm_1", "adverse_events", 1), ("baseline_arm_1", "adverse_events", 2),
    ]
    assert all(set(r) == set(rows[0]) for r in rows)  # every row carries every column
    assert all(isinstance(v, str) for r in rows for k, v in r.items() if k != "redcap_repeat_instance")
    baseline = rows[1]
    assert (baseline["subject_id"], baseline["enrolment_date"], baseline["enrolment_complete"]) == (
        "P001", "2026-02-05", "2")


def test_checkbox_fields_export_as_one_column_per_code(project: redcap.Project) -> None:
    rows = project.export_records(records=["P001"], fields=["risk_factors"], events=["screening_arm_1"])
    assert rows == [{"subject_id": "P001", "redcap_event_name": "screening_arm_1", "redcap_repeat_instrument": "",
                     "redcap_repeat_instance": "", "risk_factors___1": "1", "risk_factors___2": "0",
                     "risk_factors___3": "0", "risk_factors___4": "0"}]
    labelled = project.export_records(records=["P001"], fields=["risk_factors", "sex"], raw_or_label="label",
                                      events=["screening_arm_1"])
    assert (labelled[0]["risk_factors___1"], labelled[0]["risk_factors___2"], labelled[0]["sex"]) == (
        "Checked", "Unchecked", "男 Male")


def test_a_field_selection_returns_only_rows_holding_those_fields(project: redcap.Project) -> None:
    rows = project.export_records(records=["P001", "P020"], fields=["enrolment_date"])
    assert [(r["subject_id"], r["redcap_event_name"]) for r in rows] == [("P001", "baseline_arm_1")]
    assert set(rows[0]) == {"subject_id", "redcap_event_name", "redcap_repeat_instrument",
                            "redcap_repeat_instance", "enrolment_date"}


def test_the_data_dictionary_and_the_longitudinal_design(project: redcap.Project) -> None:
    meta = project.export_metadata()
    assert project.def_field == "subject_id" and project.is_longitudinal
    assert {m["field_name"] for m in meta if m["identifier"] == "y"} == set(IDENTIFIER_FIELDS)
    age = next(m for m in meta if m["field_name"] == "age")
    assert (age["text_validation_min"], age["text_validation_max"], age["required_field"]) == ("18", "85", "y")
    events = project.export_events()
    assert [e["unique_event_name"] for e in events][:3] == ["screening_arm_1", "baseline_arm_1", "v2_arm_1"]
    assert project.export_arms() == [{"arm_num": 1, "name": "Main"}]
    mapping = project.export_instrument_event_mappings()
    assert {"arm_num": 1, "unique_event_name": "baseline_arm_1", "form": "adverse_events"} in mapping
    assert project.export_repeating_instruments_events()[0]["form_name"] == "adverse_events"
    assert project.export_project_info()["is_longitudinal"] == 1


def test_csv_exports_and_redcap_errors(server: LocalRedcap, project: redcap.Project) -> None:
    csv_text = project.export_records(format_type="csv", records=["P001"], fields=["enrolment_date"])
    assert csv_text.splitlines()[0] == (
        "subject_id,redcap_event_name,redcap_repeat_instrument,redcap_repeat_instance,enrolment_date")
    with pytest.raises(redcap.RedcapError) as bad_field:
        project.export_records(fields=["no_such_field"])
    assert bad_field.value.args[0] == {
        "error": "The following values in the parameter \"fields\" are not valid: 'no_such_field'"}
    # a bad token is 403 with REDCap's body, in the format asked for (XML by default)
    response = requests.post(server.api_url, data={"token": "F" * 32, "content": "record", "format": "json"}, timeout=5)
    assert (response.status_code, response.json()) == (403, {"error": NO_PERMISSION})
    response = requests.post(server.api_url, data={"token": "F" * 32, "content": "record"}, timeout=5)
    assert response.status_code == 403 and f"<error>{NO_PERMISSION}</error>" in response.text
    response = requests.post(server.api_url, data={"token": DEMO_TOKEN, "content": "nope", "format": "json"}, timeout=5)
    assert (response.status_code, response.json()) == (
        400, {"error": "The value of the parameter \"content\" is not valid"})


# ------------------------------------------------------------------------ the adapter
def test_the_adapter_reads_the_dictionary_once_per_container(server: LocalRedcap) -> None:
    sources = _sources()
    dd = sources.open(_source(server), deadline=None).dictionary()
    assert dd.record_id_field == "subject_id" and dd.identifiers == frozenset(IDENTIFIER_FIELDS)
    assert dd.repeating == frozenset({"adverse_events"}) and dd.arms == {}  # one arm: no names needed
    assert dd.events[1].forms == ("enrolment", "visit", "adverse_events")
    before = len(server.requests)
    records = sources.open(_source(server), deadline=None)
    records.dictionary()
    records.export_records(records=["P001"], fields=["enrolment_date"])
    assert [r["content"] for r in server.requests[before:]] == ["record"]  # no metadata call either


def test_a_refused_token_is_an_auth_error_with_an_admin_metric(
    server: LocalRedcap, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    records = _sources(token="A" * 32).open(_source(server), deadline=None)
    with pytest.raises(ClinicalSourceAuthError) as refused:
        records.export_records(records=["P001"], fields=["enrolment_date"])
    metric = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert metric["ClinicalSourceAuthError"] == [1.0] and metric["source"] == "redcap"
    assert metric["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0] == ["source", "service"]
    logged = [r for r in caplog.records if r.getMessage() == "clinical data source unusable"]
    assert len(logged) == 1 and logged[0].levelname == "ERROR"
    assert "A" * 32 not in caplog.text and "A" * 32 not in str(refused.value)


def test_a_secret_outside_the_prefix_or_a_plain_http_host_is_refused(server: LocalRedcap) -> None:
    with pytest.raises(ClinicalSourceAuthError):
        _sources().open(_source(server, secret="agent-memory/anthropic-api-key"), deadline=None)
    remote = ClinicalDataSource(source="redcap", api_url="http://redcap.example.org/api/", token_secret=SECRET)
    with pytest.raises(ClinicalSourceAuthError):
        _sources().open(remote, deadline=None)


def test_rate_limiting_is_retried_with_backoff_inside_the_deadline(server: LocalRedcap) -> None:
    records = _sources().open(_source(server), deadline=time.monotonic() + 10)
    server.fail_next(429, 2)
    rows = records.export_records(records=["P002"], fields=["enrolment_date"])
    assert rows[0]["enrolment_date"] == "2026-02-10"


def test_rate_limiting_past_the_deadline_is_unavailable(server: LocalRedcap) -> None:
    # (without the deadline as tenacity's stop, a server that always answers 429 would never end)
    records = _sources().open(_source(server), deadline=time.monotonic() + 0.5)
    with server.failing(429), pytest.raises(ClinicalSourceUnavailable, match="429"):
        records.export_records(records=["P002"], fields=["enrolment_date"])


def test_a_slow_server_is_unavailable_at_the_deadline(server: LocalRedcap) -> None:
    # (the adapter's own timeout, 10 s, would have waited for the 2 s answer)
    records = _sources().open(_source(server), deadline=time.monotonic() + 0.5)
    with server.slow(2.0), pytest.raises(ClinicalSourceUnavailable, match="in time"):
        records.export_records(records=["P001"], fields=["enrolment_date"])


def test_an_unreachable_server_is_unavailable_and_the_tool_says_so() -> None:
    gone = ClinicalDataSource(source="redcap", api_url=f"http://127.0.0.1:{free_port()}/api/", token_secret=SECRET)
    tools = ClinicalToolSet(lambda: _sources().open(gone, deadline=time.monotonic() + 2))
    text, is_error = tools.run("read_clinical_data", {"subject_id": "P001"})
    assert is_error and json.loads(text)["error"] == "source_unavailable"


def test_a_rejected_request_carries_redcaps_message(server: LocalRedcap) -> None:
    with pytest.raises(ClinicalSourceRejected, match="no_such_field"):
        _sources().open(_source(server), deadline=None).export_records(fields=["no_such_field"])


def test_the_token_is_read_from_secrets_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    from aws_lambda_powertools.utilities import parameters
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    parameters.clear_caches()
    try:
        with mock_aws():
            import boto3

            client = boto3.client("secretsmanager", region_name="us-east-1")
            client.create_secret(Name=SECRET, SecretString=DEMO_TOKEN)
            client.create_secret(Name=SECRET + "-json", SecretString=json.dumps({"token": DEMO_TOKEN}))
            client.create_secret(Name=SECRET + "-short", SecretString="abc")
            assert load_token(SECRET) == DEMO_TOKEN
            assert load_token(SECRET + "-json") == DEMO_TOKEN
            # a secret that holds no token is unreadable, a missing one is not set: never "refused"
            with pytest.raises(ClinicalSourceTokenUnreadable) as short:
                load_token(SECRET + "-short")
            assert "abc" not in str(short.value)
            with pytest.raises(ClinicalSourceTokenMissing, match="does not exist"):
                load_token(SECRET + "-missing")
            client.delete_secret(SecretId=SECRET + "-json", RecoveryWindowInDays=7)
            parameters.clear_caches()
            with pytest.raises(ClinicalSourceTokenMissing):  # awaiting deletion
                load_token(SECRET + "-json")
    finally:
        parameters.clear_caches()


# --------------------------------------------------------------- the tools on the demo project
def _identifier_values(project: redcap.Project) -> dict[str, list[str]]:
    rows = project.export_records(fields=IDENTIFIER_FIELDS, events=["screening_arm_1"])
    return {r["subject_id"]: [r[f] for f in IDENTIFIER_FIELDS if r[f]] for r in rows}


def test_no_tool_result_holds_an_identifier_of_any_subject(server: LocalRedcap, project: redcap.Project) -> None:
    identifiers = _identifier_values(project)
    assert len(identifiers) == 20 and all(len(v) == 4 for v in identifiers.values())
    tools = ClinicalToolSet(lambda: _sources().open(_source(server), deadline=time.monotonic() + 20))
    results = [tools.run("read_clinical_data", {"subject_id": sid})[0] for sid in identifiers]
    results += [tools.run("list_subjects", {})[0], tools.run("qc_check", {"subject_ids": "all"})[0]]
    blob = "\n".join(results)
    for sid, values in identifiers.items():
        for value in values:
            assert value not in blob, (sid, "identifier value leaked")
        phone = values[2]
        assert f"{phone[:3]} {phone[3:7]} {phone[7:]}" not in blob  # the spaced form in free text
    assert tools.redactions["identifier_fields"] == 4 * 20
    assert tools.redactions["phone"] >= 5 and tools.redactions["resident_id"] >= 4 and tools.redactions["email"] >= 4


def test_qc_of_all_subjects_finds_every_seeded_error(server: LocalRedcap) -> None:
    tools = ClinicalToolSet(lambda: _sources().open(_source(server), deadline=None))
    data: dict[str, Any] = json.loads(tools.run("qc_check", {"subject_ids": "all"})[0])
    found = {(f["subject_id"], f["event"], f["field"], f["kind"]) for f in data["findings"]}
    assert set(SEEDED_ERRORS) <= found
    assert data["checked_subjects"] == 20


def test_an_unusable_token_secret_is_alerted_too(server: LocalRedcap, capsys: pytest.CaptureFixture[str]) -> None:
    def unreadable(name: str) -> str:
        raise ClinicalSourceAuthError(f"the token secret {name!r} could not be read")

    sources = RedcapSources(token_secret_prefix="agent-memory/redcap/", token_loader=unreadable)
    with pytest.raises(ClinicalSourceAuthError):
        sources.open(_source(server), deadline=None)
    metric = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert metric["ClinicalSourceAuthError"] == [1.0]


def test_arm_names_are_read_when_there_are_several_arms() -> None:
    from infra.local.demo.redcap_project import demo_project
    from infra.local.redcap_server import RedcapProject

    data = demo_project()
    data["arms"] = [{"arm_num": 1, "name": "Main"}, {"arm_num": 2, "name": "Extension"}]
    data["events"] = [*data["events"], {**data["events"][-1], "arm_num": 2, "unique_event_name": "ext_arm_2",
                                        "event_name": "Extension visit"}]
    with LocalRedcap({DEMO_TOKEN: RedcapProject(data)}) as two_arms:
        dd = _sources().open(_source(two_arms), deadline=None).dictionary()
    assert dd.arms == {1: "Main", 2: "Extension"} and dd.events[-1].arm == 2
