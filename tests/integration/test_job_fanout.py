"""The job fan-out through the real handlers on moto (DynamoDB + SQS from template.yaml):
the dispatcher reads the activity index only (never a Scan) and enqueues one message per
project; the worker processes an SQS batch with partial failures; the whole scheduled run is
idempotent. botocore calls are counted to prove which DynamoDB operations were made.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime
from types import ModuleType
from typing import Any

import boto3
import pytest

from agent_memory.adapters.dynamo.tables import HotMemoryItem
from agent_memory.domain.jobs import JobRequest
from agent_memory.domain.models import Project
from infra.local.sqs_events import deliver, sqs_event, sqs_record
from infra.template_model import REPO_ROOT, create_queues, create_topics, load_template
from tests.integration.dynamo_support import mark_active, say


# ------------------------------------------------------------------------------------ fixtures
class ApiCalls:
    """botocore API calls per service and operation while active."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()

    def of(self, service: str) -> dict[str, int]:
        return {op: n for (svc, op), n in self.calls.items() if svc == service}


@pytest.fixture
def api_calls(monkeypatch: pytest.MonkeyPatch) -> ApiCalls:
    from botocore.client import BaseClient

    counter = ApiCalls()
    original = BaseClient._make_api_call

    def counting(client: Any, operation: str, params: Any) -> Any:
        counter.calls[(client.meta.service_model.service_name, operation)] += 1
        return original(client, operation, params)

    monkeypatch.setattr(BaseClient, "_make_api_call", counting)
    return counter


@pytest.fixture
def resources(aws: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The template's queues and topic in moto, and the functions' environment."""
    template = load_template()
    created = {**create_queues(boto3.client("sqs"), template), **create_topics(boto3.client("sns"), template)}
    env = {
        "FLOW_LOG_TABLE": aws["FlowLogTable"], "MEMORY_TABLE": aws["MemoryTable"],
        "SESSIONS_TABLE": aws["SessionsTable"], "IDEMPOTENCY_TABLE": aws["IdempotencyTable"],
        "JOB_QUEUE_URL": created["JobQueue"].ref, "ADMIN_ALERTS_TOPIC_ARN": created["AdminAlertsTopic"].arn,
        "LLM_PROVIDER": "offline", "PROJECT_TIME_ZONE": "Asia/Shanghai",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return created


def load_function(folder: str) -> ModuleType:
    """Import ``functions/<folder>/app.py`` afresh (module-level wiring reads the current env)."""
    from agent_memory.config import get_settings

    get_settings.cache_clear()
    name = f"test_fn_{folder}"
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "functions" / folder / "app.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    get_settings.cache_clear()
    return module


@pytest.fixture
def dispatcher(resources: dict[str, Any]) -> Iterator[ModuleType]:
    module = load_function("job_dispatcher")
    yield module
    sys.modules.pop(module.__name__, None)


@pytest.fixture
def worker(resources: dict[str, Any]) -> Iterator[ModuleType]:
    module = load_function("job_worker")
    yield module
    sys.modules.pop(module.__name__, None)


# ------------------------------------------------------------------------------------- helpers
def add_project(project_id: str, tz: str = "Asia/Shanghai") -> None:
    from agent_memory.adapters.dynamo.projects import ProjectRepository

    ProjectRepository().put_project(
        Project(project_id=project_id, name=project_id, time_zone=tz, created_at=datetime(2026, 1, 1, tzinfo=UTC))
    )


def queued(sqs_url: str) -> list[dict[str, Any]]:
    """Every message of the queue (received once; left invisible)."""
    client = boto3.client("sqs")
    out: list[dict[str, Any]] = []
    while batch := client.receive_message(
        QueueUrl=sqs_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages"):
        out.extend(batch)
    return out


def record(body: str, queue_arn: str = "arn:aws:sqs:eu-west-1:123456789012:JobQueue") -> dict[str, Any]:
    return sqs_record(body, queue_arn=queue_arn)


def request_body(job: str, project_id: str, run_date: str) -> str:
    return JobRequest(job=job, project_id=project_id, date=date.fromisoformat(run_date)).model_dump_json()


def fake_jobs(
    worker: ModuleType, monkeypatch: pytest.MonkeyPatch, fail_for: set[str] | None = None
) -> list[JobRequest]:
    """Give the worker a job table whose every scheduled job records its request (and fails for
    the projects of ``fail_for``); returns the requests seen."""
    from agent_memory.events.jobs import Job, JobOutcome

    seen: list[JobRequest] = []

    def run(deps: Any, request: JobRequest) -> JobOutcome:
        seen.append(request)
        if request.project_id in (fail_for or set()):
            raise RuntimeError("boom")
        return JobOutcome(result={"project_id": request.project_id, "changed": True}, metrics=())

    for name in ("distill", "archive", "prune"):
        monkeypatch.setitem(worker.app.jobs, name, Job(run=run))
    return seen


# ----------------------------------------------------------------------------------- dispatcher
def test_dispatcher_enqueues_one_message_per_project_active_yesterday_from_the_index_only(
    dispatcher: ModuleType, resources: dict[str, Any], api_calls: ApiCalls, lambda_context: Any
) -> None:
    # Given 12 projects active on 2026-03-10 (3 of them also the day before), 4 active only on
    # 03-09 and 2 only on 03-11, among 30 projects,
    for i in range(30):
        add_project(f"p{i:02d}")
    for i in range(12):
        mark_active(f"p{i:02d}", "2026-03-10")
    for i in (0, 1, 2, 20, 21, 22, 23):
        mark_active(f"p{i:02d}", "2026-03-09")
    for i in (24, 25):
        mark_active(f"p{i:02d}", "2026-03-11")
    api_calls.calls.clear()
    # When the distill schedule's Input for the run of 2026-03-11 arrives,
    report = dispatcher.lambda_handler({"job": "distill", "time_zone": "Asia/Shanghai", "date": "2026-03-11"},
                                       lambda_context)
    # Then the projects came from one Query on the activity index per run date (no Scan, no other
    # read): the run's own and the previous one (a project whose zone is behind the schedule's was
    # still in its day then; for the others that request finds the day done and changes nothing),
    assert api_calls.of("dynamodb") == {"Query": 2}
    # and each of the 12 has exactly one message for the run date, the 7 active on 03-09 one for the
    # previous run date, sent 10 per call.
    assert api_calls.of("sqs") == {"SendMessageBatch": 2}
    messages = queued(resources["JobQueue"].ref)
    keys = {m["MessageAttributes"]["job_key"]["StringValue"] for m in messages}
    assert keys == {f"distill#p{i:02d}#2026-03-11" for i in range(12)} | {
        f"distill#p{i:02d}#2026-03-10" for i in (0, 1, 2, 20, 21, 22, 23)}
    assert len(messages) == 19
    assert report["projects"] == 16 and report["enqueued"] == 19
    assert report["activity_dates"] == ["2026-03-09", "2026-03-10"]


def test_active_projects_reads_the_index_to_its_last_page(aws: dict[str, str], api_calls: ApiCalls) -> None:
    from agent_memory.adapters.dynamo.activity import ActivityRepository

    for i in range(25):
        mark_active(f"q{i:02d}", "2026-03-10")
    api_calls.calls.clear()
    projects = ActivityRepository().active_projects([date(2026, 3, 10)], page_size=4)
    assert projects == [f"q{i:02d}" for i in range(25)]
    assert api_calls.of("dynamodb")["Query"] >= 7  # ceil(25 / 4) pages
    assert "Scan" not in api_calls.of("dynamodb")


def test_archive_dispatch_reads_each_day_of_the_previous_iso_week_once(
    dispatcher: ModuleType, resources: dict[str, Any], api_calls: ApiCalls, lambda_context: Any
) -> None:
    # Given 2026-W53 (2026-12-28 .. 2027-01-03) with projects active on several of its days,
    for project, day in [("a", "2026-12-28"), ("a", "2027-01-03"), ("b", "2026-12-31"), ("c", "2027-01-03"),
                         ("d", "2026-12-27"), ("e", "2027-01-04")]:
        mark_active(project, day)
    api_calls.calls.clear()
    # When the Monday 2027-01-04 archive run dispatches,
    report = dispatcher.lambda_handler({"job": "archive", "date": "2027-01-04"}, lambda_context)
    # Then the 7 days were each queried once, and a, b, c (not d, e) got one message each.
    assert api_calls.of("dynamodb") == {"Query": 7}
    assert sorted(JobRequest.model_validate_json(m["Body"]).project_id for m in queued(resources["JobQueue"].ref)) == [
        "a", "b", "c"]
    assert report["activity_dates"][0] == "2026-12-28" and report["activity_dates"][-1] == "2027-01-03"


def test_backfill_dispatch_enqueues_only_that_project_and_reads_no_table(
    dispatcher: ModuleType, resources: dict[str, Any], api_calls: ApiCalls, lambda_context: Any
) -> None:
    mark_active("other", "2026-03-10")
    api_calls.calls.clear()
    report = dispatcher.lambda_handler({"job": "prune", "project_id": "p-one", "date": "2026-03-11"}, lambda_context)
    assert api_calls.of("dynamodb") == {}
    bodies = [JobRequest.model_validate_json(m["Body"]) for m in queued(resources["JobQueue"].ref)]
    assert bodies == [JobRequest(job="prune", project_id="p-one", date=date(2026, 3, 11))]
    assert report["backfill"] is True


def test_dispatcher_defaults_to_the_project_time_zone(
    monkeypatch: pytest.MonkeyPatch, resources: dict[str, Any], lambda_context: Any
) -> None:
    # Given a stack whose project time zone is Europe/Berlin and a run at 2026-03-10T17:00Z
    # (18:00 in Berlin, already 01:00 on 03-11 in Shanghai),
    monkeypatch.setenv("PROJECT_TIME_ZONE", "Europe/Berlin")
    module = load_function("job_dispatcher")
    at = datetime(2026, 3, 10, 17, 0, tzinfo=UTC)
    monkeypatch.setattr(module.app, "deps", replace(module.app.deps, clock=lambda: at))
    # When an Input without a time zone arrives, Then the run date is Berlin's.
    report = module.lambda_handler({"job": "distill"}, lambda_context)
    assert (report["time_zone"], report["run_date"], report["activity_dates"]) == (
        "Europe/Berlin", "2026-03-10", ["2026-03-08", "2026-03-09"])


@pytest.mark.parametrize(
    "payload", [{"job": "vacuum"}, {"job": "distill", "date": "2026-13-01"}, {"job": "distill", "x": 1}]
)
def test_invalid_schedule_input_fails_the_invocation_and_enqueues_nothing(
    dispatcher: ModuleType, resources: dict[str, Any], payload: dict[str, Any], lambda_context: Any
) -> None:
    with pytest.raises(Exception) as err:
        dispatcher.lambda_handler(payload, lambda_context)
    assert "validation" in type(err.value).__name__.lower()
    assert queued(resources["JobQueue"].ref) == []


# --------------------------------------------------------------------------------------- worker
def test_a_malformed_record_fails_alone(
    worker: ModuleType, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    # Given a batch with two good requests, a body that is not JSON and one missing fields,
    seen = fake_jobs(worker, monkeypatch)
    records = [record(request_body("distill", "p1", "2026-03-11")), record("not json"),
               record(json.dumps({"job": "distill"})), record(request_body("distill", "p2", "2026-03-11"))]
    # When the worker handles it,
    response = worker.lambda_handler(sqs_event(records), lambda_context)
    # Then only the two bad records are reported, and each good one ran exactly once.
    assert response == {"batchItemFailures": [{"itemIdentifier": records[1]["messageId"]},
                                              {"itemIdentifier": records[2]["messageId"]}]}
    assert [(r.project_id, r.date) for r in seen] == [("p1", date(2026, 3, 11)), ("p2", date(2026, 3, 11))]


def test_a_failing_job_fails_only_its_record(
    worker: ModuleType, monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    seen = fake_jobs(worker, monkeypatch, fail_for={"p-bad"})
    records = [record(request_body("archive", p, "2026-03-16")) for p in ("p1", "p-bad", "p3")]
    response = worker.lambda_handler(sqs_event(records), lambda_context)
    assert response == {"batchItemFailures": [{"itemIdentifier": records[1]["messageId"]}]}
    assert [r.project_id for r in seen] == ["p1", "p-bad", "p3"]


def test_a_job_for_an_unknown_project_is_dropped_not_retried(worker: ModuleType, lambda_context: Any) -> None:
    response = worker.lambda_handler(
        sqs_event([record(request_body("distill", "ghost", "2026-03-11"))]), lambda_context
    )
    assert response == {"batchItemFailures": []}


def test_a_record_failing_every_time_ends_in_the_dead_letter_queue(
    worker: ModuleType, resources: dict[str, Any], monkeypatch: pytest.MonkeyPatch, lambda_context: Any
) -> None:
    # Given a queued request whose job always fails,
    seen = fake_jobs(worker, monkeypatch, fail_for={"p-bad"})
    sqs = boto3.client("sqs")
    sqs.send_message(QueueUrl=resources["JobQueue"].ref, MessageBody=request_body("distill", "p-bad", "2026-03-11"))
    # When the queue is delivered (failed records become visible again, as after the visibility timeout),
    done = deliver(sqs, resources["JobQueue"].ref, resources["JobQueue"].arn,
                   lambda event: worker.lambda_handler(event, lambda_context), batch_size=5)
    # Then it was tried maxReceiveCount (3) times and then moved to the DLQ.
    assert len(seen) == 3 and done.failed == 3
    dlq = sqs.receive_message(QueueUrl=resources["JobDLQ"].ref).get("Messages", [])
    assert [JobRequest.model_validate_json(m["Body"]).project_id for m in dlq] == ["p-bad"]


# ------------------------------------------------------------------------------------ end to end
def test_scheduled_distillation_end_to_end_then_a_rerun_changes_nothing(
    dispatcher: ModuleType, worker: ModuleType, resources: dict[str, Any], lambda_context: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a project whose PI said a durable preference on 2026-03-10 (local) and another one on 03-11,
    add_project("p1")
    secret_text = "以后别发英文摘要，统一用中文"
    say("p1", "m1", secret_text, datetime(2026, 3, 9, 23, 30, tzinfo=UTC))  # 03-10 07:30 Shanghai
    say("p1", "m2", "from now on, always cite the CRF page", datetime(2026, 3, 10, 17, 0, tzinfo=UTC))  # 03-11 01:00
    sqs = boto3.client("sqs")

    def scheduled_run() -> Any:
        dispatcher.lambda_handler(
            {"job": "distill", "time_zone": "Asia/Shanghai", "date": "2026-03-11"}, lambda_context
        )
        return deliver(sqs, resources["JobQueue"].ref, resources["JobQueue"].arn,
                       lambda event: worker.lambda_handler(event, lambda_context), batch_size=5)

    # When the 2026-03-11 02:00 run dispatches and the worker processes the queue,
    first = scheduled_run()
    hot = HotMemoryItem.get("p1", "HOT", consistent_read=True)
    texts = [line["text"] for line in hot.lines]
    # Then yesterday's (local) statement is in hot memory and today's is not,
    assert first.records == 1 and first.failed == 0
    assert any("英文摘要" in t for t in texts)
    assert not any("CRF" in t for t in texts)
    # and when the same run is dispatched again (a duplicate / manual re-run), nothing changes.
    version = hot.version
    second = scheduled_run()
    assert second.records == 1 and second.failed == 0
    assert HotMemoryItem.get("p1", "HOT", consistent_read=True).version == version
    # The run emitted per-job metrics and never logged what the user wrote.
    out = capsys.readouterr().out
    assert '"DistillJobsRun":[1.0]' in out and '"DistillJobsEnqueued":[1.0]' in out
    assert secret_text not in out and "CRF page" not in out
