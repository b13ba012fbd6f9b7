"""The REDCap-backed clinical tools of the ReAct loop, on an in-memory port (no sockets):
identifiers withheld, one export per subject per turn, QC findings, compact window form,
source failures as tool results."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_memory.chat.clinical_tools import ClinicalToolSet
from agent_memory.chat.qc import qc_findings
from agent_memory.chat.toolsets import ToolSets
from agent_memory.domain.clinical import (
    ClinicalEvent,
    ClinicalSourceAuthError,
    ClinicalSourceEgressRefused,
    ClinicalSourceTokenMissing,
    ClinicalSourceTokenUnreadable,
    ClinicalSourceUnavailable,
)
from tests.fakes import InMemoryClinicalRecords


def _m(name: str, form: str, ftype: str = "text", **kw: str) -> dict[str, str]:
    return {"field_name": name, "form_name": form, "field_type": ftype, "field_label": kw.pop("label", name), **kw}


METADATA = [
    _m("record_id", "demo"),
    _m("full_name", "demo", identifier="y"),
    _m("mobile", "demo", identifier="y", text_validation_type_or_show_slider_number="phone"),
    _m("sex", "demo", "radio", select_choices_or_calculations="1, Male | 2, Female", required_field="y"),
    _m("hb", "demo", text_validation_type_or_show_slider_number="number", text_validation_min="80",
       text_validation_max="200", required_field="y"),
    _m("enrol_date", "demo", label="Enrolment date", text_validation_type_or_show_slider_number="date_ymd"),
    _m("comorbid", "demo", "checkbox", select_choices_or_calculations="1, Asthma | 2, Diabetes"),
    _m("notes", "demo", "notes"),
    _m("visit_date", "visit", text_validation_type_or_show_slider_number="date_ymd", required_field="y"),
    _m("ae_term", "ae", required_field="y"),
]
EVENTS = [ClinicalEvent("base_arm_1", "Baseline", forms=("demo", "visit", "ae")),
          ClinicalEvent("fu_arm_1", "Follow-up", forms=("visit",))]


def _row(rid: str, event: str, instrument: str = "", instance: Any = "", **values: str) -> dict[str, Any]:
    return {"record_id": rid, "redcap_event_name": event, "redcap_repeat_instrument": instrument,
            "redcap_repeat_instance": instance, **values}


ROWS = [
    _row("S1", "base_arm_1", full_name="Jane Roe", mobile="13912345678", sex="2", hb="130",
         enrol_date="2026-02-05", comorbid___1="1", comorbid___2="0",
         notes="call her on 139 1234 5678 or jane.roe@example.org", demo_complete="2",
         visit_date="2026-02-05", visit_complete="2"),
    _row("S1", "base_arm_1", "ae", 1, ae_term="Rash", ae_complete="2"),
    _row("S1", "fu_arm_1", visit_date="2026-03-01", visit_complete="2"),
    _row("S2", "base_arm_1", full_name="John Doe", mobile="13800001111", sex="", hb="450",
         enrol_date="", demo_complete="0", visit_date="2026-02-20", visit_complete="2"),
    _row("S2", "fu_arm_1", visit_date="2026-02-10", visit_complete="2"),
    _row("S2", "base_arm_1", "ae", 1, ae_term="", ae_complete="1"),
]


def _tools(port: InMemoryClinicalRecords | None = None) -> tuple[ClinicalToolSet, InMemoryClinicalRecords]:
    port = port or InMemoryClinicalRecords(METADATA, ROWS, EVENTS, frozenset({"ae"}))
    return ClinicalToolSet(lambda: port), port


def test_a_subject_read_never_requests_or_shows_identifier_fields_and_scrubs_free_text() -> None:
    tools, port = _tools()
    text, is_error = tools.run("read_clinical_data", {"subject_id": "S1"})
    assert not is_error
    data = json.loads(text)
    base = data["events"][0]
    demo = next(f for f in base["forms"] if f["form"] == "demo")
    assert demo["values"]["sex"] == "Female" and demo["values"]["comorbid"] == ["Asthma"]
    assert demo["values"]["notes"] == "call her on [phone number withheld] or [e-mail withheld]"
    assert next(f for f in base["forms"] if f["form"] == "ae")["instance"] == 1
    for secret in ("Jane Roe", "13912345678", "139 1234 5678", "jane.roe"):
        assert secret not in text
    assert not {"full_name", "mobile"} & set(port.exports[0][1] or ())  # never even asked for
    assert dict(tools.redactions) == {"identifier_fields": 2, "phone": 1, "email": 1}


def test_one_export_per_subject_per_turn_for_the_same_or_fewer_fields() -> None:
    tools, port = _tools()
    tools.run("read_clinical_data", {"subject_id": "S1"})
    tools.run("read_clinical_data", {"subject_id": "S1", "fields": ["hb"]})
    tools.run("read_clinical_data", {"subject_id": "S1", "event": "Follow-up"})
    assert len(port.exports) == 1


def test_only_the_fields_asked_for_are_exported() -> None:
    tools, port = _tools()
    text, _ = tools.run("read_clinical_data", {"subject_id": "S1", "fields": ["hb", "full_name", "visit"]})
    assert port.exports == [(("S1",), ("hb", "record_id", "visit_complete", "visit_date"))]
    assert "Jane" not in text


def test_an_unknown_subject_is_a_not_found_error_result() -> None:
    tools, _ = _tools()
    text, is_error = tools.run("read_clinical_data", {"subject_id": "S9"})
    assert is_error and json.loads(text) == {"error": "subject_not_found", "subject_id": "S9"}


def test_list_subjects_counts_enrolment_by_the_enrolment_date_field() -> None:
    tools, _ = _tools()
    data = json.loads(tools.run("list_subjects", {})[0])
    assert (data["subjects"], data["enrolled"], data["first_enrolment"]) == (2, 1, "2026-02-05")


def test_qc_finds_missing_required_values_ranges_and_date_order() -> None:
    tools, _ = _tools()
    data = json.loads(tools.run("qc_check", {"subject_ids": ["S2"]})[0])
    found = {(f["event"], f["field"], f["kind"]) for f in data["findings"]}
    assert found == {
        ("base_arm_1", "sex", "required_missing"),
        ("base_arm_1", "hb", "out_of_range"),
        ("base_arm_1", "demo_complete", "form_incomplete"),
        ("base_arm_1", "ae_term", "required_missing"),
        ("fu_arm_1", "visit_date", "date_order"),
    }
    assert "John" not in json.dumps(data)


def test_qc_of_clean_data_finds_nothing() -> None:
    tools, _ = _tools()
    data = json.loads(tools.run("qc_check", {"subject_ids": "all"})[0])
    assert {f["subject_id"] for f in data["findings"]} == {"S2"}


def test_qc_skips_a_required_field_hidden_by_simple_branching_logic() -> None:
    meta = [*METADATA[:4], _m("preg", "demo", required_field="y", branching_logic="[sex] = '2'")]
    tools = ClinicalToolSet(lambda: InMemoryClinicalRecords(meta, [_row("M1", "base_arm_1", sex="1")], EVENTS))
    assert json.loads(tools.run("qc_check", {"subject_ids": ["M1"]})[0])["findings"] == []
    dd = InMemoryClinicalRecords(meta, [], EVENTS).dictionary()
    assert [f["field"] for f in qc_findings(dd, [_row("F1", "base_arm_1", sex="2")])] == ["preg"]


@pytest.mark.parametrize(("failure", "code"), [
    (ClinicalSourceUnavailable("timed out"), "source_unavailable"),
    (ClinicalSourceAuthError("refused"), "source_auth"),
    (ClinicalSourceTokenMissing("the project's REDCap token is not set"), "source_token_missing"),
    (ClinicalSourceTokenUnreadable("the project's REDCap token cannot be read"), "source_token_unreadable"),
    (ClinicalSourceEgressRefused("the data source is refused by the egress policy: x"), "source_egress_refused"),
])
def test_a_failing_source_is_an_error_result_never_an_exception(failure: Exception, code: str) -> None:
    tools, port = _tools()
    port.fail = failure
    text, is_error = tools.run("read_clinical_data", {"subject_id": "S1"})
    assert is_error and json.loads(text)["error"] == code


@pytest.mark.parametrize(("code", "words"), [
    ("source_token_missing", "token is not set"), ("source_token_unreadable", "cannot be read"),
    ("source_egress_refused", "refused by the egress policy"),
])
def test_the_offline_answer_names_an_unusable_source_never_credentials_refused(code: str, words: str) -> None:
    from agent_memory.adapters.llm.offline_clinical import _error

    english, chinese = _error({"error": code}, zh=False), _error({"error": code}, zh=True)
    assert words in english and "refused this project's credentials" not in english
    assert "凭据被拒绝" not in chinese and "拒绝了本项目的访问凭据" not in chinese


def test_the_window_keeps_a_compact_form_of_a_subject_read() -> None:
    tools, _ = _tools()
    composite = ToolSets([tools])
    text, _ = composite.run("read_clinical_data", {"subject_id": "S1"})
    compact = json.loads(composite.compact("read_clinical_data", text))
    assert compact["subject_id"] == "S1" and compact["values"]["enrol_date"] == "2026-02-05"
    assert len(composite.compact("read_clinical_data", text)) < len(text)


def test_a_composite_routes_each_tool_to_its_set() -> None:
    class Echo:
        specs = [type(ClinicalToolSet.specs[0])(name="echo", description="echo", input_schema={"type": "object"})]

        def run(self, name: str, tool_input: dict[str, Any]) -> tuple[str, bool]:
            return json.dumps(tool_input), False

    tools, _ = _tools()
    composite = ToolSets([tools, Echo()])
    assert [s.name for s in composite.specs] == ["read_clinical_data", "list_subjects", "qc_check", "echo"]
    assert composite.run("echo", {"a": 1}) == ('{"a": 1}', False)
    assert composite.run("nope", {}) == ("unknown tool nope", True)


# ------------------------------------------------------------------ in a chat turn
class _Sources:
    """``ClinicalSourcesPort`` handing out one in-memory port; records each open's deadline."""

    def __init__(self, port: InMemoryClinicalRecords) -> None:
        self.port = port
        self.opened: list[float | None] = []

    def open(self, source: Any, *, deadline: float | None, project_id: str | None = None) -> InMemoryClinicalRecords:
        self.opened.append(deadline)
        return self.port


def _redcap_project(store: Any) -> Any:
    from agent_memory.domain.models import ClinicalDataSource
    from tests.unit.chat_support import seed_project

    seed_project(store, "p1")
    project = store.get_project("p1")
    store.put_project(project.model_copy(update={"clinical_data": ClinicalDataSource(
        source="redcap", api_url="https://redcap.example.org/api/", token_secret="agent-memory/redcap/p1")}))


def test_a_redcap_project_gets_the_three_tools_and_reports_what_was_withheld(store: Any) -> None:
    from tests.fakes import ScriptedLLM, text_reply, tool_reply
    from tests.unit.chat_support import llm_requests, make_deps, send

    _redcap_project(store)
    llm = ScriptedLLM(tool_reply("read_clinical_data", {"subject_id": "S1"}), text_reply("S1 入组于 2026-02-05。"))
    deps = make_deps(store, llm)
    port = InMemoryClinicalRecords(METADATA, ROWS, EVENTS, frozenset({"ae"}))
    deps.clinical_sources = _Sources(port)

    result = send(deps, "S1 入组了吗？")

    assert [t.name for t in llm_requests(deps)[0].tools] == ["read_clinical_data", "list_subjects", "qc_check"]
    assert result.calls[0].redactions == {"email": 1, "identifier_fields": 2, "phone": 1}
    sent = json.dumps(llm_requests(deps)[1].messages, ensure_ascii=False)
    assert "Jane Roe" not in sent and "13912345678" not in sent and "[phone number withheld]" in sent
    window = store.load_turn_context("p1", "s1", now=datetime.now(UTC)).session.window
    (call,) = window[-1].tool_calls
    assert json.loads(call.result)["values"]["enrol_date"] == "2026-02-05"
    assert len(call.result) < len(json.dumps(llm_requests(deps)[1].messages[-1]["content"][0]["content"]))


def test_a_project_without_clinical_data_keeps_the_demo_tool(store: Any) -> None:
    from tests.unit.chat_support import llm_requests, make_deps, seed_project, send

    seed_project(store, "p1")
    deps = make_deps(store)
    deps.clinical_sources = _Sources(InMemoryClinicalRecords(METADATA, ROWS, EVENTS))
    send(deps, "P001 入组了吗？")
    assert [t.name for t in llm_requests(deps)[0].tools] == ["read_clinical_data"]
    assert deps.clinical_sources.opened == []


def test_the_source_gets_a_share_of_the_time_left() -> None:
    from agent_memory.chat.turn import CLINICAL_SOURCE_DEADLINE_SHARE, source_deadline

    assert source_deadline(110.0, now=100.0) == 100.0 + 10.0 * CLINICAL_SOURCE_DEADLINE_SHARE
    assert source_deadline(None) is None


def test_a_subject_id_in_lower_case_finds_the_record_and_status_filters_the_list() -> None:
    tools, _ = _tools()
    assert json.loads(tools.run("read_clinical_data", {"subject_id": "s1"})[0])["subject_id"] == "S1"
    assert json.loads(tools.run("qc_check", {"subject_ids": ["s2"]})[0])["checked_subjects"] == 1
    meta = [*METADATA, _m("status", "demo", "dropdown", select_choices_or_calculations="1, screening | 2, enrolled")]
    rows = [_row("A1", "base_arm_1", status="1"), _row("A2", "base_arm_1", status="2")]
    listing = ClinicalToolSet(lambda: InMemoryClinicalRecords(meta, rows, EVENTS))
    for needle in ("enrolled", "2", "ENROL"):
        listed = json.loads(listing.run("list_subjects", {"status": needle})[0])["listed"]
        assert [s["subject_id"] for s in listed] == ["A2"], needle


def test_the_compact_form_keeps_what_the_answer_quoted_first_and_stays_valid_json() -> None:
    # Given a record with far more values than the window keeps
    meta = [_m("record_id", "crf"), *[_m(f"lab_{i:02d}", "crf", label=f"Lab {i}") for i in range(80)]]
    row = _row("B1", "base_arm_1", **{f"lab_{i:02d}": f"{1000 + i}.5 mmol/L" for i in range(80)})
    tools = ClinicalToolSet(lambda: InMemoryClinicalRecords(meta, [row], EVENTS))
    text, _ = tools.run("read_clinical_data", {"subject_id": "B1"})

    # When the answer quoted the last value
    compact = tools.compact("read_clinical_data", text, "B1 的 Lab 79 是 1079.5 mmol/L。")

    # Then the window keeps that value, as valid JSON within the cap, and says there was more
    data = json.loads(compact)
    assert data["values"]["lab_79"] == "1079.5 mmol/L" and list(data["values"])[0] == "lab_79"
    assert data["more"] is True and len(compact.encode("utf-8")) <= 1_200
