"""Domain models shared by logic, data access and handlers: projects, members, hot memory and
the history book. A session's messages and state and what one chat turn reads and writes are
:mod:`agent_memory.domain.turns` (only the functions that read or write sessions import them).

Times are timezone-aware UTC ``datetime`` objects unless a name says ``local``.
"""

from __future__ import annotations

from datetime import date, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

#: A project member's role in the study team (the ``[PI]`` / ``[CRC]`` tags of hot memory).
StudyRole = Literal["PI", "Sub-I", "CRC", "DM", "CRA", "Statistician", "Other"]

class Intent(StrEnum):
    """What a message asks for; drives retrieval."""

    QUERY_DATA = "QUERY_DATA"
    QUERY_HISTORY = "QUERY_HISTORY"
    ANALYZE_TREND = "ANALYZE_TREND"
    QC_TASK = "QC_TASK"
    GENERATE_REPORT = "GENERATE_REPORT"
    MEMORY_RECALL = "MEMORY_RECALL"
    CONSULTATION = "CONSULTATION"
    GENERAL = "GENERAL"


#: Intents that load the history book ("问历史/趋势/回顾").
HISTORY_INTENTS: frozenset[Intent] = frozenset({Intent.QUERY_HISTORY, Intent.ANALYZE_TREND})


LineSource = Literal["admin", "distilled"]


class HotMemoryLine(BaseModel):
    """One line of hot memory with its provenance (who wrote it, when, from which messages)."""

    line_id: str
    section: str
    text: str
    source: LineSource
    role_tag: str | None = None
    created_at: datetime
    created_by: str
    evidence: list[str] = Field(default_factory=list)
    #: when the statement behind a distilled line was made (its newest evidence message), besides
    #: ``created_at`` (when the line was written)
    stated_at: datetime | None = None
    #: the user id of the speaker of that statement (a preference "for me" is scoped to them)
    stated_by: str | None = None
    #: message ids of the statements this line replaced (newest last, at most 20): a re-run of a day
    #: merged earlier in the day finds them said already and does not bring the replaced lines back
    retired_evidence: list[str] = Field(default_factory=list)


#: Section order of the hot-memory document.
HOT_MEMORY_SECTIONS: tuple[str, ...] = (
    "System Rules",
    "User Preferences",
    "Active Context",
    "Lessons Learned",
)


#: how many message ids ``HotMemory.dismissed_evidence`` keeps (the newest)
DISMISSED_KEPT = 200


class DismissedLine(BaseModel):
    """A distilled line an admin removed: what it said and when it was removed (UTC), so that a
    statement of it made before then, in a message the line did not cite (said again the same day),
    is not learnt again."""

    section: str
    text: str
    role_tag: str | None = None
    dismissed_at: datetime


class HotMemory(BaseModel):
    """The project's hot memory: structured lines rendered as one Markdown document."""

    project_id: str
    version: int = 0
    lines: list[HotMemoryLine] = Field(default_factory=list)
    updated_at: datetime | None = None
    updated_by: str | None = None
    #: message ids behind distilled lines an admin removed (the kill switch, an edit or a restore
    #: without them), newest last, at most :data:`DISMISSED_KEPT`: distillation never learns those
    #: messages again (a re-run of a day merged in part earlier brings no deleted line back)
    dismissed_evidence: list[str] = Field(default_factory=list)
    #: the distilled lines an admin removed (the newest :data:`DISMISSED_KEPT`)
    dismissed_lines: list[DismissedLine] = Field(default_factory=list)

    def render(self) -> str:
        """Markdown document: one ``# Section`` per non-empty section, ``- [TAG] text`` lines."""
        out: list[str] = []
        sections = list(HOT_MEMORY_SECTIONS) + sorted(
            {ln.section for ln in self.lines} - set(HOT_MEMORY_SECTIONS)
        )
        for section in sections:
            lines = [ln for ln in self.lines if ln.section == section]
            if not lines:
                continue
            if out:
                out.append("")
            out.append(f"# {section}")
            for ln in lines:
                tag = f"[{ln.role_tag}] " if ln.role_tag else ""
                out.append(f"- {tag}{ln.text}")
        return "\n".join(out)


class WeeklyReport(BaseModel):
    """One history-book entry: the report of one ISO week (``iso_week`` like ``2026-W05``)."""

    project_id: str
    iso_week: str
    summary: str
    revision: int = 1
    created_at: datetime
    created_by: str = "archiver"
    evidence: list[str] = Field(default_factory=list)
    #: why this revision was made: the reason an admin gave for the correction (None: the
    #: archiver's report, or a correction without a reason)
    reason: str | None = None


class YearlySummary(BaseModel):
    """``YEAR#{yyyy}``: one complete ISO year of the history book condensed.

    ``weeks`` are the ISO weeks (``YYYY-Www``) whose reports it was built from.
    """

    project_id: str
    year: int
    summary: str
    weeks: list[str] = Field(default_factory=list)
    created_at: datetime
    created_by: str = "pruner"


class ClinicalDataSource(BaseModel):
    """Where a project's clinical data lives: a REDCap API URL and whether the project's API token
    is set. The token itself is a secret the service names and stores (``{ClinicalTokenSecretPrefix}
    {project_id}``, docs/architecture.md, "Project secrets"); it is never held here.

    - ``token_set`` / ``token_updated_at``: the service holds a token for ``api_url`` (UTC);
    - ``token_secret``: legacy only, the NAME of a secret chosen by an admin before the service owned
      the tokens; new writes never set it, the chat refuses to use it ("set the token again") and no
      response shows it (``exclude``: the store writes it explicitly, :meth:`stored`), so the
      operator's migration (``python -m infra.migrate_clinical_tokens``) can still read it.
    """

    source: Literal["redcap"]
    api_url: str
    token_set: bool = False
    token_updated_at: datetime | None = None
    token_secret: str | None = Field(default=None, exclude=True)

    def stored(self) -> dict[str, Any]:
        """The JSON the project record stores: every field, the legacy ``token_secret`` included
        when there is one."""
        data = self.model_dump(mode="json")
        if self.token_secret is not None:
            data["token_secret"] = self.token_secret
        return data


#: What the identifier firewall does with a text holding identifiers (docs/architecture.md,
#: "Identifiers"): ``redact`` withholds them behind placeholders, ``reject`` refuses the request
#: (HTTP 422 with the kinds found) and stores nothing.
IdentifierPolicy = Literal["redact", "reject"]


class Project(BaseModel):
    """A tenant. ``time_zone`` is the IANA zone of the project's calendar; ``identifiers`` the
    project's :data:`IdentifierPolicy` (admins set it; default ``redact``)."""

    project_id: str
    name: str
    time_zone: str = "Asia/Shanghai"
    kind: Literal["iit", "clinic", "consultation"] = "iit"
    clinical_data: ClinicalDataSource | None = None
    identifiers: IdentifierPolicy = "redact"
    created_at: datetime


class Member(BaseModel):
    """A user's membership of one project (``MEMBER#{user_id}`` in the project's partition): it,
    not the token, decides access (``project_role``) and names the user's study role.

    ``wecom_userid``: the member's WeCom user id (企业微信 UserID) when the project's WeCom channel
    should reach them and answer their WeCom messages; at most one member of a project has a given
    WeCom user id (compared ignoring case, as WeCom does).
    """

    project_id: str
    user_id: str
    project_role: Literal["admin", "member"]
    study_role: StudyRole
    display_name: str
    added_at: datetime
    added_by: str
    wecom_userid: str | None = None


def iso_week_label(day: date) -> str:
    """ISO week label ``YYYY-Www`` of a calendar date (ISO 8601 year, so 2027-01-01 -> 2026-W53)."""
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


