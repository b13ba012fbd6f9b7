"""Session and patient memory on the in-memory fakes: facts on every chat turn, diagnoses with
snapshots, listings newest first, transcript import, follow-up comparison, earlier diagnoses for
a patient's new session. What DynamoDB stores (item sizes, index paging, continuation tokens,
message ranges by key) is tested in ``tests/integration/test_sessions_dynamodb.py``."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from agent_memory.consultation import sessions
from agent_memory.domain.errors import (
    AlreadyExists,
    DiagnosisNotFound,
    InvalidInput,
    PayloadTooLarge,
    SessionNotFound,
)
from agent_memory.domain.ids import new_message_id
from agent_memory.domain.session_models import TranscriptTurn
from tests.fakes import InMemoryStore, Recorder, stored_messages
from tests.unit.chat_support import chat_llm, session_block, session_memory, ticking_clock
from tests.unit.sessions_support import (
    CLINIC,
    chat_deps,
    nested,
    say,
    seed_clinic,
    sessions_deps,
    symptoms_of,
    utc,
    write_sessions,
)

#: Wider than any time a test writes: the whole flow log of a project.
EVER = (datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))


@pytest.fixture
def srepo() -> InMemoryStore:
    """The in-memory store with the clinic project."""
    repo = InMemoryStore()
    seed_clinic(repo)
    return repo


def turns(*pairs: tuple[str, str], at: str | None = None) -> list[TranscriptTurn]:
    return [TranscriptTurn.model_validate({"role": r, "content": c, "at": at}) for r, c in pairs]


# ------------------------------------------- a consultation: facts kept across turns
def test_seed_002_later_turn_keeps_all_three_symptoms_and_headache_worsens(srepo: InMemoryStore) -> None:
    # Given a consultation where turn 1 reports 头痛、怕冷、不出汗
    deps = chat_deps(srepo)
    first = say(deps, "头痛、怕冷、不出汗", patient_id="pt-1")

    # When a later turn says 头痛加重了
    say(deps, "头痛加重了", patient_id="pt-1")

    # Then the facts still hold the three symptoms of turn 1, and 头痛 is worsening
    facts = symptoms_of(srepo, "s1")
    assert len(facts) == 3
    assert all(first.user_message_id in f["evidence"] for f in facts.values())
    assert facts["头痛"]["status"] == "present"
    assert facts["头痛"]["trend"] == "worsening"
    sweating = [f for n, f in facts.items() if "汗" in n]
    assert len(sweating) == 1  # 不出汗: denied sweating (or present 无汗), never "sweating present"
    assert (sweating[0]["name"], sweating[0]["status"]) in {("出汗", "denied"), ("无汗", "present")}


def test_seed_002_diagnosis_after_turn_1_keeps_its_snapshot_after_turn_2(srepo: InMemoryStore) -> None:
    # Given turn 1 and a diagnosis taken right after it
    deps = chat_deps(srepo)
    sdeps = sessions_deps(srepo)
    say(deps, "头痛、怕冷、不出汗", patient_id="pt-1")
    diagnosis = sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="s1", user_id="doc",
                                       report={"证型": "风寒表实证", "建议": "多喝热水"}, diagnosis_id=None)
    snapshot = json.loads(json.dumps(diagnosis.symptoms_snapshot))

    # When turn 2 changes the facts
    say(deps, "头痛加重了", patient_id="pt-1")

    # Then the stored diagnosis still holds the turn-1 snapshot (no trend), the session moved on
    stored = sessions.get_diagnosis(sdeps, project_id=CLINIC, session_id="s1", diagnosis_id=diagnosis.diagnosis_id)
    assert stored.symptoms_snapshot == snapshot
    assert {s["name"]: s.get("trend") for s in stored.symptoms_snapshot}["头痛"] is None
    assert symptoms_of(srepo, "s1")["头痛"]["trend"] == "worsening"
    assert stored.report == {"证型": "风寒表实证", "建议": "多喝热水"}


def test_this_turns_facts_are_in_the_prompt_of_the_same_turn(srepo: InMemoryStore) -> None:
    # Given a new consultation
    llm = chat_llm()
    deps = chat_deps(srepo, llm=llm)

    # When the patient's first message names symptoms
    say(deps, "头痛、怕冷、不出汗", patient_id="pt-1")

    # Then the session block sent with THAT message already lists them
    block = session_block(llm.requests[0])
    assert "头痛: present" in block
    assert "怕冷: present" in block


def test_facts_are_written_in_the_turns_single_transaction(srepo: InMemoryStore) -> None:
    # Given a store that records its calls
    recorder = Recorder(srepo)
    deps = chat_deps(srepo)
    deps.store = recorder

    # When one turn runs
    say(deps, "头痛、怕冷", patient_id="pt-1")

    # Then one transaction wrote the turn, and the session item holds the facts
    assert recorder.count("record_turn") == 1
    assert set(symptoms_of(srepo, "s1")) == {"头痛", "怕冷"}


def test_two_containers_alternating_each_see_the_others_messages_and_facts(srepo: InMemoryStore) -> None:
    # Given two "containers" (own ChatDeps, own SessionCache) on one session, one clock
    clock = ticking_clock()
    a_llm, b_llm = chat_llm(), chat_llm()
    a = chat_deps(srepo, clock=clock, llm=a_llm)
    b = chat_deps(srepo, clock=clock, llm=b_llm)
    messages = ["头痛", "怕冷", "没有出汗", "咳嗽", "头痛加重了", "流鼻涕"]
    expected_counts = [1, 2, 3, 4, 4, 5]

    # When they take turns alternately
    for i, text in enumerate(messages):
        say(a if i % 2 == 0 else b, text)

        # Then after every turn the stored facts hold every symptom so far ...
        assert len(symptoms_of(srepo, "s1")) == expected_counts[i]

    # ... and each container's last prompt had the other's turns and facts
    a_sent = json.dumps(a_llm.requests[-1].messages, ensure_ascii=False)
    b_sent = json.dumps(b_llm.requests[-1].messages, ensure_ascii=False)
    assert all(t in a_sent for t in ("怕冷", "咳嗽"))
    assert all(t in b_sent for t in ("头痛", "没有出汗", "头痛加重了"))
    b_block = session_block(b_llm.requests[-1])
    assert "头痛: present (worsening)" in b_block  # A's turn-5 fact, seen by B on turn 6


def test_project_listing_is_newest_first_with_counts(srepo: InMemoryStore) -> None:
    # Given sessions of two patients and one diagnosis
    write_sessions(srepo, "pt-1", 3)
    write_sessions(srepo, "pt-2", 2)
    sdeps = sessions_deps(srepo, clock=ticking_clock(utc(2026, 3, 1)))
    sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="v-pt-2-000", user_id="doc", report={},
                           diagnosis_id="d-1")

    # When the project's sessions are listed
    page = sessions.list_project_sessions(sdeps, project_id=CLINIC, limit=20, next_token=None)

    # Then the session with the diagnosis (updated last) comes first, with its count
    assert [s.session_id for s in page.sessions][0] == "v-pt-2-000"
    assert page.sessions[0].diagnosis_count == 1
    assert len(page.sessions) == 5 and page.next_token is None


# ------------------------------------------------------------------ transcripts
def test_transcript_short_answers_resolve_against_the_doctors_question(srepo: InMemoryStore) -> None:
    # Given a transcript where the patient answers the doctor's questions briefly
    sdeps = sessions_deps(srepo)
    body = turns(
        ("patient", "孩子头痛两天了"),
        ("doctor", "有没有发烧？"),
        ("patient", "没有"),
        ("doctor", "咳嗽吗？"),
        ("patient", "是的"),
    )

    # When it is imported
    appended = sessions.import_transcript(sdeps, project_id=CLINIC, session_id="t1", user_id="clinic", turns=body)

    # Then the short answers became facts about the symptom asked
    facts = symptoms_of(srepo, "t1")
    assert appended == 5
    assert facts["发烧"]["status"] == "denied"
    assert facts["咳嗽"]["status"] == "present"
    assert facts["头痛"]["status"] == "present"


def test_transcript_turns_are_messages_flow_log_items_and_one_transaction(
    srepo: InMemoryStore
) -> None:
    # Given a store that records its calls and a 10-turn transcript
    recorder = Recorder(srepo)
    sdeps = sessions_deps(srepo)
    sdeps.store = recorder
    body = turns(*[("patient" if i % 2 == 0 else "doctor", f"第{i}句，头痛") for i in range(10)])

    # When it is imported
    sessions.import_transcript(sdeps, project_id=CLINIC, session_id="t2", user_id="clinic", turns=body)

    # Then ONE transaction wrote 10 messages (roles mapped, source transcript) and 10 flow-log items
    assert recorder.count("record_turn") == 1
    messages = stored_messages(srepo, CLINIC, "t2")
    assert [m.role for m in messages] == ["user", "assistant"] * 5
    assert {m.source for m in messages} == {"transcript"}
    flow = [e for e in srepo.read_flow_log(CLINIC, *EVER) if e.session_id == "t2"]
    assert len(flow) == 10
    session = srepo.get_session(CLINIC, "t2")
    assert session is not None and session.type == "consultation" and session.message_count == 10


def test_long_transcript_is_written_in_bounded_chunks_in_order(srepo: InMemoryStore) -> None:
    # Given 120 turns (more than one transaction of at most 100 items holds)
    recorder = Recorder(srepo)
    sdeps = sessions_deps(srepo)
    sdeps.store = recorder
    body = turns(*[("patient" if i % 2 == 0 else "doctor", f"第{i}句") for i in range(120)])

    # When it is imported
    appended = sessions.import_transcript(sdeps, project_id=CLINIC, session_id="t3", user_id="clinic", turns=body)

    # Then it took 3 transactions (<= 48 turns each), everything in order, window trimmed, summary rolled
    assert appended == 120 and recorder.count("record_turn") == 3
    assert [m.content for m in stored_messages(srepo, CLINIC, "t3")] == [f"第{i}句" for i in range(120)]
    session = srepo.get_session(CLINIC, "t3")
    assert session is not None and session.message_count == 120
    assert sum(1 for m in session.window if m.role == "user") <= 12
    assert "第0句" in session.summary


def test_b11_transcript_relative_dates_use_the_project_local_day(srepo: InMemoryStore) -> None:
    # Given pt-7's message at 2026-03-10 07:30 +08:00 (= 2026-03-09T23:30Z) in an Asia/Shanghai project
    sdeps = sessions_deps(srepo)
    sessions.create_session(sdeps, project_id=CLINIC, user_id="doc", session_id="b11", patient_id="pt-7",
                            session_type="consultation", name=None)
    body = turns(("patient", "孩子昨天开始发烧，上周起咳嗽"), at="2026-03-09T23:30:00Z")

    # When it is imported
    sessions.import_transcript(sdeps, project_id=CLINIC, session_id="b11", user_id="clinic", turns=body)

    # Then fever started 2026-03-09 and cough in 2026-03-02..08 (approximate), phrase and evidence kept
    facts = symptoms_of(srepo, "b11")
    message_id = stored_messages(srepo, CLINIC, "b11")[0].message_id
    assert facts["发烧"]["onset"] == "2026-03-09"
    assert facts["发烧"]["onset_approximate"] is False
    assert facts["咳嗽"]["onset_approximate"] is True
    assert list(facts["咳嗽"]["onset_range"]) == ["2026-03-02", "2026-03-08"]
    assert facts["咳嗽"]["onset_phrase"] and "上周" in facts["咳嗽"]["onset_phrase"]
    assert facts["发烧"]["evidence"] == [message_id] and facts["咳嗽"]["evidence"] == [message_id]


@pytest.mark.parametrize(("body", "error"), [
    ([("patient", "头" * 20_000)], PayloadTooLarge),
    ([("patient", "头" * 9_000)] * 40, PayloadTooLarge),
    ([("patient", "头痛"), ("doctor", "   ")], InvalidInput),
])
def test_rejected_transcript_writes_nothing(
    srepo: InMemoryStore, body: list[tuple[str, str]], error: type[Exception]
) -> None:
    # Given an over-size turn, an over-size request, or an empty turn
    sdeps = sessions_deps(srepo, max_transcript_bytes=1_000_000)
    before = srepo.snapshot()

    # When it is imported, Then it is refused and nothing was written
    with pytest.raises(error):
        sessions.import_transcript(sdeps, project_id=CLINIC, session_id="bad", user_id="clinic", turns=turns(*body))
    assert srepo.snapshot() == before


def test_transcript_and_chat_update_facts_the_same_way(srepo: InMemoryStore) -> None:
    # Given the same conversation once through chat and once as a transcript
    deps = chat_deps(srepo)
    say(deps, "头痛、怕冷、不出汗", session_id="via-chat")
    say(deps, "头痛加重了", session_id="via-chat")
    sessions.import_transcript(sessions_deps(srepo), project_id=CLINIC, session_id="via-import", user_id="clinic",
                               turns=turns(("patient", "头痛、怕冷、不出汗"), ("doctor", "好的"),
                                           ("patient", "头痛加重了")))

    # Then the facts agree (ignoring evidence ids)
    def strip(facts: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
        return {n: (f["status"], f["trend"]) for n, f in facts.items()}

    assert strip(symptoms_of(srepo, "via-chat")) == strip(symptoms_of(srepo, "via-import"))


# -------------------------------------------------------------------- sessions
def test_create_session_then_get_it_and_duplicate_is_409(srepo: InMemoryStore) -> None:
    sdeps = sessions_deps(srepo)
    view = sessions.create_session(sdeps, project_id=CLINIC, user_id="doc", session_id="c1", patient_id="pt-3",
                                   session_type="consultation", name="首诊")
    assert (view.session_id, view.patient_id, view.type, view.name, view.version) == ("c1", "pt-3", "consultation",
                                                                                       "首诊", 1)
    got = sessions.get_session(sdeps, project_id=CLINIC, session_id="c1")
    assert got.message_count == 0 and got.facts == {"symptoms": []}
    with pytest.raises(AlreadyExists):
        sessions.create_session(sdeps, project_id=CLINIC, user_id="doc", session_id="c1", patient_id=None,
                                session_type="research", name=None)
    with pytest.raises(SessionNotFound):
        sessions.get_session(sdeps, project_id=CLINIC, session_id="nope")


# -------------------------------------------------------------------- diagnoses
def test_diagnoses_are_listed_in_time_order_counted_and_unique(srepo: InMemoryStore) -> None:
    # Given a session with two diagnoses
    sdeps = sessions_deps(srepo)
    say(chat_deps(srepo), "头痛", session_id="dx", patient_id="pt-4")
    sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="dx", user_id="doc", report={"n": 1},
                           diagnosis_id="zz-first")
    sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="dx", user_id="doc", report={"n": 2},
                           diagnosis_id="aa-second")

    # Then they list in time order, the session counts them, a duplicate id is 409
    listed = sessions.list_diagnoses(sdeps, project_id=CLINIC, session_id="dx")
    assert [d.diagnosis_id for d in listed] == ["zz-first", "aa-second"]
    assert sessions.get_session(sdeps, project_id=CLINIC, session_id="dx").diagnosis_count == 2
    with pytest.raises(AlreadyExists):
        sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="dx", user_id="doc", report={},
                               diagnosis_id="zz-first")
    with pytest.raises(DiagnosisNotFound):
        sessions.get_diagnosis(sdeps, project_id=CLINIC, session_id="dx", diagnosis_id="nope")
    with pytest.raises(SessionNotFound):
        sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="missing", user_id="doc", report={},
                               diagnosis_id=None)


def test_patients_new_session_gets_earlier_diagnoses_in_the_session_memory(srepo: InMemoryStore) -> None:
    # Given pt-5's first visit with a diagnosis
    sdeps = sessions_deps(srepo)
    say(chat_deps(srepo), "头痛、怕冷", session_id="visit-1", patient_id="pt-5")
    dx = sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="visit-1", user_id="doc",
                                report={"证型": "风寒"}, diagnosis_id="dx-visit-1")

    # When pt-5 starts a new session through the chat (a fresh container)
    llm = chat_llm()
    deps = chat_deps(srepo, llm=llm)
    reads, lookups = Recorder(srepo), Recorder(srepo)
    deps.store, deps.memory.patients = reads, lookups  # type: ignore[union-attr]  # chat_deps sets memory
    say(deps, "还是头痛", session_id="visit-2", patient_id="pt-5")
    say(deps, "好些了", session_id="visit-2", patient_id="pt-5")

    # Then the first prompt lists the earlier diagnosis (id, time, key symptoms, no report) ...
    block = session_memory(llm.requests[0])
    assert dx.diagnosis_id in block and "头痛" in block and "风寒" not in block
    # ... read with the turn's one read (the patient named on the first turn only; no lookup of
    # its own), and the reference stays on the session
    assert [c.kwargs.get("patient_id") for c in reads.calls if c.name == "load_turn_context"] == ["pt-5", None]
    assert lookups.calls == []
    assert dx.diagnosis_id in session_memory(llm.requests[1])


def test_a_patient_whose_diagnoses_predate_the_references_gets_them_through_one_lookup(
    srepo: InMemoryStore,
) -> None:
    # Given pt-6's diagnosis whose references row is missing (written before the references existed)
    sdeps = sessions_deps(srepo)
    say(chat_deps(srepo), "头痛、怕冷", session_id="old-visit", patient_id="pt-6")
    dx = sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="old-visit", user_id="doc",
                                report={"证型": "风寒"}, diagnosis_id="dx-old")
    del srepo.tables.patient_refs[(CLINIC, "pt-6")]

    # When pt-6 starts a new session through the chat
    llm = chat_llm()
    deps = chat_deps(srepo, llm=llm)
    lookups = Recorder(srepo)
    deps.memory.patients = lookups  # type: ignore[union-attr]  # chat_deps sets memory
    say(deps, "还是头痛", session_id="new-visit", patient_id="pt-6")

    # Then the turn looked the diagnoses up once, and the prompt lists the earlier diagnosis
    assert [c.name for c in lookups.calls] == ["patient_diagnosis_refs"]
    assert dx.diagnosis_id in session_memory(llm.requests[0])


def test_the_references_hold_the_newest_diagnoses_of_every_session_of_the_patient(srepo: InMemoryStore) -> None:
    # Given 22 diagnoses of pt-7 over two sessions (more than the 20 references kept)
    sdeps = sessions_deps(srepo)
    for sid in ("a", "b"):
        say(chat_deps(srepo), "头痛", session_id=sid, patient_id="pt-7")
    for i in range(22):
        sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="ab"[i % 2], user_id="doc", report={},
                               diagnosis_id=f"dx-{i:02d}")

    # When pt-7's new session starts
    llm = chat_llm()
    say(chat_deps(srepo, llm=llm), "还是头痛", session_id="c", patient_id="pt-7")

    # Then its session memory names exactly the 20 newest diagnoses
    block = session_memory(llm.requests[0])
    assert [f"dx-{i:02d}" in block for i in range(22)] == [False, False] + [True] * 20
    assert [r.diagnosis_id for r in srepo.patient_refs(CLINIC, "pt-7").refs] == [f"dx-{i:02d}" for i in range(2, 22)]


# ------------------------------------------------------------------- comparison
def test_follow_up_comparison_reports_new_resolved_persisting_and_trend(srepo: InMemoryStore) -> None:
    # Given visit 1 (头痛, 怕冷, 咳嗽 present) with a diagnosis
    sdeps = sessions_deps(srepo)
    deps = chat_deps(srepo)
    say(deps, "头痛、怕冷、咳嗽", session_id="f1", patient_id="pt-6")
    sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="f1", user_id="doc", report={}, diagnosis_id="dx-f1")
    # ... and visit 2: 头痛 worse, no more 怕冷, new 发烧, 咳嗽 not mentioned
    say(deps, "头痛加重了", session_id="f2", patient_id="pt-6")
    say(deps, "没有怕冷，有点发烧", session_id="f2", patient_id="pt-6")

    # When visit 1's diagnosis is compared with visit 2 now
    result = sessions.compare_visits(sdeps, project_id=CLINIC, patient_id="pt-6", from_ref="dx-f1",
                                     to_ref="current:f2")

    # Then
    assert result.new == ["发烧"]
    assert result.resolved == ["怕冷"]
    assert result.persisting == ["头痛"]
    assert [(c.name, c.from_trend, c.to_trend) for c in result.changed_trend] == [("头痛", None, "worsening")]
    assert result.not_mentioned == ["咳嗽"]
    dumped = result.model_dump(mode="json", by_alias=True)
    assert dumped["from"]["diagnosis_id"] == "dx-f1" and dumped["to"]["session_id"] == "f2"

    # And a session or diagnosis of another patient is not found
    with pytest.raises(SessionNotFound):
        sessions.compare_visits(sdeps, project_id=CLINIC, patient_id="pt-x", from_ref="current:f2",
                                to_ref="current:f1")
    with pytest.raises(DiagnosisNotFound):
        sessions.compare_visits(sdeps, project_id=CLINIC, patient_id="pt-x", from_ref="dx-f1", to_ref="dx-f1")


def test_a_symptom_stated_as_gone_at_the_follow_up_is_resolved_not_persisting(srepo: InMemoryStore) -> None:
    # Given visit 1 with 咳嗽 and 发烧 present, and visit 2 where the patient says they are gone
    # (had them, no longer) and one comes back later in the visit
    sdeps = sessions_deps(srepo)
    deps = chat_deps(srepo)
    say(deps, "咳嗽，还有发烧，头痛", session_id="g1", patient_id="pt-9")
    say(deps, "不咳了", session_id="g2", patient_id="pt-9")
    say(deps, "烧退了", session_id="g2", patient_id="pt-9")
    say(deps, "头不痛了", session_id="g2", patient_id="pt-9")
    say(deps, "头痛又犯了", session_id="g2", patient_id="pt-9")

    # When the visits are compared
    result = sessions.compare_visits(sdeps, project_id=CLINIC, patient_id="pt-9", from_ref="current:g1",
                                     to_ref="current:g2")

    # Then cough and fever are resolved; the headache that came back persists
    assert result.resolved == ["发烧", "咳嗽"]
    assert result.persisting == ["头痛"]
    assert result.new == [] and result.not_mentioned == []


# --------------------------------------------------------------- rolling summary
def test_turns_beyond_the_window_are_summarised_so_early_facts_stay_in_the_prompt(srepo: InMemoryStore) -> None:
    # Given a consultation that outgrows the 10-turn window
    llm = chat_llm()
    deps = chat_deps(srepo, llm=llm)
    say(deps, "孩子头痛三天了，还怕冷")
    for i in range(14):
        say(deps, f"第{i}次补充：睡得还行")

    # When the 16th turn's prompt is built (the replay's first block, turns 1 to 5, has been dropped)
    say(deps, "现在怎么办")
    last = llm.requests[-1]
    block = session_memory(last)
    assert last.messages[0]["content"][0]["text"] == block  # the session memory leads the replayed turns
    sent = json.dumps([last.messages[0]["content"][1:], *last.messages[1:-1]], ensure_ascii=False)  # the turns

    # Then turn 1 is no longer a recent turn but its words are in the summary and its facts in the
    # session block
    assert "孩子头痛三天了" not in sent and "第4次补充" in sent
    assert "Summary of earlier turns" in block and "孩子头痛三天了" in block
    assert "头痛: present" in session_block(last)


# ---------------------------------------------------------------- the function
def test_sessions_function_never_imports_anthropic() -> None:
    # Given the sessions handler imported in a fresh interpreter with the function's environment
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('sessions_app', {str(root / 'functions/sessions/app.py')!r})\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "from agent_memory.http.routes.sessions import function_deps\n"
        "deps = module.app.dependency_overrides[function_deps]()\n"
        "print('anthropic' in sys.modules, type(deps.sessions.memory.extractor).__name__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(root / "layers/shared"), "FLOW_LOG_TABLE": "f", "MEMORY_TABLE": "m",
           "SESSIONS_TABLE": "s", "LLM_PROVIDER": "anthropic", "SYMPTOM_EXTRACTOR": "llm"}

    # When it loads, Then anthropic was never imported and the extractor is the rule-based one
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert out.stdout.split() == ["False", "RuleSymptomExtractor"]


# ------------------------------------------------------------ unstorable diagnosis reports
def test_diagnosis_with_a_report_nested_1000_levels_is_refused_before_anything_is_written(
    srepo: InMemoryStore
) -> None:
    # Given a session
    sdeps = sessions_deps(srepo)
    sessions.create_session(sdeps, project_id=CLINIC, user_id="doc", session_id="deep", patient_id="pt-d",
                            session_type="consultation", name=None)
    before = srepo.snapshot()

    # When a diagnosis with a report nested 1,000 levels deep is added, Then it is refused (422)
    with pytest.raises(InvalidInput, match="nested more than 32 levels"):
        sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="deep", user_id="doc", report=nested(1000),
                               diagnosis_id=None)

    # and nothing was written: no diagnosis, the session's count unchanged
    assert srepo.snapshot() == before
    assert sessions.get_session(sdeps, project_id=CLINIC, session_id="deep").diagnosis_count == 0


def test_diagnosis_with_a_report_nested_32_levels_is_stored_and_read_back(srepo: InMemoryStore) -> None:
    # Given a session and a report at the nesting limit
    sdeps = sessions_deps(srepo)
    say(chat_deps(srepo), "头痛", session_id="deep32", patient_id="pt-d")
    report = nested(32)

    # When it is added
    sessions.add_diagnosis(sdeps, project_id=CLINIC, session_id="deep32", user_id="doc", report=report,
                           diagnosis_id="d-32")

    # Then it reads back unchanged and serialises as JSON
    (listed,) = sessions.list_diagnoses(sdeps, project_id=CLINIC, session_id="deep32")
    assert listed.model_dump(mode="json")["report"] == report


# ---------------------------------------------------------------- transcript times
def test_transcript_with_decreasing_times_is_refused_naming_the_turn_and_writes_nothing(
    srepo: InMemoryStore
) -> None:
    # Given turns whose second is earlier than the first
    sdeps = sessions_deps(srepo)
    body = [TranscriptTurn.model_validate({"role": "patient", "content": "头痛", "at": "2026-03-09T10:00:00Z"}),
            TranscriptTurn.model_validate({"role": "doctor", "content": "多久了？", "at": "2026-03-09T09:00:00Z"})]
    before = srepo.snapshot()

    # When imported, Then 422 naming turn 1, and nothing was written
    with pytest.raises(InvalidInput, match=r"turns\[1\]"):
        sessions.import_transcript(sdeps, project_id=CLINIC, session_id="order", user_id="clinic", turns=body)
    assert srepo.snapshot() == before


@pytest.mark.parametrize("at", ["1999-12-31T23:59:59Z", "2026-03-12T00:00:00Z", "0001-01-01T00:00:00"])
def test_transcript_time_outside_2000_to_a_day_after_now_is_refused(srepo: InMemoryStore, at: str) -> None:
    # Given the clock at 2026-03-10T02:00Z and a turn before 2000, after now + 1 day, or before year 1 in UTC
    sdeps = sessions_deps(srepo)
    body = [TranscriptTurn.model_validate({"role": "patient", "content": "头痛", "at": at})]

    # When imported, Then it is refused (422) and the session does not exist
    with pytest.raises(InvalidInput, match=r"turns\[0\]\.at must be between 2000-01-01"):
        sessions.import_transcript(sdeps, project_id=CLINIC, session_id="range", user_id="clinic", turns=body)
    assert srepo.get_session(CLINIC, "range") is None


@pytest.mark.parametrize("at", [1773100000, "1773100000", "2026-03-10", True])
def test_transcript_turn_time_must_be_an_iso_datetime_string(at: Any) -> None:
    with pytest.raises(ValidationError, match="ISO-8601 date-time"):
        TranscriptTurn.model_validate({"role": "patient", "content": "头痛", "at": at})


def test_transcript_turn_refuses_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="extra"):
        TranscriptTurn.model_validate({"role": "patient", "content": "头痛", "at": None, "speaker": "张三"})


@pytest.mark.parametrize("at", [datetime(1969, 12, 31, 23, 59, tzinfo=UTC), datetime(2300, 1, 1, tzinfo=UTC)])
def test_message_ids_are_never_made_for_times_outside_1970_to_2286(at: datetime) -> None:
    with pytest.raises(ValueError, match="sortable ids"):
        new_message_id(at)
