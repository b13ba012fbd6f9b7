"""The key layout of the tables: every partition and sort key the repositories read or write.

Every base-table key starts with the project id, so no request can reach another project's items
without naming it (``docs/architecture.md``, "Request path").

- MemoryTable: pk ``{project}``; sk ``PROJECT`` / ``HOT`` / ``HOTREV#{version:010d}`` /
  ``REPORT#{YYYY-Www}`` / ``REPORTREV#{YYYY-Www}#{revision:06d}`` / ``YEAR#{YYYY}`` /
  ``ACTIVE#{local date}`` / ``JOBRUN#{job}#{key}`` / ``REVIEW#{local day}#{review_id}`` /
  ``ALERT#{dedupe key}`` / ``AUDIT#{UTC time}#{audit_id}`` / ``ERASURE#{kind}#{target_id}`` /
  ``MEMBER#{user_id}`` (a member item is also in the MemberIndex under ``USER#{user_id}`` /
  ``{project}``: a user's own memberships) / ``WECOMUSER#{lower-cased WeCom user id}`` (which member
  has that WeCom id) / ``CHANNEL#{channel}`` (a messenger channel's readable settings);
- SessionsTable: pk ``{project}#{session}``; sk ``SESSION`` / ``MSG#{message_id}`` /
  ``DIAG#{diagnosis_id}``; a patient's diagnosis references: pk ``{project}#PATIENT#{patient}``,
  sk ``DIAGREFS`` (ids hold no ``#``, so no session partition is ever named so);
- FlowLogTable: pk ``{project}#{UTC date}``; sk ``{UTC time}#{message_id}``.

Times in keys are :func:`sort_time` (fixed width, UTC), so string order is time order.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

PROJECT_SK = "PROJECT"
HOT_SK = "HOT"
SESSION_SK = "SESSION"
HOT_REVISION_PREFIX = "HOTREV#"
REPORT_PREFIX = "REPORT#"
YEAR_PREFIX = "YEAR#"
REVIEW_PREFIX = "REVIEW#"
AUDIT_PREFIX = "AUDIT#"
MESSAGE_PREFIX = "MSG#"
MEMBER_PREFIX = "MEMBER#"
WECOM_USER_PREFIX = "WECOMUSER#"
CHANNEL_PREFIX = "CHANNEL#"
DIAGNOSIS_PREFIX = "DIAG#"
PATIENT_REFS_SK = "DIAGREFS"
#: Bounds of ``REPORT#{YYYY-Www}`` sort keys when a range end is open.
FIRST_WEEK = "0000-W00"
LAST_WEEK = "9999-W99"


def sort_time(at: datetime) -> str:
    """``%Y-%m-%dT%H:%M:%S.%fZ`` in UTC: the fixed-width time used in sort keys."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ------------------------------------------------------------------------------ MemoryTable
def hot_revision_sk(version: int) -> str:
    """``HOTREV#{version:010d}``: one stored hot-memory version."""
    return f"{HOT_REVISION_PREFIX}{version:010d}"


def member_sk(user_id: str) -> str:
    """``MEMBER#{user_id}``: one member of the project."""
    return f"{MEMBER_PREFIX}{user_id}"


def wecom_user_sk(wecom_userid: str) -> str:
    """``WECOMUSER#{lower-cased WeCom user id}``: which member of the project has that WeCom id
    (WeCom compares user ids ignoring case)."""
    return f"{WECOM_USER_PREFIX}{wecom_userid.lower()}"


def channel_sk(channel: str) -> str:
    """``CHANNEL#{channel}``: a messenger channel's readable settings (``CHANNEL#wecom``)."""
    return f"{CHANNEL_PREFIX}{channel}"


def user_memberships_pk(user_id: str) -> str:
    """``USER#{user_id}``: the MemberIndex partition of one user's memberships (sort key: the
    project id). The one key that starts with no project id: it lists the user's OWN projects,
    read only for that user (``GET /v1/me``)."""
    return f"USER#{user_id}"


def report_sk(iso_week: str) -> str:
    """``REPORT#{YYYY-Www}``: the weekly report of one ISO week."""
    return f"{REPORT_PREFIX}{iso_week}"


def report_revision_prefix(iso_week: str) -> str:
    """``REPORTREV#{YYYY-Www}#``: the sort-key prefix of one week's replaced revisions."""
    return f"REPORTREV#{iso_week}#"


def report_revision_sk(iso_week: str, revision: int) -> str:
    """``REPORTREV#{YYYY-Www}#{revision:06d}``: a report's text before a correction."""
    return f"{report_revision_prefix(iso_week)}{revision:06d}"


def year_sk(year: int) -> str:
    """``YEAR#{yyyy}``: the summary of one ISO year."""
    return f"{YEAR_PREFIX}{year:04d}"


def activity_key(local_date: date | str) -> str:
    """``ACTIVE#{YYYY-MM-DD}``: the activity marker's sort key, and its ActivityIndex partition."""
    day = local_date.isoformat() if isinstance(local_date, date) else local_date
    return f"ACTIVE#{day}"


def job_run_sk(job: str, key: str) -> str:
    """``JOBRUN#{job}#{key}``: the completion marker of one job run."""
    return f"JOBRUN#{job}#{key}"


def review_sk(day: str, review_id: str) -> str:
    """``REVIEW#{local day}#{review_id}``: one review-queue item."""
    return f"{REVIEW_PREFIX}{day}#{review_id}"


def alert_sk(dedupe_key: str) -> str:
    """``ALERT#{dedupe key}``: an alert that was sent."""
    return f"ALERT#{dedupe_key}"


def erasure_sk(kind: str, target_id: str) -> str:
    """``ERASURE#{kind}#{target_id}``: the audit record of the erasure of a patient or session."""
    return f"ERASURE#{kind}#{target_id}"


def audit_sk(at: datetime, audit_id: str) -> str:
    """``AUDIT#{UTC time}#{audit_id}``: one admin change (sorts by time)."""
    return f"{AUDIT_PREFIX}{sort_time(at)}#{audit_id}"


# ---------------------------------------------------------------------------- SessionsTable
def session_pk(project_id: str, session_id: str) -> str:
    """Partition key of a session: ``{project_id}#{session_id}``."""
    return f"{project_id}#{session_id}"


def patient_pk(project_id: str, patient_id: str) -> str:
    """PatientIndex partition: ``{project_id}#{patient_id}``."""
    return f"{project_id}#{patient_id}"


def patient_refs_pk(project_id: str, patient_id: str) -> str:
    """Partition of a patient's diagnosis references: ``{project_id}#PATIENT#{patient_id}``."""
    return f"{project_id}#PATIENT#{patient_id}"


def patient_refs_listing(project_id: str) -> str:
    """ProjectSessionsIndex partition listing a project's diagnosis-references items:
    ``PATIENTS#{project_id}`` (never a project id, which holds no ``#``)."""
    return f"PATIENTS#{project_id}"


def message_sk(message_id: str) -> str:
    """``MSG#{message_id}`` (message ids sort by time)."""
    return f"{MESSAGE_PREFIX}{message_id}"


def diagnosis_sk(diagnosis_id: str) -> str:
    """``DIAG#{diagnosis_id}``."""
    return f"{DIAGNOSIS_PREFIX}{diagnosis_id}"


# ----------------------------------------------------------------------------- FlowLogTable
def flow_log_pk(project_id: str, utc_day: date) -> str:
    """Flow-log partition of one UTC date: ``{project_id}#{YYYY-MM-DD}``."""
    return f"{project_id}#{utc_day.isoformat()}"


def flow_log_keys(project_id: str, at: datetime, message_id: str) -> tuple[str, str]:
    """Flow-log keys: ``({project}#{UTC date}, {UTC time}#{message_id})``."""
    return flow_log_pk(project_id, at.astimezone(UTC).date()), f"{sort_time(at)}#{message_id}"


def flow_log_sort_key_bound(at: datetime) -> str:
    """The time prefix of flow-log sort keys for instant ``at``.

    ``BETWEEN bound(start) AND bound(end)`` selects exactly ``start <= at < end``: a key at
    ``end`` is ``bound(end) + "#..."``, which sorts after the bound.
    """
    return sort_time(at)


def utc_dates_overlapping(start: datetime, end: datetime) -> list[date]:
    """The UTC calendar dates that the half-open interval ``[start, end)`` touches."""
    first = start.astimezone(UTC).date()
    last = (end.astimezone(UTC) - timedelta(microseconds=1)).date()
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


__all__ = [
    "AUDIT_PREFIX",
    "CHANNEL_PREFIX",
    "DIAGNOSIS_PREFIX",
    "FIRST_WEEK",
    "HOT_REVISION_PREFIX",
    "HOT_SK",
    "LAST_WEEK",
    "MEMBER_PREFIX",
    "MESSAGE_PREFIX",
    "PATIENT_REFS_SK",
    "PROJECT_SK",
    "REPORT_PREFIX",
    "REVIEW_PREFIX",
    "SESSION_SK",
    "WECOM_USER_PREFIX",
    "YEAR_PREFIX",
    "activity_key",
    "alert_sk",
    "audit_sk",
    "channel_sk",
    "diagnosis_sk",
    "flow_log_keys",
    "flow_log_pk",
    "flow_log_sort_key_bound",
    "hot_revision_sk",
    "job_run_sk",
    "member_sk",
    "message_sk",
    "patient_pk",
    "patient_refs_listing",
    "patient_refs_pk",
    "report_revision_prefix",
    "user_memberships_pk",
    "report_revision_sk",
    "report_sk",
    "review_sk",
    "session_pk",
    "sort_time",
    "wecom_user_sk",
    "year_sk",
]
