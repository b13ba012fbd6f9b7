"""Seed the demo projects: ``demo-iit`` (hot memory + history book) and ``demo-clinic``.

Idempotent: what already exists is skipped (the project record, the hot memory, each weekly
report), so a second run, or a run against a restarted local server, changes nothing. Used by the
local runtime (``infra.local``) and the integration tests; never runs in AWS.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime
from typing import Any

from agent_memory.adapters.dynamo.projects import ProjectRepository
from agent_memory.domain.errors import ProjectNotFound, VersionConflict
from agent_memory.domain.models import ClinicalDataSource, Member, Project, StudyRole
from agent_memory.domain.text import estimate_tokens
from infra.local.demo.hot_memory import DEMO_IIT_PROJECT_ID, demo_iit_hot_memory
from infra.local.demo.weekly_reports import demo_iit_weekly_reports

DEMO_CLINIC_PROJECT_ID = "demo-clinic"
SEED_ACTOR = "seed"

DEMO_PROJECTS: tuple[Project, ...] = (
    Project(
        project_id=DEMO_IIT_PROJECT_ID,
        name="EGFR 突变晚期 NSCLC 一线联合治疗 IIT（演示）",
        time_zone="Asia/Shanghai",
        kind="iit",
        created_at=datetime(2025, 12, 29, 1, 0, tzinfo=UTC),  # 09:00 Asia/Shanghai, week 2026-W01
    ),
    Project(
        project_id=DEMO_CLINIC_PROJECT_ID,
        name="儿科门诊问诊助手（演示）",
        time_zone="Asia/Shanghai",
        kind="clinic",
        created_at=datetime(2026, 3, 2, 1, 0, tzinfo=UTC),
    ),
)


#: The demo team of each demo project: (user id, project role, study role, display name).
DEMO_TEAM: tuple[tuple[str, str, StudyRole, str], ...] = (
    ("pi-zhang", "admin", "PI", "张主任"),
    ("crc-li", "member", "CRC", "李协调员"),
    ("crc-wang", "member", "CRC", "王协调员"),
    ("dm-chen", "member", "DM", "陈数据管理员"),
)


def demo_members(project_id: str, added_at: datetime) -> list[Member]:
    """The demo team as members of ``project_id``: a PI (the admin), two CRCs and a DM."""
    return [
        Member(project_id=project_id, user_id=user, project_role=role, study_role=study,
               display_name=name, added_at=added_at, added_by=SEED_ACTOR)
        for user, role, study, name in DEMO_TEAM
    ]


def seed_demo(
    repo: ProjectRepository, *, now: datetime, clinical_data: ClinicalDataSource | None = None, members: Any = None
) -> None:
    """Create the demo projects, their team (:data:`DEMO_TEAM`, through ``members``, a
    ``MemberStore``), the demo-iit hot memory and its weekly reports, and the demo-clinic visits
    (:mod:`infra.local.demo.clinic_sessions`) if absent.

    Args:
        repo: a repository whose tables are already bound (``bind_tables``).
        now: the current time (aware); the hot memory is saved at ``now`` and only reports the
            weekly job would already have archived by ``now`` are written.
        clinical_data: demo-iit's clinical source (the local REDCap server); set on the project
            record even when it exists (the server's port changes from run to run).
        members: where the demo team is added (a member already there is left as it is).
    """
    for project in DEMO_PROJECTS:
        wanted = project
        if clinical_data is not None and project.project_id == DEMO_IIT_PROJECT_ID:
            wanted = project.model_copy(update={"clinical_data": clinical_data})
        try:
            stored = repo.get_project(project.project_id)
        except ProjectNotFound:
            repo.put_project(wanted)
        else:
            if clinical_data is not None and wanted.clinical_data != stored.clinical_data:
                repo.put_project(stored.model_copy(update={"clinical_data": wanted.clinical_data}))
        if members is not None:
            for member in demo_members(project.project_id, project.created_at):
                if members.get_member(project.project_id, member.user_id) is None:
                    members.put_member(member)

    hot = demo_iit_hot_memory()
    with suppress(VersionConflict):  # already seeded (or edited since): never overwrite
        repo.save_hot_memory(
            hot,
            expected_version=0,
            actor=SEED_ACTOR,
            reason="demo seed",
            now=now,
            tokens=estimate_tokens(hot.render()),
        )

    for report in demo_iit_weekly_reports():
        if report.created_at <= now:
            repo.put_weekly_report(report, overwrite=False)

    # demo-clinic: patients' visits (transcripts, facts, one diagnosis, a follow-up).
    from agent_memory.adapters.dynamo.sessions import SessionsRepository
    from infra.local.demo.clinic_sessions import seed_demo_visits

    seed_demo_visits(SessionsRepository(), DEMO_CLINIC_PROJECT_ID, now=now)
