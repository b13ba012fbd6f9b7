"""The one-off identifier scrub (``JobRequest(job="scrub")``, governance.scrub on the DynamoDB
store): what a project stored before the identifier firewall is rewritten everywhere it is kept,
with an audit record of counts, and a retry after a crash counts nothing twice."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, cast

import boto3
import pytest

from agent_memory.adapters.dynamo.feedback import FeedbackRepository
from agent_memory.adapters.dynamo.scrub import ScrubRepository
from agent_memory.domain.clinical import IdentifierValue
from agent_memory.domain.jobs import JobRequest
from agent_memory.domain.models import Project
from agent_memory.domain.redaction import Scrubbed
from agent_memory.domain.scrub import ScrubRecord, StoredText
from agent_memory.events.jobs import JOB_TABLE, WorkerDeps
from agent_memory.feedback.service import rate_message
from agent_memory.governance.scrub import ScrubDeps, run_scrub
from agent_memory.identifiers import IdentifierFirewall
from tests.fakes import InMemorySubjectIdentifiers
from tests.unit.chat_support import USER, deps_with, hot_line, seed_project, send

NAME, PHONE, RESIDENT_ID, EMAIL, MRN = "刘桂兰", "13912345678", "11010519491231002X", "liu.gl@example.com", "88123456"
#: What was typed before the firewall: every kind, with clinical values that must stay.
TYPED = [
    f"P004 {NAME}的家属电话是 {PHONE}，身份证 {RESIDENT_ID}",
    f"Her e-mail is {EMAIL}; 住院号 {MRN}. P003 C3D1 肌酐 132 μmol/L, lot LOT-2025-0017, IIT-2025-017-0032",
]
KEPT = ["P004", "P003", "C3D1", "132 μmol/L", "LOT-2025-0017", "IIT-2025-017-0032"]
RUN = date(2026, 3, 11)


class _NoFirewall(IdentifierFirewall):
    """What the product did before the firewall: nothing withheld."""

    def __init__(self) -> None:
        super().__init__(None)

    def scrub(self, project: Project, text: str, **_: Any) -> Scrubbed:
        return Scrubbed(text)

    def screen_all(self, project: Project, texts: Sequence[str], **_: Any) -> list[Scrubbed]:
        return [Scrubbed(t) for t in texts]

    def scrub_data(self, project: Project, data: Any, **_: Any) -> tuple[Any, dict[str, int]]:
        return data, {}


def _seed(repo: Any, project_id: str) -> None:
    """A project whose hot memory, history book, sessions, ratings and flow log hold identifiers."""
    seed_project(repo, project_id, hot_lines=[hot_line("l1", "Active Context", f"联系人 {NAME} 电话 {PHONE}")],
                 report_text=f"[进度]: {NAME} 完成 C3D1，邮箱 {EMAIL}")
    deps = deps_with(repo)
    deps.firewall = _NoFirewall()
    for text in TYPED:
        answered = send(deps, text, project_id=project_id)
    rate_message(FeedbackRepository(), project_id=project_id, session_id="s1",
                 message_id=answered.message_id, user_id=USER, rating="down", reason=f"{NAME} 的电话 {PHONE} 写错了",
                 tags=None, now=datetime(2026, 3, 10, 3, tzinfo=UTC), firewall=_NoFirewall())


def _scan(aws: dict[str, str], project_id: str) -> str:
    client = boto3.client("dynamodb")
    out: list[str] = []
    for table in aws.values():
        for page in client.get_paginator("scan").paginate(TableName=table):
            out += [json.dumps(i, ensure_ascii=False) for i in page["Items"] if i["pk"]["S"].startswith(project_id)]
    return "\n".join(out)


def _deps(store: Any = None) -> ScrubDeps:
    names = InMemorySubjectIdentifiers({p: [IdentifierValue(subject_id="P004", kind="name", value=NAME)]
                                        for p in ("p1", "p2")})
    return ScrubDeps(store=store or ScrubRepository(), firewall=IdentifierFirewall(names),
                     clock=lambda: datetime(2026, 3, 11, 2, tzinfo=UTC))


def test_the_scrub_job_rewrites_every_stored_identifier_and_keeps_the_clinical_values(
    repo: Any, aws: dict[str, str]
) -> None:
    # Given a project that stored identifiers typed before the firewall, everywhere it keeps text
    _seed(repo, "p1")
    before = _scan(aws, "p1")
    assert all(v in before for v in (NAME, PHONE, RESIDENT_ID, EMAIL, MRN))

    # When the worker runs the scrub job of the job table
    worker = WorkerDeps(jobs=cast(Any, None), governance=cast(Any, None), scrub=_deps)  # the scrub's alone
    outcome = JOB_TABLE["scrub"].run(worker, JobRequest(job="scrub", project_id="p1", date=RUN))

    # Then no identifier is left in any table, and the clinical values are
    after = _scan(aws, "p1")
    for value in (NAME, PHONE, RESIDENT_ID, EMAIL, MRN):
        assert value not in after, value
    for value in KEPT:
        assert value in after, value
    assert "[P004 的姓名已隐去]" in after and "[电话已隐去]" in after
    # and the audit record says how many of each kind, in how many items of each area, no value
    record = ScrubRepository().get_scrub("p1", "2026-03-11")
    assert record is not None and record.status == "done" and outcome.result["status"] == "done"
    assert set(record.withheld) == {"email", "name", "phone", "record_number", "resident_id"}
    # the two user messages and the rating's event in the flow log, the two messages, the session
    # item (its window), the rating, hot memory and its one revision, the three weekly reports
    assert record.items == {"flow_log": 3, "message": 2, "session": 1, "feedback": 1, "hot_memory": 1,
                            "hot_memory_revision": 1, "weekly_report": 3}
    stored = json.dumps(record.model_dump(mode="json"), ensure_ascii=False)
    assert not any(v in stored for v in (NAME, PHONE, RESIDENT_ID, EMAIL, MRN))


def test_a_second_delivery_of_the_same_run_changes_and_counts_nothing(repo: Any, aws: dict[str, str]) -> None:
    _seed(repo, "p1")
    first = run_scrub(_deps(), project_id="p1", run_date=RUN, actor="operator")
    scanned = _scan(aws, "p1")
    again = run_scrub(_deps(), project_id="p1", run_date=RUN, actor="operator")
    assert again == first and _scan(aws, "p1") == scanned
    # and a new run (another day) finds nothing left to withhold
    later = run_scrub(_deps(), project_id="p1", run_date=RUN + timedelta(days=1), actor="operator")
    assert later.withheld == {} and later.items == {} and later.status == "done"


class _Crashing(ScrubRepository):
    """The store of a worker that dies after ``after`` rewrites."""

    def __init__(self, after: int) -> None:
        self.left = after

    def rewrite(self, record: ScrubRecord, text: StoredText, value: Any, withheld: dict[str, int]) -> bool:
        if self.left == 0:
            raise RuntimeError("the worker died")
        self.left -= 1
        return super().rewrite(record, text, value, withheld)


def test_a_retry_after_a_crash_ends_with_the_counts_of_an_uninterrupted_run(repo: Any, aws: dict[str, str]) -> None:
    # Given two projects holding the same texts
    _seed(repo, "p1")
    _seed(repo, "p2")
    clean = run_scrub(_deps(), project_id="p1", run_date=RUN, actor="operator")
    # When p2's run dies after 3 rewrites and the record is delivered again
    with pytest.raises(RuntimeError):
        run_scrub(_deps(_Crashing(3)), project_id="p2", run_date=RUN, actor="operator")
    assert ScrubRepository().get_scrub("p2", "2026-03-11").status == "running"  # type: ignore[union-attr]
    retried = run_scrub(_deps(), project_id="p2", run_date=RUN, actor="operator")
    # Then it counts exactly what one uninterrupted run counts
    assert (retried.withheld, retried.items) == (clean.withheld, clean.items)
    assert PHONE not in _scan(aws, "p2")
