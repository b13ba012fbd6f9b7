"""What the jobs did, over HTTP through the local stack:
``GET /v1/projects/{id}/memory`` (hot memory with provenance, ETag = version) and
``GET /v1/projects/{id}/reports?from=&to=`` (newest first), their errors (422, 401, 403, 404),
and the jobs run against the local stack the way ``make job`` / ``make run`` run them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import requests

from agent_memory.domain.models import Project
from infra.jobs import LocalJobs, local_description
from infra.local.stack import LocalStack, free_port
from infra.local.token import mint_token
from tests.support.auth import grant

REPO_ROOT = Path(__file__).resolve().parents[2]


def token(projects: str, sub: str | None = "u-it") -> dict[str, str]:
    """An Authorization header with a local token the gateway accepts (``sub=None``: an empty user)."""
    extra = {"sub": ""} if sub is None else None
    if sub is not None:
        grant(projects, sub)
    return {"Authorization": f"Bearer {mint_token(sub or 'nobody', extra=extra)}"}


def get(stack: LocalStack, path: str, headers: dict[str, str] | None = None) -> requests.Response:
    return requests.get(f"{stack.base_url}{path}", headers=headers or token("demo-iit:member"), timeout=30)


def new_project(stack: LocalStack) -> str:
    project_id = f"jobs-{uuid.uuid4().hex[:10]}"
    stack.repo.projects.put_project(Project(project_id=project_id, name=project_id, time_zone="Asia/Shanghai",
                                   created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    return project_id


# --------------------------------------------------------------------------------------- memory
def test_memory_returns_markdown_lines_with_provenance_and_the_version_as_etag(local_stack: LocalStack) -> None:
    # Given the seeded demo project, When an admin reads its hot memory,
    response = get(local_stack, "/v1/projects/demo-iit/memory", token("demo-iit:admin"))
    # Then the body has the Markdown the chat injects and every line's provenance,
    assert response.status_code == 200
    body = response.json()
    assert body["markdown"].startswith("# System Rules")
    assert body["version"] >= 1 and body["tokens"] > 0
    assert response.headers["ETag"] == f'"{body["version"]}"'
    assert response.headers["Cache-Control"] == "no-store"
    for line in body["lines"]:
        assert {"line_id", "section", "text", "source", "created_at", "created_by", "evidence"} <= set(line)
        assert line["source"] in ("admin", "distilled")
    assert {line["source"] for line in body["lines"]} >= {"admin"}


def test_memory_of_a_project_without_hot_memory_is_empty_version_zero(local_stack: LocalStack) -> None:
    project_id = new_project(local_stack)
    response = get(local_stack, f"/v1/projects/{project_id}/memory", token(f"{project_id}:admin"))
    assert response.status_code == 200
    assert (response.json()["version"], response.json()["lines"], response.headers["ETag"]) == (0, [], '"0"')


# -------------------------------------------------------------------------------------- reports
def test_reports_are_newest_first(local_stack: LocalStack) -> None:
    weeks = [r["iso_week"] for r in get(local_stack, "/v1/projects/demo-iit/reports").json()["reports"]]
    assert len(weeks) >= 10
    assert weeks == sorted(weeks, reverse=True)


def test_reports_week_range_is_inclusive(local_stack: LocalStack) -> None:
    body = get(local_stack, "/v1/projects/demo-iit/reports?from=2026-W10&to=2026-W12").json()
    assert [r["iso_week"] for r in body["reports"]] == ["2026-W12", "2026-W11", "2026-W10"]
    assert (body["from_week"], body["to_week"], body["count"]) == ("2026-W10", "2026-W12", 3)
    assert all(r["summary"] and r["created_by"] for r in body["reports"])


def test_reports_limit_keeps_the_newest(local_stack: LocalStack) -> None:
    body = get(local_stack, "/v1/projects/demo-iit/reports?to=2026-W12&limit=2").json()
    assert [r["iso_week"] for r in body["reports"]] == ["2026-W12", "2026-W11"]


@pytest.mark.parametrize(
    "query",
    ["from=2026-W5", "to=2026-13", "from=2026-W54", "from=2025-W53", "from=2026-W12&to=2026-W10", "limit=0",
     "from=W10-2026"],
)
def test_a_bad_week_range_is_422(local_stack: LocalStack, query: str) -> None:
    # 2025 has 52 ISO weeks; 2026 has 53.
    response = get(local_stack, f"/v1/projects/demo-iit/reports?{query}")
    assert response.status_code == 422, response.text
    assert response.json()["error"] in ("validation_error", "invalid_input")


def test_week_53_exists_in_2026(local_stack: LocalStack) -> None:
    assert get(local_stack, "/v1/projects/demo-iit/reports?from=2026-W53").status_code == 200


# ---------------------------------------------------------------------------------------- auth
@pytest.mark.parametrize("path", ["/v1/projects/demo-iit/memory", "/v1/projects/demo-iit/reports"])
def test_another_projects_member_is_403(local_stack: LocalStack, path: str) -> None:
    assert get(local_stack, path, token("demo-clinic:admin", "u-clinic-only")).status_code == 403


@pytest.mark.parametrize("path", ["/v1/projects/demo-iit/memory", "/v1/projects/demo-iit/reports"])
def test_no_valid_token_is_401(local_stack: LocalStack, path: str) -> None:
    # rejected by the gateway (malformed token) and by the handler (claims without a user)
    assert get(local_stack, path, {"Authorization": "Bearer not-a-jwt"}).status_code == 401
    assert get(local_stack, path, token("demo-iit:admin", sub=None)).status_code == 401


def test_unknown_project_is_404(local_stack: LocalStack) -> None:
    assert get(local_stack, "/v1/projects/nope-x/memory", token("nope-x:admin")).status_code == 404
    assert get(local_stack, "/v1/projects/nope-x/reports", token("nope-x:admin")).status_code == 404


# ------------------------------------------------------------------------- jobs on the local stack
def _import_turns(stack: LocalStack, project_id: str, day: date, *contents: str) -> None:
    """The PI's turns recorded on ``day`` (project local time), through the transcript import."""
    turns = [{"role": "patient", "content": c, "at": f"{day.isoformat()}T{10 + i:02d}:00:00"}
             for i, c in enumerate(contents)]
    response = requests.post(
        f"{stack.base_url}/v1/projects/{project_id}/sessions/s-{uuid.uuid4().hex[:8]}/transcript",
        json={"turns": turns}, headers=token(f"{project_id}:admin"), timeout=30,
    )
    assert response.status_code == 200, response.text


def test_a_day_distilled_and_a_week_archived_show_in_the_routes(local_stack: LocalStack) -> None:
    # Given a project where a PI stated durable preferences a week ago (local; that day and its
    # ISO week are over, so the jobs complete them),
    project_id = new_project(local_stack)
    day = datetime.now(ZoneInfo("Asia/Shanghai")).date() - timedelta(days=7)
    _import_turns(local_stack, project_id, day, "以后别发英文摘要，统一用中文。",
                  "From now on, always list the missing CRF fields by subject number.")
    jobs = LocalJobs.for_stack(local_stack)
    before = get(local_stack, f"/v1/projects/{project_id}/memory", token(f"{project_id}:admin"))
    # When the day is distilled through the dispatcher (the schedule's Input, this project) and the
    # week is archived by the backfill command's path,
    distilled = jobs.dispatch("distill", day + timedelta(days=1), project_id)
    archived = jobs.run("archive", project_id, day)
    # Then the memory has the user's preferences as distilled lines citing their messages, with a new ETag,
    assert distilled["delivery"] == {"batches": 1, "records": 1, "failed": 0}
    assert archived["response"] == {"batchItemFailures": []}
    memory = get(local_stack, f"/v1/projects/{project_id}/memory", token(f"{project_id}:admin"))
    lines = memory.json()["lines"]
    assert memory.headers["ETag"] != before.headers["ETag"]
    assert {ln["source"] for ln in lines} == {"distilled"}
    assert any("英文摘要" in ln["text"] for ln in lines) and all(ln["evidence"] for ln in lines)
    # and the week's report is listed.
    week = f"{day.isocalendar()[0]}-W{day.isocalendar()[1]:02d}"
    reports = get(local_stack, f"/v1/projects/{project_id}/reports?from={week}&to={week}",
                  token(f"{project_id}:member", "u-it-member")).json()["reports"]
    assert [r["iso_week"] for r in reports] == [week]
    # Re-running both changes nothing.
    jobs.dispatch("distill", day + timedelta(days=1), project_id)
    jobs.run("archive", project_id, day)
    again = get(local_stack, f"/v1/projects/{project_id}/memory", token(f"{project_id}:admin"))
    assert again.headers["ETag"] == memory.headers["ETag"]


def test_make_job_runs_against_a_running_make_run_server(tmp_path: Path) -> None:
    # Given `make run` started as the Makefile starts it, describing itself in a stack file,
    stack_file = tmp_path / "stack.json"
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "AWS_ENDPOINT_URL")}
    env.update({"PORT": str(free_port()), "LOCAL_STACK_FILE": str(stack_file)})
    server = subprocess.Popen([sys.executable, "-m", "infra.local.server"], cwd=REPO_ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not stack_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        description = local_description(stack_file=stack_file)
        assert set(description["resources"]) >= {"JobQueue", "JobDLQ", "AdminAlertsTopic"}
        # When `python -m infra.jobs run` (what `make job` runs) archives the demo project's week 2026-W10,
        done = subprocess.run(
            [sys.executable, "-m", "infra.jobs", "run", "--job", "archive", "--project", "demo-iit",
             "--date", "2026-03-04"],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
        )
        # Then it ran the worker with a one-record SQS event for the run date 2026-03-09; the seeded
        # report of that week exists, so nothing was overwritten and nothing failed.
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout[done.stdout.index('{\n  "request"'):])
        assert result["request"] == {"job": "archive", "project_id": "demo-iit", "date": "2026-03-09"}
        assert result["response"] == {"batchItemFailures": []} and result["dead_letters"] == 0
        # and `dispatch` runs the dispatcher with the schedule's Input, then the worker.
        done = subprocess.run(
            [sys.executable, "-m", "infra.jobs", "dispatch", "--job", "prune", "--date", "2026-03-11"],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout[done.stdout.index('{\n  "payload"'):])
        assert result["payload"] == {"job": "prune", "time_zone": "Asia/Shanghai", "date": "2026-03-11"}
        assert result["dispatch"]["job"] == "prune" and result["delivery"]["failed"] == 0
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    # When the server stops, Then its stack file is gone.
    assert not stack_file.exists()


def test_jobs_cli_without_a_running_stack_explains_what_to_do(tmp_path: Path) -> None:
    env = {**os.environ, "LOCAL_STACK_FILE": str(tmp_path / "missing.json")}
    env.pop("LOCAL_ENDPOINT", None)
    done = subprocess.run([sys.executable, "-m", "infra.jobs", "run", "--job", "distill", "--project", "p",
                           "--date", "2026-03-10"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert "make run" in done.stderr


def test_demo_jobs_shows_a_day_distilled_and_a_week_archived(local_stack: LocalStack) -> None:
    from infra.demo_jobs import run_demo

    # Given a project (a fresh one, so other tests' demo data stays as seeded),
    project_id = new_project(local_stack)
    today = datetime.now(ZoneInfo("Asia/Shanghai")).date()
    printed: list[str] = []
    # When the demo chats its day, distils it and archives the week,
    result = run_demo(local_stack.base_url, LocalJobs.for_stack(local_stack), token(f"{project_id}:admin"),
                      project_id=project_id, today=today, out=printed.append)
    # Then the durable preferences are distilled lines citing messages, the decision is in the report,
    distilled = [ln for ln in result["memory"]["lines"] if ln["source"] == "distilled"]
    assert len(distilled) >= 3 and all(ln["evidence"] for ln in distilled)
    (report,) = result["reports"]["reports"]
    assert "决定" in report["summary"]
    # and the demo printed both through the GET routes.
    text = "\n".join(printed)
    assert f"GET /v1/projects/{project_id}/memory" in text and "distilled lines (provenance)" in text
    assert report["iso_week"] in text
