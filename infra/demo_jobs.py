"""``make demo-jobs``: the background jobs on the running local stack, end to end.

1. imports a day of conversation into the demo project over HTTP: durable preferences
   ("以后别…", "记住…", "from now on…"), a decision and some progress;
2. distils that day and archives that week, the way ``make job`` runs them (the worker handler
   with the SQS event Lambda sends);
3. prints the hot memory (the distilled lines with their provenance) and the week's report
   through ``GET /v1/projects/{id}/memory`` and ``GET /v1/projects/{id}/reports``.

Which day: the jobs only complete a period that is OVER in the project's time zone (a run for
today merges what exists but leaves the day open; the current week is not archived at all, so
the real report is not blocked). So the demo BACKDATES its conversation: it posts the turns
through the transcript import (``POST .../sessions/{id}/transcript``, turns recorded elsewhere,
with their local times) on the same weekday one week ago. That day and its ISO week (the
previous one) are over, so distill and archive do exactly what their scheduled runs would do.

Start ``make run`` first (in another shell). The jobs are idempotent: a second demo on the same
day imports new messages but changes nothing in the memory or the report (the day and the week
are already done); restart ``make run`` for a fresh stack.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import requests

from infra.jobs import JobsCliError, LocalJobs, local_description

DEMO_PROJECT = "demo-iit"
#: How far back the demo conversation is dated: the same weekday of the previous ISO week.
BACKDATE = timedelta(days=7)
#: A day of conversation: what the PI and the CRC typed (user messages only are distilled).
DAY = (
    "以后别发英文摘要，周报统一用中文。",
    "记住：P012 的 V3 访视窗口只有 3 天，超窗前一天要提醒 CRC。",
    "From now on, list QC findings by subject number, one line per missing field.",
    "今天 PI 会议决定：S02 中心暂停筛选一周，等伦理批件更新后恢复。",
    "P021 今天完成筛选并入组，累计入组 18 例。",
)


def iso_week(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def run_demo(
    base_url: str,
    jobs: LocalJobs,
    headers: Mapping[str, str],
    *,
    project_id: str = DEMO_PROJECT,
    today: date,
    out: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Import ``DAY`` into ``project_id`` dated ``today - BACKDATE`` (project local time; see
    the module docstring), distil that day, archive its week; print and return
    ``{"memory": ..., "reports": ..., "distill": ..., "archive": ...}``."""
    session = f"demo-jobs-{uuid.uuid4().hex[:8]}"
    day = today - BACKDATE
    out(f"1. a day of conversation in {project_id} on {day} (one week ago, so the day and its week are over;"
        f" session {session}):")
    turns = [{"role": "patient", "content": content, "at": f"{day.isoformat()}T{9 + i:02d}:00:00"}
             for i, content in enumerate(DAY)]  # no offset: read in the project's time zone
    response = requests.post(f"{base_url}/v1/projects/{project_id}/sessions/{session}/transcript",
                             json={"turns": turns}, headers=dict(headers), timeout=30)
    response.raise_for_status()
    for turn in turns:
        out(f"   {turn['at'][11:16]} user: {turn['content']}")
    before = requests.get(f"{base_url}/v1/projects/{project_id}/memory", headers=dict(headers), timeout=30)
    out(f"\n2. distil {day} and archive {iso_week(day)} (the worker, as `make job` runs it)")
    distill = jobs.run("distill", project_id, day)
    archive = jobs.run("archive", project_id, day)
    for name, result in (("distill", distill), ("archive", archive)):
        failed = result["response"].get("batchItemFailures")
        out(f"   {name}: run date {result['request']['date']}, {'FAILED' if failed else 'ok'}")

    memory = requests.get(f"{base_url}/v1/projects/{project_id}/memory", headers=dict(headers), timeout=30)
    memory.raise_for_status()
    body = memory.json()
    out(f"\n3. GET /v1/projects/{project_id}/memory -> ETag {before.headers.get('ETag')} -> {memory.headers['ETag']}")
    out(body["markdown"])
    distilled = [ln for ln in body["lines"] if ln["source"] == "distilled"]
    out("\n   distilled lines (provenance):")
    for ln in distilled:
        out(
            f"   - [{ln['section']}] {ln['text']}  <- {ln['created_by']} {ln['created_at']}"
            f" from {', '.join(ln['evidence'])}"
        )
    if before.headers.get("ETag") == memory.headers["ETag"]:
        out("   (unchanged: this day was already distilled; the jobs never redo a day)")

    week = iso_week(day)
    reports = requests.get(f"{base_url}/v1/projects/{project_id}/reports", params={"from": week, "to": week},
                           headers=dict(headers), timeout=30)
    reports.raise_for_status()
    out(f"\n4. GET /v1/projects/{project_id}/reports?from={week}&to={week}")
    for report in reports.json()["reports"]:
        out(f"   {report['iso_week']} ({report['created_by']}, {report['created_at']}):")
        for line in report["summary"].splitlines():
            out(f"   {line}")
    return {"memory": body, "reports": reports.json(), "distill": distill, "archive": archive}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.demo_jobs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", default=DEMO_PROJECT)
    parser.add_argument("--endpoint", default=None, help="moto URL of the local stack (default: .local/stack.json)")
    args = parser.parse_args(argv)
    try:
        description = local_description(args.endpoint)
    except JobsCliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if "base_url" not in description:
        print("error: the demo needs .local/stack.json of `make run` (for the API URL)", file=sys.stderr)
        return 2
    from infra.local.token import add_memberships, mint_token

    quiet = {**description, "env": {**description["env"], "POWERTOOLS_LOG_LEVEL": "WARNING",
                                     "POWERTOOLS_METRICS_DISABLED": "true"}}
    jobs = LocalJobs.attach(quiet)
    for line in add_memberships(description["base_url"], "demo-pi", {args.project: "admin"}, study_role="PI",
                                display_name=None):
        print(line, file=sys.stderr)
    headers = {"Authorization": f"Bearer {mint_token('demo-pi')}"}
    tz = description["env"].get("PROJECT_TIME_ZONE", "Asia/Shanghai")
    run_demo(description["base_url"], jobs, headers, project_id=args.project, today=datetime.now(ZoneInfo(tz)).date())
    return 0


if __name__ == "__main__":
    sys.exit(main())
