"""Job fan-out cost per processed project, for 1,000 and 10,000 projects of which 5 % are active
: the per-project cost must not grow with the number of projects.

For each size, in moto (in-process DynamoDB + SQS, tables and queues from template.yaml): every
project has a record and an old activity marker (60 days ago); the active 5 % have markers on each
day of the archived week and flow-log messages (user and assistant) on two of its days. Then, for
each job (distill, archive, prune), one scheduled run on Monday 2026-03-16 (Asia/Shanghai): the
dispatch (``agent_memory.jobs.fanout.dispatch`` with the real activity repository and SQS queue)
and the real job (``run_scheduled``, the worker's job table) of every enqueued request (offline
extractors). Counted: DynamoDB API calls through botocore (dispatch + jobs) and wall time, divided
by the projects processed.

``run()`` returns ``{"jobs_calls_per_project_ratio_10k_vs_1k": worst ratio over the jobs}``
(target <= 1.05) and prints the table. ``python -m bench.jobs`` runs it alone.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "shared"))
sys.path.insert(0, str(ROOT))

from agent_memory.events.jobs import scheduled_jobs  # noqa: E402 - the layer is on the path from here

SIZES = (1_000, 10_000)
ACTIVE_SHARE = 0.05
#: The scheduled jobs of the worker's job table (distill, archive, prune).
JOBS = scheduled_jobs()
RUN_DATE = date(2026, 3, 16)  # a Monday: distill 03-15, archive 2026-W11 (03-09..03-15), prune as of 03-16
TZ = "Asia/Shanghai"
NOW = datetime(2026, 3, 15, 18, 0, tzinfo=UTC)  # 02:00 on 03-16 in Shanghai
MESSAGES = (
    ("user", "以后别发英文摘要，周报统一用中文。"),
    ("assistant", "好的，之后的周报都用中文。"),
    ("user", "今天 PI 会议决定：S02 中心暂停筛选一周。"),
    ("user", "P021 今天完成筛选并入组，累计入组 18 例。"),
)


class ApiCalls:
    """botocore API calls per service while active (PynamoDB and boto3 alike)."""

    def __init__(self) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()

    def __enter__(self) -> ApiCalls:
        from botocore.client import BaseClient

        self._original = BaseClient._make_api_call
        counter = self

        def counting(client: Any, operation: str, params: Any) -> Any:
            counter.calls[(client.meta.service_model.service_name, operation)] += 1
            return counter._original(client, operation, params)

        BaseClient._make_api_call = counting
        return self

    def __exit__(self, *exc: object) -> None:
        from botocore.client import BaseClient

        BaseClient._make_api_call = self._original

    def total(self, service: str) -> int:
        return sum(n for (svc, _), n in self.calls.items() if svc == service)

    def ops(self, service: str) -> dict[str, int]:
        return {op: n for (svc, op), n in self.calls.items() if svc == service}


@contextmanager
def _moto_with_per_partition_costs() -> Iterator[list[str]]:
    """Make moto's per-call cost independent of the table size, for this bench only.

    Two moto emulation costs grow with the number of items in a table, which DynamoDB's do not:
    a base-table Query sorts EVERY item of the table before filtering on the partition key, and
    TransactWriteItems deep-copies every table it touches (its rollback snapshot). At 10,000
    projects that is ~0.5 s per Query and ~1 s per transaction: the time per project would grow
    with the number of projects for moto's sake alone. Here:

    - a base-table Query (no index) sees only its partition (same results: moto filters on the
      partition key anyway); index Queries (the dispatcher's ``ActivityIndex``) are unchanged;
    - ``copy.deepcopy`` of a moto ``Table`` returns the table itself, so there is no rollback; the
      bench therefore requires that no transaction fails: yields the failures seen (asserted empty).

    Call COUNTS are unaffected either way; only the wall time becomes representative.
    """
    import copy
    from types import SimpleNamespace

    import moto.dynamodb.models as models

    def deepcopy(obj: Any, memo: dict[int, Any] | None = None) -> Any:
        return obj if isinstance(obj, models.Table) else copy.deepcopy(obj, memo)

    failures: list[str] = []
    original = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        try:
            original(self, transact_items)
        except Exception as exc:
            failures.append(type(exc).__name__)
            raise

    original_query = models.Table.query

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
        if index_name or hash_key is None:
            return original_query(self, hash_key, *args, **kwargs)
        everything = self.items
        self.items = {hash_key: everything[hash_key]} if hash_key in everything else {}
        try:
            return original_query(self, hash_key, *args, **kwargs)
        finally:
            self.items = everything

    # moto's module and methods patched for the run, put back below
    models.copy = SimpleNamespace(deepcopy=deepcopy, copy=copy.copy)  # type: ignore[assignment]  # patched
    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]  # patched
    models.Table.query = query  # type: ignore[method-assign]  # patched for the run
    try:
        yield failures
    finally:
        models.copy = copy
        models.DynamoDBBackend.transact_write_items = original  # type: ignore[method-assign]  # put back
        models.Table.query = original_query  # type: ignore[method-assign]  # put back


def _env() -> None:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1", "POWERTOOLS_TRACE_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_METRICS_NAMESPACE": "AgentMemoryBench", "LLM_PROVIDER": "offline",
    }.items():
        os.environ.setdefault(key, value)
    os.environ.pop("AWS_ENDPOINT_URL", None)


def _seed(n_projects: int) -> list[str]:
    """Projects, activity markers and flow logs (see the module docstring); returns the active ids."""
    from agent_memory.adapters.dynamo.conversation_tables import FlowLogItem
    from agent_memory.adapters.dynamo.keys import flow_log_keys
    from agent_memory.adapters.dynamo.tables import ActivityItem, ProjectItem

    created = datetime(2025, 1, 1, tzinfo=UTC)
    old_day = (RUN_DATE - timedelta(days=60)).isoformat()
    week = [RUN_DATE - timedelta(days=7 - i) for i in range(7)]
    step = round(1 / ACTIVE_SHARE)
    active = [f"p{i:05d}" for i in range(0, n_projects, step)]
    with ProjectItem.batch_write() as batch:
        for i in range(n_projects):
            pid = f"p{i:05d}"
            batch.save(ProjectItem(pid, "PROJECT", name=pid, time_zone=TZ, created_at=created))
            batch.save(ActivityItem(pid, f"ACTIVE#{old_day}", activity_pk=f"ACTIVE#{old_day}", activity_sk=pid,
                                    last_at=created))
    with ActivityItem.batch_write() as batch:
        for pid in active:
            for day in week:
                batch.save(ActivityItem(pid, f"ACTIVE#{day}", activity_pk=f"ACTIVE#{day}", activity_sk=pid,
                                        last_at=NOW))
    with FlowLogItem.batch_write() as batch:
        for pid in active:
            for day in (week[2], week[6]):  # Wednesday and Sunday (the day distilled)
                for k, (role, content) in enumerate(MESSAGES):
                    at = datetime(day.year, day.month, day.day, 2, 0, tzinfo=UTC) + timedelta(minutes=k)
                    message_id = f"m-{pid}-{day:%m%d}-{k}"
                    pk, sk = flow_log_keys(pid, at, message_id)
                    batch.save(FlowLogItem(pk, sk, project_id=pid, session_id="s1", message_id=message_id, role=role,
                                           content=content, user_id="u-pi" if role == "user" else None, at=at))
    return active


def _measure(n_projects: int) -> dict[str, dict[str, float]]:
    """One scheduled run of each job over ``n_projects`` (fresh moto); per-job figures."""
    import boto3
    from moto import mock_aws

    from agent_memory.adapters.dynamo.activity import ActivityRepository
    from agent_memory.adapters.dynamo.tables import bind_tables
    from agent_memory.adapters.sqs import SqsJobQueue
    from agent_memory.config import Settings
    from agent_memory.domain.jobs import JobRequest, ScheduleInput
    from agent_memory.events.jobs import run_scheduled
    from agent_memory.jobs.fanout import dispatch
    from agent_memory.observability import metrics
    from agent_memory.wiring import build_job_deps
    from infra.template_model import create_queues, create_tables, load_template
    from tests.fakes import InMemoryNotifier

    out: dict[str, dict[str, float]] = {}
    with mock_aws(), _moto_with_per_partition_costs() as failed_transactions:
        template = load_template()
        names = create_tables(boto3.client("dynamodb"), template)
        sqs = boto3.client("sqs")
        queue_url = create_queues(sqs, template)["JobQueue"].ref
        bind_tables(memory_table=names["MemoryTable"], sessions_table=names["SessionsTable"],
                    flow_log_table=names["FlowLogTable"])
        active = _seed(n_projects)
        settings = Settings.model_validate({
            "FLOW_LOG_TABLE": names["FlowLogTable"],
            "MEMORY_TABLE": names["MemoryTable"],
            "SESSIONS_TABLE": names["SessionsTable"],
            "LLM_PROVIDER": "offline",
        })
        deps = build_job_deps(settings, notifier=InMemoryNotifier())
        deps.clock = lambda: NOW
        activity, queue = ActivityRepository(), SqsJobQueue(queue_url, client=sqs)
        for job in JOBS:
            started = time.perf_counter()
            # The jobs' business metrics are emitted as in Lambda (Powertools flushes a metric once it
            # holds 100 values), into a sink: the bench prints its own table, not the EMF documents.
            with ApiCalls() as calls, open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
                report = dispatch(ScheduleInput(job=job, date=RUN_DATE, time_zone=TZ),
                                  activity=activity, sender=queue, clock=lambda: NOW)
                dispatch_ddb = calls.total("dynamodb")
                processed = 0
                while messages := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages"):
                    for m in messages:
                        run_scheduled(deps, JobRequest.model_validate_json(m["Body"]))
                        processed += 1
                    sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
                        {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])
            elapsed = time.perf_counter() - started
            metrics.clear_metrics()  # what is left of them: not flushed
            assert processed == report.enqueued == len(active), (job, processed, report.enqueued, len(active))
            assert "Scan" not in calls.ops("dynamodb")
            assert failed_transactions == [], failed_transactions
            ddb = calls.total("dynamodb")
            out[job] = {
                "projects": float(processed),
                "ddb_per_project": ddb / processed,
                "dispatch_ddb": float(dispatch_ddb),
                "sqs_per_project": calls.total("sqs") / processed,
                "ms_per_project": elapsed * 1000 / processed,
            }
    return out


def run() -> dict[str, float]:
    """Measure both sizes, print the table, return the worst 10k/1k ratio of DynamoDB calls per project."""
    _env()
    by_size = {n: _measure(n) for n in SIZES}
    small, large = by_size[SIZES[0]], by_size[SIZES[1]]
    print(f"\n{'job':8} {'projects':>9} {'active':>7} {'ddb calls/project':>18} {'(dispatch)':>11} "
          f"{'sqs calls/project':>18} {'ms/project':>11}")
    for job in JOBS:
        for n in SIZES:
            f = by_size[n][job]
            print(f"{job:8} {n:>9} {int(f['projects']):>7} {f['ddb_per_project']:>18.3f} {int(f['dispatch_ddb']):>11} "
                  f"{f['sqs_per_project']:>18.3f} {f['ms_per_project']:>11.2f}")
    ratios = {job: large[job]["ddb_per_project"] / small[job]["ddb_per_project"] for job in JOBS}
    worst = max(ratios, key=lambda j: ratios[j])
    print("ddb calls per project, 10k / 1k: " + ", ".join(f"{j} {r:.3f}" for j, r in ratios.items())
          + f" (worst: {worst})")
    return {"jobs_calls_per_project_ratio_10k_vs_1k": round(ratios[worst], 3)}


if __name__ == "__main__":
    print(run())
