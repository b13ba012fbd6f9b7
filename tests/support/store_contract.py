"""The storage ports' contracts as tests, run on the in-memory fakes (``tests/unit``) and on the
DynamoDB adapters over moto (``tests/integration``): what the unit tests rely on when they pass
``tests.fakes.InMemoryStore`` is what the adapters do.

A suite subclasses :class:`StoreContract` and provides the fixture ``stores``: a :class:`Stores`
whose members all work on the same (empty) tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from agent_memory.domain.errors import (
    AlreadyDecided,
    AlreadyExists,
    DiagnosisNotFound,
    InvalidContinuationToken,
    InvalidInput,
    ItemTooLarge,
    LastAdmin,
    MessageNotFound,
    ProjectNotFound,
    VersionConflict,
)
from agent_memory.domain.ids import epoch_ms
from agent_memory.domain.jobs import JobRun, ReviewItem
from agent_memory.domain.models import HotMemory, HotMemoryLine, Member, Project, WeeklyReport, YearlySummary
from agent_memory.domain.records import AuditRecord, review_item_id
from agent_memory.domain.session_models import Diagnosis
from agent_memory.domain.turns import MessageRecord, SessionState, TurnWrite

T0 = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)


@dataclass
class Stores:
    """One implementation of each storage port, all on the same tables; ``seed`` has the seeding
    writes (``put_project``, ``save_hot_memory``, ``put_weekly_report``)."""

    seed: Any
    chat: Any
    sessions: Any
    jobs: Any
    admin: Any
    views: Any
    members: Any = None


# ------------------------------------------------------------------------------- builders
def project(stores: Stores, project_id: str = "p1") -> None:
    stores.seed.put_project(Project(project_id=project_id, name=project_id, created_at=T0 - timedelta(days=30)))


def hot_line(line_id: str, text: str) -> HotMemoryLine:
    return HotMemoryLine(line_id=line_id, section="Active Context", text=text, source="admin", created_at=T0,
                         created_by="u-admin")


def seed_hot(stores: Stores, versions: int = 1, project_id: str = "p1") -> HotMemory:
    hot = HotMemory(project_id=project_id, lines=[hot_line("l1", "先核对再录入")])
    for v in range(versions):
        hot = stores.seed.save_hot_memory(
            hot, expected_version=v, actor="seed", reason=None, now=T0 + timedelta(minutes=v), tokens=5
        )
    return hot


def message(message_id: str, at: datetime, *, role: str = "user", status: str = "ok") -> MessageRecord:
    return MessageRecord(message_id=message_id, role=role, content=f"内容 {message_id}", at=at,
                         user_id="u1" if role == "user" else None, status=status)


def turn(session: SessionState, messages: list[MessageRecord], *, expected_version: int,
         mark_ok: list[str] | None = None) -> TurnWrite:
    return TurnWrite(session=session.model_copy(update={"window": [*session.window, *messages],
                                                        "message_count": session.message_count + len(messages)}),
                     expected_version=expected_version, new_messages=messages, flow_log=messages,
                     activity_local_dates=sorted({m.at.date().isoformat() for m in messages}), now=T0,
                     mark_ok=mark_ok or [])


def new_session(session_id: str = "s1", *, patient_id: str | None = None, at: datetime = T0,
                project_id: str = "p1") -> SessionState:
    return SessionState(project_id=project_id, session_id=session_id, patient_id=patient_id, created_at=at,
                        updated_at=at)


def audit(audit_id: str, at: datetime, action: str = "memory.put") -> AuditRecord:
    return AuditRecord(project_id="p1", audit_id=audit_id, at=at, actor="u-admin", action=action,
                       target="memory")


def review(review_id: str, day: str = "2026-03-09") -> ReviewItem:
    return ReviewItem(project_id="p1", review_id=review_id, day=day, text="直接输出身份证号", section="System Rules",
                      evidence=["m-1"], reason="relaxes_system_rules", created_at=T0)


def job_run(job: str = "distill", key: str = "2026-03-09") -> JobRun:
    return JobRun(project_id="p1", job=job, key=key, completed_at=T0)


def week_report(iso_week: str, revision: int = 1, summary: str | None = None) -> WeeklyReport:
    return WeeklyReport(project_id="p1", iso_week=iso_week, summary=summary or f"[进度] {iso_week} 入组 1 例。",
                        revision=revision, created_at=T0, evidence=["m-1"])


def member(user_id: str, role: str = "member", study_role: str = "CRC", project_id: str = "p1") -> Member:
    return Member(project_id=project_id, user_id=user_id, project_role=role, study_role=study_role,
                  display_name=f"名字 {user_id}", added_at=T0, added_by="ops")


class StoreContract:
    """Contract tests of the storage ports (subclass it and provide the ``stores`` fixture)."""

    # --------------------------------------------------------------------- members
    def test_a_project_is_created_once_and_updated_only_when_it_exists(self, stores: Stores) -> None:
        # Given a new project
        created = Project(project_id="p-new", name="新项目", time_zone="Europe/Berlin", kind="consultation",
                          created_at=T0)
        stores.members.create_project(created)
        # When it is created again, Then AlreadyExists; an unknown project cannot be updated
        with pytest.raises(AlreadyExists):
            stores.members.create_project(created.model_copy(update={"name": "另一个"}))
        with pytest.raises(ProjectNotFound):
            stores.members.update_project(created.model_copy(update={"project_id": "p-none"}))
        # and an update of the existing one is what every reader sees next
        stores.members.update_project(created.model_copy(update={"time_zone": "Asia/Tokyo"}))
        assert (stores.members.get_project("p-new").name, stores.jobs.get_project("p-new").time_zone) == (
            "新项目", "Asia/Tokyo")

    def test_a_projects_identifier_policy_is_stored_and_redact_by_default(self, stores: Stores) -> None:
        # Given a project created without a policy
        stores.members.create_project(Project(project_id="p-ids", name="P", created_at=T0))
        assert stores.members.get_project("p-ids").identifiers == "redact"
        # When an admin's update sets reject, Then every reader sees it
        stores.members.update_project(stores.members.get_project("p-ids").model_copy(update={"identifiers": "reject"}))
        assert (stores.members.get_project("p-ids").identifiers, stores.jobs.get_project("p-ids").identifiers) == (
            "reject", "reject")
    def test_a_project_created_with_its_rules_stores_both_or_neither(self, stores: Stores) -> None:
        # Given a new project created with a first hot memory (baseline System Rules)
        created = Project(project_id="p-rules", name="IIT", created_at=T0)
        rule = HotMemoryLine(line_id="br-x", section="System Rules", text="不得修改数据。", source="admin",
                             created_at=T0, created_by="baseline")
        stores.members.create_project(created, rules=HotMemory(project_id="p-rules", lines=[rule]),
                                      actor="baseline", tokens=9)
        # Then both are stored: hot memory version 1 with the rule
        hot = stores.jobs.load_hot_memory("p-rules")
        assert (hot.version, [ln.text for ln in hot.lines]) == (1, ["不得修改数据。"])
        # When the id is taken, Then AlreadyExists and the hot memory is unchanged
        other = HotMemory(project_id="p-rules", lines=[rule.model_copy(update={"text": "另一条。"})])
        with pytest.raises(AlreadyExists):
            stores.members.create_project(created, rules=other, actor="baseline", tokens=5)
        hot = stores.jobs.load_hot_memory("p-rules")
        assert (hot.version, [ln.text for ln in hot.lines]) == (1, ["不得修改数据。"])

    def test_members_are_put_listed_replaced_and_removed(self, stores: Stores) -> None:
        # Given a project with an admin
        project(stores)
        assert stores.members.put_member(member("u-pi", "admin", "PI")) is True
        # When a CRC is added, then replaced with another study role
        assert stores.members.put_member(member("u-crc")) is True
        assert stores.members.put_member(member("u-crc", study_role="DM")) is False
        # Then the listing holds both, by user id, and a read gives the replacement
        assert [(m.user_id, m.project_role, m.study_role) for m in stores.members.list_members("p1")] == [
            ("u-crc", "member", "DM"), ("u-pi", "admin", "PI")]
        assert stores.members.get_member("p1", "u-crc") == member("u-crc", study_role="DM")
        # and a removal is at once visible; a second removal finds nothing
        assert stores.members.remove_member("p1", "u-crc") is True
        assert stores.members.remove_member("p1", "u-crc") is False
        assert stores.members.get_member("p1", "u-crc") is None
        assert stores.members.get_member("p2", "u-pi") is None  # another project's membership is its own

    def test_the_last_admin_can_be_neither_removed_nor_demoted(self, stores: Stores) -> None:
        # Given a project whose only admin is u-pi
        project(stores)
        stores.members.put_member(member("u-pi", "admin", "PI"))
        stores.members.put_member(member("u-crc"))
        # When u-pi is removed or made a member, Then LastAdmin and nothing changed
        with pytest.raises(LastAdmin):
            stores.members.remove_member("p1", "u-pi")
        with pytest.raises(LastAdmin):
            stores.members.put_member(member("u-pi", "member", "PI"))
        assert stores.members.get_member("p1", "u-pi").project_role == "admin"
        # and once another admin exists, both are allowed
        stores.members.put_member(member("u-crc", "admin"))
        stores.members.put_member(member("u-pi", "member", "PI"))
        assert stores.members.remove_member("p1", "u-pi") is True
        assert [m.user_id for m in stores.members.list_members("p1")] == ["u-crc"]

    def test_the_turn_context_carries_the_askers_membership(self, stores: Stores) -> None:
        # Given a project with a CRC member
        project(stores)
        stores.members.put_member(member("u-crc"))
        # When the turn context is read for the CRC, for a stranger and for nobody in particular
        ctx = stores.chat.load_turn_context("p1", "s1", now=T0, user_id="u-crc")
        anonymous = stores.chat.load_turn_context("p1", "s1", now=T0)
        stranger = stores.chat.load_turn_context("p1", "s1", now=T0, user_id="u-other")
        # Then the CRC's membership is there; a stranger has none (the route guard refuses them);
        # without a user there is no asker
        assert ctx.asker == member("u-crc")
        assert stranger.asker is None
        assert anonymous.asker is None
        # And a project that does not exist is not found, whoever asks
        for user_id in ("u-crc", None):
            with pytest.raises(ProjectNotFound):
                stores.chat.load_turn_context("no-such-project", "s1", now=T0, user_id=user_id)

    def test_the_speakers_study_role_is_kept_with_the_message_and_in_the_flow_log(self, stores: Stores) -> None:
        # Given a project
        project(stores)
        said = message("m0001", T0).model_copy(update={"study_role": "PI"})
        # When a turn with a PI's message is written
        stores.chat.record_turn(turn(new_session(), [said], expected_version=0))
        # Then the message, the window and the flow log all say PI
        assert stores.chat.get_messages("p1", "s1", ["m0001"])["m0001"].study_role == "PI"
        assert stores.chat.get_session("p1", "s1").window[0].study_role == "PI"
        entries = stores.jobs.read_flow_log("p1", T0, T0 + timedelta(minutes=1))
        assert [(e.user_id, e.study_role) for e in entries] == [("u1", "PI")]

    # -------------------------------------------------------------------- projects
    def test_an_unknown_project_is_not_found_where_the_project_is_read(self, stores: Stores) -> None:
        # Given no project at all
        # When the turn context, the project or the views are read, Then ProjectNotFound
        with pytest.raises(ProjectNotFound):
            stores.chat.load_turn_context("nope", "s1", now=T0)
        with pytest.raises(ProjectNotFound):
            stores.jobs.get_project("nope")
        with pytest.raises(ProjectNotFound):
            stores.views.project_hot_memory("nope")
        with pytest.raises(ProjectNotFound):
            stores.views.reports_between("nope", None, None, limit=5)

    def test_a_new_session_reads_as_version_0_with_the_projects_hot_memory(self, stores: Stores) -> None:
        # Given a project with hot memory at version 2
        project(stores)
        seed_hot(stores, versions=2)

        # When a session never written is read
        ctx = stores.chat.load_turn_context("p1", "s-new", now=T0)

        # Then it is a new session (version 0, created now) beside the project and hot memory v2
        assert (ctx.project.project_id, ctx.hot_memory.version, [ln.text for ln in ctx.hot_memory.lines]) == (
            "p1", 2, ["先核对再录入"])
        assert (ctx.session.session_id, ctx.session.version, ctx.session.created_at) == ("s-new", 0, T0)
        assert stores.chat.get_session("p1", "s-new") is None

    # ------------------------------------------------------------------- the turn
    def test_a_turn_is_written_whole_and_the_session_version_moves_by_one(self, stores: Stores) -> None:
        # Given a project
        project(stores)
        first = [message("m0001", T0), message("m0002", T0 + timedelta(seconds=1), role="assistant")]

        # When a turn is written on a new session, then one based on version 1
        stores.chat.record_turn(turn(new_session(), first, expected_version=0))
        stored = stores.chat.get_session("p1", "s1")
        second = [message("m0003", T0 + timedelta(seconds=2))]
        stores.chat.record_turn(turn(stored, second, expected_version=1))

        # Then the session is at version 2 holding the three messages, each readable
        session = stores.chat.get_session("p1", "s1")
        assert (session.version, session.message_count) == (2, 3)
        assert [m.message_id for m in session.window] == ["m0001", "m0002", "m0003"]
        assert set(stores.chat.get_messages("p1", "s1", ["m0001", "m0003", "m-missing"])) == {"m0001", "m0003"}
        # and the flow log and the activity marker were written with them
        assert [e.message_id for e in stores.jobs.read_flow_log("p1", T0, T0 + timedelta(minutes=1))] == [
            "m0001", "m0002", "m0003"]
        assert stores.views.active_projects([T0.date()]) == ["p1"]

    def test_a_turn_based_on_an_old_version_writes_nothing(self, stores: Stores) -> None:
        # Given a session at version 1
        project(stores)
        stores.chat.record_turn(turn(new_session(), [message("m0001", T0)], expected_version=0))
        stale = new_session()

        # When a turn is written as if the session were new (version 0), and one based on version 5
        for expected in (0, 5):
            with pytest.raises(VersionConflict):
                stores.chat.record_turn(turn(stale, [message(f"m000{expected + 2}", T0 + timedelta(seconds=9))],
                                             expected_version=expected))

        # Then neither wrote anything: no message, no flow-log entry, the session unchanged
        assert stores.chat.get_messages("p1", "s1", ["m0002", "m0007"]) == {}
        assert [e.message_id for e in stores.jobs.read_flow_log("p1", T0, T0 + timedelta(minutes=1))] == ["m0001"]
        assert stores.chat.get_session("p1", "s1").version == 1

    def test_a_turn_repeating_a_stored_message_writes_nothing(self, stores: Stores) -> None:
        # Given a session holding m0001
        project(stores)
        stores.chat.record_turn(turn(new_session(), [message("m0001", T0)], expected_version=0))
        session = stores.chat.get_session("p1", "s1")

        # When a turn at the right version writes m0001 again beside a new message
        with pytest.raises(VersionConflict):
            stores.chat.record_turn(turn(session, [message("m0001", T0), message("m0002", T0)], expected_version=1))

        # Then the whole turn was refused: the new message is absent and the version unchanged
        assert stores.chat.get_messages("p1", "s1", ["m0002"]) == {}
        assert stores.chat.get_session("p1", "s1").version == 1

    def test_an_answered_failed_message_turns_ok_and_only_a_failed_one(self, stores: Stores) -> None:
        # Given a session whose m0001 failed and whose m0002 is ok
        project(stores)
        stores.chat.record_turn(turn(new_session(), [message("m0001", T0, status="failed"),
                                                     message("m0002", T0 + timedelta(seconds=1))], expected_version=0))
        session = stores.chat.get_session("p1", "s1")

        # When a turn answers m0002 (not failed), Then it conflicts and writes nothing
        reply = message("m0003", T0 + timedelta(seconds=2), role="assistant")
        with pytest.raises(VersionConflict):
            stores.chat.record_turn(turn(session, [reply], expected_version=1, mark_ok=["m0002"]))
        assert stores.chat.get_messages("p1", "s1", ["m0003"]) == {}

        # When a turn answers m0001, Then m0001 is ok and the reply stored
        stores.chat.record_turn(turn(session, [reply], expected_version=1, mark_ok=["m0001"]))
        found = stores.chat.get_messages("p1", "s1", ["m0001", "m0003"])
        assert (found["m0001"].status, found["m0003"].role) == ("ok", "assistant")

    def test_a_session_over_400_kb_is_refused_and_nothing_is_written(self, stores: Stores) -> None:
        # Given a project, and a session whose summary alone is 500 KB
        project(stores)
        huge = new_session().model_copy(update={"summary": "患" * 170_000})

        # When its turn is written, Then ItemTooLarge and nothing was written
        with pytest.raises(ItemTooLarge):
            stores.chat.record_turn(turn(huge, [message("m0001", T0)], expected_version=0))
        assert stores.chat.get_session("p1", "s1") is None
        assert stores.chat.get_messages("p1", "s1", ["m0001"]) == {}

    def test_a_message_is_read_with_its_context_and_an_unknown_one_is_not_found(self, stores: Stores) -> None:
        # Given a reply stored with its context manifest
        project(stores)
        reply = message("m0002", T0, role="assistant")
        write = turn(new_session(), [message("m0001", T0), reply], expected_version=0)
        write.contexts = {"m0002": {"intents": ["GENERAL"]}}
        stores.chat.record_turn(write)

        # When it is read, and an unknown id
        record, context = stores.chat.get_message("p1", "s1", "m0002")

        # Then the manifest comes with it; the unknown one is MessageNotFound
        assert (record.content, context) == ("内容 m0002", {"intents": ["GENERAL"]})
        with pytest.raises(MessageNotFound):
            stores.chat.get_message("p1", "s1", "m9999")

    def test_messages_between_returns_the_newest_in_the_open_range_oldest_first(self, stores: Stores) -> None:
        # Given 8 messages m0000 .. m0007
        project(stores)
        stores.chat.record_turn(turn(new_session(), [message(f"m{i:04d}", T0 + timedelta(seconds=i))
                                                     for i in range(8)], expected_version=0))

        # When the range (m0001, m0006) and the newest 2 before m0004 are read
        between = stores.sessions.messages_between("p1", "s1", after_id="m0001", before_id="m0006")
        newest = stores.sessions.messages_between("p1", "s1", after_id=None, before_id="m0004", limit=2)

        # Then the ends are excluded and the newest of the range come back oldest first
        assert [m.message_id for m in between] == ["m0002", "m0003", "m0004", "m0005"]
        assert [m.message_id for m in newest] == ["m0002", "m0003"]

    # ---------------------------------------------------------------- sessions
    def test_a_session_is_created_at_version_1_once(self, stores: Stores) -> None:
        # Given a project
        project(stores)

        # When a session is created, and created again
        created = stores.sessions.create_session(new_session("c1", patient_id="pt-1"))

        # Then it is at version 1; the second create is AlreadyExists
        assert created.version == 1 and stores.sessions.get_session("p1", "c1").version == 1
        with pytest.raises(AlreadyExists):
            stores.sessions.create_session(new_session("c1"))

    def test_a_patients_sessions_page_newest_first_and_a_foreign_token_is_refused(self, stores: Stores) -> None:
        # Given five sessions of pt-1 (one a minute) and two of pt-2
        project(stores)
        for i in range(5):
            stores.sessions.create_session(new_session(f"a{i}", patient_id="pt-1", at=T0 + timedelta(minutes=i)))
        for i in range(2):
            stores.sessions.create_session(new_session(f"b{i}", patient_id="pt-2", at=T0 + timedelta(minutes=i)))

        # When pt-1's sessions are listed two at a time
        seen: list[str] = []
        token: str | None = None
        pages = 0
        while True:
            page = stores.sessions.list_patient_sessions("p1", "pt-1", limit=2, next_token=token)
            seen += [s.session_id for s in page.sessions]
            pages += 1
            token = page.next_token
            if token is None:
                break

        # Then every session comes once, newest first, in three pages
        assert (seen, pages) == (["a4", "a3", "a2", "a1", "a0"], 3)
        # and a token of pt-1's listing is refused for pt-2's, as is garbage
        first = stores.sessions.list_patient_sessions("p1", "pt-1", limit=2).next_token
        with pytest.raises(InvalidContinuationToken):
            stores.sessions.list_patient_sessions("p1", "pt-2", limit=2, next_token=first)
        with pytest.raises(InvalidContinuationToken):
            stores.sessions.list_patient_sessions("p1", "pt-1", limit=2, next_token="!!not-a-token!!")
        # and the project's listing holds all seven, newest first
        listed = stores.sessions.list_project_sessions("p1", limit=10)
        assert [s.session_id for s in listed.sessions][:2] == ["a4", "a3"] and len(listed.sessions) == 7

    def test_a_diagnosis_is_stored_with_its_session_once(self, stores: Stores) -> None:
        # Given a session of pt-1 at version 1
        project(stores)
        session = stores.sessions.create_session(new_session("s1", patient_id="pt-1"))
        d1 = Diagnosis(project_id="p1", session_id="s1", diagnosis_id="d1", patient_id="pt-1", created_at=T0,
                       report={"证型": "风寒"})

        # When a diagnosis is added with the session's count, at version 1
        stores.sessions.add_diagnosis(d1, session.model_copy(update={"diagnosis_count": 1}), expected_version=1)

        # Then both are stored; the same id again is AlreadyExists, an old version a VersionConflict
        assert stores.sessions.get_session("p1", "s1").diagnosis_count == 1
        assert stores.sessions.get_diagnosis("p1", "s1", "d1").report == {"证型": "风寒"}
        with pytest.raises(AlreadyExists):
            stores.sessions.add_diagnosis(d1, session, expected_version=2)
        d2 = d1.model_copy(update={"diagnosis_id": "d2", "created_at": T0 + timedelta(hours=1)})
        with pytest.raises(VersionConflict):
            stores.sessions.add_diagnosis(d2, session, expected_version=1)
        with pytest.raises(DiagnosisNotFound):
            stores.sessions.get_diagnosis("p1", "s1", "d2")
        # and the patient's diagnoses read newest first
        stores.sessions.add_diagnosis(d2, session.model_copy(update={"diagnosis_count": 2}), expected_version=2)
        assert [d.diagnosis_id for d in stores.sessions.patient_diagnoses("p1", "pt-1")] == ["d2", "d1"]
        assert [d.diagnosis_id for d in stores.sessions.patient_diagnoses("p1", "pt-1", diagnosis_id="d1")] == ["d1"]
        assert [r.diagnosis_id for r in stores.sessions.patient_diagnosis_refs("p1", "pt-1", limit=1)] == ["d2"]

    def test_a_patients_references_come_with_the_turn_read_and_follow_every_diagnosis(self, stores: Stores) -> None:
        # Given pt-1 without diagnoses: the turn's read names none, and the references are unsaved
        project(stores)
        session = stores.sessions.create_session(new_session("s1", patient_id="pt-1"))
        assert stores.chat.load_turn_context("p1", "s2", now=T0, patient_id="pt-1").patient_diagnoses == []
        assert stores.chat.load_turn_context("p1", "s2", now=T0).patient_diagnoses is None
        empty = stores.sessions.patient_refs("p1", "pt-1")
        assert (empty.refs, empty.version) == ([], 0)

        # When a diagnosis is added with those references
        d1 = Diagnosis(project_id="p1", session_id="s1", diagnosis_id="d1", patient_id="pt-1", created_at=T0)
        stores.sessions.add_diagnosis(d1, session.model_copy(update={"diagnosis_count": 1}), expected_version=1,
                                      patient_refs=empty)

        # Then the turn's read names it; a second diagnosis based on the old references is refused whole
        ctx = stores.chat.load_turn_context("p1", "s2", now=T0, patient_id="pt-1")
        assert [r.diagnosis_id for r in ctx.patient_diagnoses or []] == ["d1"]
        d2 = d1.model_copy(update={"diagnosis_id": "d2", "created_at": T0 + timedelta(hours=1)})
        with pytest.raises(VersionConflict):
            stores.sessions.add_diagnosis(d2, session.model_copy(update={"diagnosis_count": 2}), expected_version=2,
                                          patient_refs=empty)
        with pytest.raises(DiagnosisNotFound):
            stores.sessions.get_diagnosis("p1", "s1", "d2")
        # and one based on the references as they are now is added to them, in time order
        current = stores.sessions.patient_refs("p1", "pt-1")
        stores.sessions.add_diagnosis(d2, session.model_copy(update={"diagnosis_count": 2}), expected_version=2,
                                      patient_refs=current)
        ctx = stores.chat.load_turn_context("p1", "s2", now=T0, patient_id="pt-1")
        assert [r.diagnosis_id for r in ctx.patient_diagnoses or []] == ["d1", "d2"]
        assert stores.sessions.patient_refs("p1", "pt-1").version == current.version + 1

    # ---------------------------------------------------------------- hot memory
    def test_a_hot_memory_commit_based_on_an_old_version_names_the_current_one(self, stores: Stores) -> None:
        # Given hot memory at version 3
        project(stores)
        hot = seed_hot(stores, versions=3)

        # When the jobs commit based on version 2
        with pytest.raises(VersionConflict) as conflict:
            stores.jobs.commit_hot_memory(hot, expected_version=2, actor="distiller", reason=None, now=T0, tokens=1,
                                          run=job_run())

        # Then it names version 3 and wrote nothing: no version 4, no marker
        assert conflict.value.current_version == 3
        assert stores.jobs.load_hot_memory("p1").version == 3
        assert stores.chat.get_hot_memory_revision("p1", 4) is None
        assert stores.jobs.get_job_run("p1", "distill", "2026-03-09") is None

    def test_a_hot_memory_commit_whose_marker_exists_writes_nothing(self, stores: Stores) -> None:
        # Given hot memory at version 1 and the day's marker already written
        project(stores)
        hot = seed_hot(stores)
        assert stores.jobs.put_job_run(job_run()) is True

        # When a commit at the right version carries the same marker
        with pytest.raises(VersionConflict) as conflict:
            stores.jobs.commit_hot_memory(hot, expected_version=1, actor="distiller", reason=None, now=T0, tokens=1,
                                          run=job_run())

        # Then the hot memory stayed at version 1
        assert conflict.value.current_version == 1
        assert stores.jobs.load_hot_memory("p1").version == 1

    def test_a_committed_version_is_stored_with_its_revision_and_marker(self, stores: Stores) -> None:
        # Given hot memory at version 1
        project(stores)
        hot = seed_hot(stores)
        changed = hot.model_copy(update={"lines": [*hot.lines, hot_line("l2", "周五前清理 Query")]})

        # When the jobs commit version 2 with the day's marker
        saved = stores.jobs.commit_hot_memory(changed, expected_version=1, actor="distiller", reason="distilled",
                                              now=T0 + timedelta(hours=1), tokens=9, run=job_run())

        # Then version 2 is current and stored as a revision, and the marker names it
        assert (saved.version, saved.updated_by) == (2, "distiller")
        assert [ln.line_id for ln in stores.jobs.load_hot_memory("p1").lines] == ["l1", "l2"]
        revision = stores.admin.get_revision("p1", 2)
        assert (revision.summary.reason, revision.summary.tokens, revision.summary.created_by) == (
            "distilled", 9, "distiller")
        assert stores.chat.get_hot_memory_revision("p1", 1).lines == hot.lines
        assert stores.jobs.get_job_run("p1", "distill", "2026-03-09").hot_version == 2

    def test_revisions_page_newest_first_and_a_foreign_cursor_is_refused(self, stores: Stores) -> None:
        # Given five stored versions
        project(stores)
        seed_hot(stores, versions=5)

        # When the revisions are listed two at a time
        versions: list[int] = []
        cursor: str | None = None
        while True:
            page = stores.admin.list_revisions("p1", limit=2, cursor=cursor)
            versions += [r.version for r in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break

        # Then each version comes once, newest first
        assert versions == [5, 4, 3, 2, 1]
        # and a cursor of the revision listing is refused by the audit listing
        first = stores.admin.list_revisions("p1", limit=2, cursor=None).next_cursor
        with pytest.raises(InvalidInput):
            stores.admin.list_audit("p1", limit=2, cursor=first)

    # --------------------------------------------------------------- admin writes
    def test_an_admin_commit_writes_its_audit_record_and_a_review_decision(self, stores: Stores) -> None:
        # Given hot memory at version 1 and a pending review item
        project(stores)
        hot = seed_hot(stores)
        assert stores.jobs.put_review_items([review("r1")]) == 1
        item = stores.admin.get_review("p1", review_item_id("2026-03-09", "r1"))
        decided = item.model_copy(update={"status": "approved", "decided_by": "u-admin", "decided_at": T0})

        # When an admin commit approves it
        stores.admin.commit_hot_memory(hot, expected_version=1, actor="u-admin", reason=None, now=T0, tokens=5,
                                       audit=audit("a1", T0), decide=decided)

        # Then the version, the audit record and the decision are stored
        assert stores.admin.load_hot_memory("p1").version == 2
        assert [a.audit_id for a in stores.admin.list_audit("p1", limit=5, cursor=None).items] == ["a1"]
        assert [(r.review_id, r.status) for r in stores.admin.list_review("p1", status=None)] == [("r1", "approved")]
        # and deciding it again is AlreadyDecided, by commit or alone, writing nothing
        with pytest.raises(AlreadyDecided) as again:
            stores.admin.commit_hot_memory(hot, expected_version=2, actor="u-admin", reason=None, now=T0, tokens=5,
                                           audit=audit("a2", T0 + timedelta(seconds=1)), decide=decided)
        assert again.value.status == "approved"
        with pytest.raises(AlreadyDecided):
            stores.admin.decide_review("p1", decided, audit=audit("a3", T0 + timedelta(seconds=2)))
        assert stores.admin.load_hot_memory("p1").version == 2
        assert [a.audit_id for a in stores.admin.list_audit("p1", limit=5, cursor=None).items] == ["a1"]

    def test_a_report_correction_based_on_an_old_revision_names_the_current_one(self, stores: Stores) -> None:
        # Given a report at revision 1
        project(stores)
        stores.seed.put_weekly_report(week_report("2026-W10"))
        previous = stores.admin.get_report("p1", "2026-W10")
        corrected = previous.model_copy(update={"summary": "[进度] 修订。", "revision": 2, "created_by": "u-admin"})

        # When it is corrected, then corrected again from revision 1
        stores.admin.correct_report(previous, corrected, replaced_by="u-admin", audit=audit("a1", T0))
        with pytest.raises(VersionConflict) as conflict:
            stores.admin.correct_report(previous, corrected, replaced_by="u-admin",
                                        audit=audit("a2", T0 + timedelta(seconds=1)))

        # Then the first is stored (its evidence kept) and the second names revision 2
        stored = stores.admin.get_report("p1", "2026-W10")
        assert (stored.summary, stored.revision, stored.evidence) == ("[进度] 修订。", 2, ["m-1"])
        assert conflict.value.current_version == 2
        assert [a.audit_id for a in stores.admin.list_audit("p1", limit=5, cursor=None).items] == ["a1"]

    # ---------------------------------------------------------- idempotent writes
    def test_markers_reviews_years_and_alerts_are_written_only_when_new(self, stores: Stores) -> None:
        # Given a project
        project(stores)
        year = YearlySummary(project_id="p1", year=2024, summary="2024 年入组 20 例。", created_at=T0)

        # When each is written twice
        runs = [stores.jobs.put_job_run(job_run()) for _ in range(2)]
        reviews = [stores.jobs.put_review_items([review("r1"), review("r2")]) for _ in range(2)]
        years = [stores.jobs.put_yearly_summary(year) for _ in range(2)]
        claims = [stores.jobs.claim_alert("p1", "k1", kind="admin_over_cap", now=T0) for _ in range(2)]

        # Then only the first wrote
        assert (runs, reviews, years, claims) == ([True, False], [2, 0], [True, False], [True, False])
        assert [s.year for s in stores.jobs.load_yearly_summaries("p1")] == [2024]
        # and a released claim can be claimed again
        stores.jobs.release_alert("p1", "k1")
        assert stores.jobs.claim_alert("p1", "k1", kind="admin_over_cap", now=T0) is True

    def test_a_weekly_report_is_committed_with_its_marker_only_when_both_are_new(self, stores: Stores) -> None:
        # Given an admin-corrected report of 2026-W10
        project(stores)
        stores.seed.put_weekly_report(week_report("2026-W10", revision=2, summary="[进度] 管理员修订。"))

        # When the archive commits its own report of that week, and one of 2026-W11
        again = stores.jobs.commit_weekly_report(week_report("2026-W10"), job_run("archive", "2026-W10"))
        new = stores.jobs.commit_weekly_report(week_report("2026-W11"), job_run("archive", "2026-W11"))

        # Then the existing report and no marker stay for W10; W11 and its marker are written
        assert (again, new) == (False, True)
        assert stores.jobs.get_weekly_report("p1", "2026-W10").summary == "[进度] 管理员修订。"
        assert stores.jobs.get_job_run("p1", "archive", "2026-W10") is None
        assert stores.jobs.get_job_run("p1", "archive", "2026-W11") is not None

    # ------------------------------------------------------------------ reads
    def test_reports_read_by_range_newest_or_oldest_first_as_each_port_says(self, stores: Stores) -> None:
        # Given reports of four weeks around a year boundary
        project(stores)
        for week in ("2025-W52", "2026-W01", "2026-W02", "2026-W03"):
            stores.seed.put_weekly_report(week_report(week))

        # Then each read returns its range in its order
        assert [r.iso_week for r in stores.chat.load_history("p1", limit_weeks=2)] == ["2026-W03", "2026-W02"]
        assert [r.iso_week for r in stores.jobs.list_reports_between("p1", "2025-W52", "2026-W02")] == [
            "2025-W52", "2026-W01", "2026-W02"]
        assert [r.iso_week for r in stores.views.reports_between("p1", "2026-W01", None, limit=10)] == [
            "2026-W03", "2026-W02", "2026-W01"]
        assert [r.iso_week for r in stores.chat.get_reports("p1", ["2026-W01", "2026-W09", "2026-W03"])] == [
            "2026-W03", "2026-W01"]

    def test_the_flow_log_window_is_half_open_and_in_time_order(self, stores: Stores) -> None:
        # Given messages at 15:59:59.999999Z, 16:00Z and 16:00:01Z (a local midnight in Asia/Shanghai)
        project(stores)
        midnight = datetime(2026, 3, 9, 16, 0, tzinfo=UTC)
        times = {"m-before": midnight - timedelta(microseconds=1), "m-at": midnight,
                 "m-after": midnight + timedelta(seconds=1)}
        stores.chat.record_turn(turn(new_session(), [message(m, at) for m, at in times.items()], expected_version=0))

        # When the local day 2026-03-10 is read
        entries = stores.jobs.read_flow_log("p1", midnight, midnight + timedelta(days=1))

        # Then it starts at its first instant and leaves out the one before
        assert [e.message_id for e in entries] == ["m-at", "m-after"]

    def test_the_flow_log_carries_the_speakers_study_role(self, stores: Stores) -> None:
        # Given a turn whose user message carries the speaker's study role
        project(stores)
        said = message("m-role", T0).model_copy(update={"study_role": "Statistician"})
        reply = message("m-reply", T0 + timedelta(seconds=1), role="assistant")
        stores.chat.record_turn(turn(new_session(), [said, reply], expected_version=0))

        # When the jobs read the flow log
        entries = stores.jobs.read_flow_log("p1", T0, T0 + timedelta(minutes=1))

        # Then the user message has the role it was written with, the assistant's none
        assert [(e.message_id, e.study_role) for e in entries] == [("m-role", "Statistician"), ("m-reply", None)]

    def test_active_projects_are_distinct_and_sorted(self, stores: Stores) -> None:
        # Given turns of p2 on two days and of p1 on one
        for pid in ("p2", "p1"):
            project(stores, pid)
        days = [T0, T0 + timedelta(days=1)]
        stores.chat.record_turn(turn(new_session(project_id="p2"), [message("m0", days[0])], expected_version=0))
        stored = stores.chat.get_session("p2", "s1")
        stores.chat.record_turn(turn(stored, [message("m1", days[1])], expected_version=1))
        stores.chat.record_turn(turn(new_session(), [message("m9", T0)], expected_version=0))

        # When the active projects of both days are read
        # Then each project comes once, sorted; a day without activity has none
        assert stores.views.active_projects([d.date() for d in days]) == ["p1", "p2"]
        assert stores.views.active_projects([date(2026, 1, 1)]) == []

    # ------------------------------------------------------------ the console's reads
    def test_a_users_memberships_are_listed_with_their_projects_and_no_one_elses(self, stores: Stores) -> None:
        # Given u-pi in two projects (admin of one) and u-crc in one of them
        for pid in ("p1", "p2"):
            project(stores, pid)
        stores.members.put_member(member("u-pi", "admin", "PI"))
        stores.members.put_member(member("u-pi", "member", "PI", project_id="p2"))
        stores.members.put_member(member("u-crc", project_id="p2"))
        # When u-pi's memberships and their projects are read
        mine = stores.members.memberships_of("u-pi", limit=10)
        projects = stores.members.get_projects([m.project_id for m in mine] + ["p-none"])
        # Then both memberships come, by project, with the roles as stored; a missing project is left out
        assert [(m.project_id, m.project_role) for m in mine] == [("p1", "admin"), ("p2", "member")]
        assert [p.project_id for p in projects] == ["p1", "p2"]
        assert [m.project_id for m in stores.members.memberships_of("u-crc", limit=10)] == ["p2"]
        # and a removed membership leaves the listing
        stores.members.remove_member("p2", "u-pi")
        assert [m.project_id for m in stores.members.memberships_of("u-pi", limit=10)] == ["p1"]

    def test_a_corrected_report_keeps_each_revisions_reason_and_lists_the_replaced_ones_newest_first(
        self, stores: Stores,
    ) -> None:
        # Given a report corrected twice, each time with a reason
        project(stores)
        stores.seed.put_weekly_report(week_report("2026-W10"))
        first = stores.admin.get_report("p1", "2026-W10")
        second = first.model_copy(update={"summary": "[进度] 第二版。", "revision": 2, "created_by": "u-pi",
                                          "created_at": T0 + timedelta(hours=1), "reason": "漏记了 P014"})
        stores.admin.correct_report(first, second, replaced_by="u-pi", audit=audit("a1", T0))
        third = second.model_copy(update={"summary": "[进度] 第三版。", "revision": 3, "created_by": "u-dm",
                                          "created_at": T0 + timedelta(hours=2), "reason": "中心编码写错"})
        stores.admin.correct_report(second, third, replaced_by="u-dm", audit=audit("a2", T0 + timedelta(seconds=1)))
        # When the report and its replaced revisions are read
        current = stores.admin.get_report("p1", "2026-W10")
        replaced = stores.admin.list_report_revisions("p1", "2026-W10")
        # Then the current one says why it was made, and each replaced one says its own reason, who
        # replaced it and when
        assert (current.revision, current.reason) == (3, "中心编码写错")
        assert [(r.revision, r.summary, r.reason, r.replaced_by) for r in replaced] == [
            (2, "[进度] 第二版。", "漏记了 P014", "u-dm"),
            (1, "[进度] 2026-W10 入组 1 例。", None, "u-pi"),
        ]
        assert replaced[0].replaced_at == T0 + timedelta(hours=2)
        assert stores.admin.list_report_revisions("p1", "2026-W11") == []

    def test_a_sessions_messages_page_oldest_first_with_speakers_and_a_foreign_cursor_is_refused(
        self, stores: Stores,
    ) -> None:
        # Given a chat turn (a member's question, the answer with its context) and two more messages
        project(stores)
        said = message("m0001", T0).model_copy(update={"study_role": "CRC"})
        write = turn(new_session(), [said, message("m0002", T0, role="assistant")], expected_version=0)
        write.contexts = {"m0002": {"intents": ["GENERAL"]}}
        stores.chat.record_turn(write)
        session = stores.chat.get_session("p1", "s1")
        stores.chat.record_turn(turn(session, [message("m0003", T0 + timedelta(seconds=5)),
                                               message("m0004", T0 + timedelta(seconds=6), role="assistant")],
                                     expected_version=session.version))
        # When they are read two at a time
        first = stores.sessions.list_messages("p1", "s1", limit=2)
        second = stores.sessions.list_messages("p1", "s1", limit=2, cursor=first.next_cursor)
        # Then oldest first: the member with their study role, the answer with its context kept
        assert [(m.message_id, m.speaker, m.user_id, m.study_role, m.has_context) for m in first.messages] == [
            ("m0001", "member", "u1", "CRC", False), ("m0002", "assistant", None, None, True)]
        assert [m.message_id for m in second.messages] == ["m0003", "m0004"] and second.next_cursor is None
        # and a cursor that is not this listing's is refused
        for foreign in ("bm90LWEtY3Vyc29y", "not a cursor!"):  # base64 of "not-a-cursor"; not base64 at all
            with pytest.raises(InvalidContinuationToken):
                stores.sessions.list_messages("p1", "s1", limit=2, cursor=foreign)

    def test_cited_flow_log_messages_are_found_by_id_and_unknown_ids_are_left_out(self, stores: Stores) -> None:
        # Given a turn whose ids carry their time (as the chat writes them)
        project(stores)
        asked_at = T0 + timedelta(milliseconds=123, microseconds=456)
        asked = f"m{epoch_ms(asked_at):013d}0a1b2c3d"
        answer_at = asked_at + timedelta(seconds=2)
        answered = f"m{epoch_ms(answer_at):013d}4e5f6a7b"
        said = message(asked, asked_at).model_copy(update={"study_role": "PI"})
        stores.chat.record_turn(turn(new_session(), [said, message(answered, answer_at, role="assistant")],
                                     expected_version=0))
        # When the cited ids are read, with an id of another project's shape and one never written
        never = f"m{epoch_ms(T0):013d}ffffffff"
        found = stores.admin.flow_log_messages("p1", [asked, "m-20260302-crc-0412", never, answered])
        # Then the two kept messages come back as written; the others are left out
        assert set(found) == {asked, answered}
        assert (found[asked].content, found[asked].user_id, found[asked].study_role, found[asked].at) == (
            f"内容 {asked}", "u1", "PI", asked_at)
        assert found[answered].role == "assistant"
        assert stores.admin.flow_log_messages("p2", [asked]) == {}
