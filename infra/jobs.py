"""``python -m infra.jobs`` (``make job``): run the background jobs by hand, locally or in AWS.

Commands::

    run      --job distill|archive|prune --project ID --date YYYY-MM-DD [--aws]
    dispatch --job distill|archive|prune [--date YYYY-MM-DD] [--project ID] [--aws]

``run`` is the backfill of one project. ``--date`` names the PERIOD: distill the local day DATE,
archive the ISO week CONTAINING DATE, prune as of DATE. (A scheduled run processes the period
before its run date: distill yesterday, archive the previous week; the request sent here carries
the run date that makes the job process DATE, ``agent_memory.jobs.calendar.run_date_for``.)

- locally (default): the JobWorkerFunction handler runs in this process with the SQS event Lambda
  would send for that one ``JobRequest``, against the running ``make run`` stack;
  the jobs offered are the scheduled jobs of the worker's job table (``agent_memory.events.jobs``);
- ``--aws``: the ``JobRequest`` is sent to the deployed JobQueue (URL from the CloudFormation
  stack's outputs); the deployed worker runs it.

``dispatch`` is a scheduled run. ``--date`` is the RUN date (the local date the schedule fires on;
default today in the project time zone), so ``dispatch --job distill --date 2026-03-11`` distils
2026-03-10 for every project active that day.

- locally: the JobDispatcherFunction handler gets exactly the ``Input`` payload the template's
  schedule sends (read from ``template.yaml``; ``date`` / ``project_id`` added when given), then
  the queue's messages are delivered to the worker handler batch by batch, as Lambda's SQS event
  source mapping does (partial batch failures go back to the queue, then to the DLQ);
- ``--aws``: the deployed dispatcher is invoked asynchronously with that payload.

Which local stack: ``--endpoint`` / ``$LOCAL_ENDPOINT`` (the moto URL of a stack started with a
fixed ``MOTO_PORT``; names are the template's logical ids, as the local stack creates them), else
``.local/stack.json``, which ``make run`` writes while it runs. Tests never need AWS: the AWS
paths only run with ``--aws``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib
from collections.abc import Callable, Mapping
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infra.local.events import LocalLambdaContext
from infra.local.sqs_events import Delivery, deliver, sqs_event, sqs_record
from infra.template_model import (
    REPO_ROOT,
    FunctionSpec,
    LocalResource,
    create_queues,
    create_topics,
    function_specs,
    load_template,
    queue_event_specs,
    schedule_specs,
    table_specs,
)

if TYPE_CHECKING:
    from infra.local.stack import LocalStack

LAYER_PATH = REPO_ROOT / "layers" / "shared"
#: Written by ``make run`` (``infra.local.server``); ``LOCAL_STACK_FILE`` overrides it.
STACK_FILE = Path(os.environ.get("LOCAL_STACK_FILE") or REPO_ROOT / ".local" / "stack.json")
DISPATCHER = "JobDispatcherFunction"
WORKER = "JobWorkerFunction"
QUEUE = "JobQueue"
_DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "local"}


class JobsCliError(RuntimeError):
    """The command cannot run as asked (the message says what to do)."""


def schedule_input(job: str, template: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``Input`` payload of ``job``'s schedule in ``template.yaml`` (what Scheduler sends)."""
    for spec in schedule_specs(template if template is not None else load_template()):
        if spec.function == DISPATCHER:
            payload = json.loads(spec.input)
            if payload.get("job") == job:
                return dict(payload)
    raise JobsCliError(f"template.yaml has no {DISPATCHER} schedule with job {job!r}")


def job_request(job: str, project_id: str, target: date) -> dict[str, Any]:
    """The ``JobRequest`` (as JSON data) that makes ``job`` process the period named by ``target``."""
    _layer_on_path()
    from pydantic import TypeAdapter

    from agent_memory.domain.jobs import JobName, JobRequest
    from agent_memory.jobs.calendar import run_date_for

    name = TypeAdapter(JobName).validate_python(job)  # one of the scheduled jobs (raises otherwise)
    request = JobRequest(job=name, project_id=project_id, date=run_date_for(name, target))
    return request.model_dump(mode="json", exclude_none=True)


def _layer_on_path() -> None:
    if str(LAYER_PATH) not in sys.path:
        sys.path.insert(0, str(LAYER_PATH))


def scheduled_jobs() -> tuple[str, ...]:
    """The jobs ``run`` and ``dispatch`` offer: the scheduled jobs of the worker's job table
    (``agent_memory.events.jobs.JOB_TABLE``)."""
    _layer_on_path()
    from agent_memory.events.jobs import scheduled_jobs as table_jobs

    return table_jobs()


# ------------------------------------------------------------------------------------------ local
class LocalJobs:
    """Runs the job functions' handlers against a local stack (moto SQS between them)."""

    def __init__(
        self,
        *,
        invoke: Callable[[str, dict[str, Any]], Any],
        sqs: Any,
        resources: Mapping[str, LocalResource],
        template: Mapping[str, Any] | None = None,
    ) -> None:
        self._invoke = invoke
        self._sqs = sqs
        self._resources = dict(resources)
        self._template = template if template is not None else load_template()
        events = [e for e in queue_event_specs(self._template) if e.function == WORKER]
        if not events:
            raise JobsCliError(f"template.yaml gives {WORKER} no SQS event")
        self._batch_size = events[0].batch_size

    @classmethod
    def for_stack(cls, stack: LocalStack) -> LocalJobs:
        """On a :class:`LocalStack` of this process (tests, demo): its handlers, its moto."""
        return cls(invoke=stack.invoke, sqs=stack.aws_client("sqs"), resources=stack.resources)

    @classmethod
    def attach(cls, description: Mapping[str, Any]) -> LocalJobs:
        """On a stack running in another process (``make run``), from its description
        (``LocalStack.describe()``): this process takes the functions' environment and imports
        the two job handlers."""
        import boto3

        os.environ.update(description["env"])
        for name in ("ANTHROPIC_API_KEY", "AWS_PROFILE", "AWS_DEFAULT_PROFILE"):
            os.environ.pop(name, None)
        _layer_on_path()
        template = load_template()
        tables = dict(description["table_names"])
        resources = {k: LocalResource(logical_id=k, **v) for k, v in description["resources"].items()}
        specs = {s.logical_id: s for s in function_specs(template, tables, description["env"], resources)}
        handlers = {name: _import_handler(specs[name]) for name in (DISPATCHER, WORKER)}

        def invoke(function: str, event: dict[str, Any]) -> Any:
            spec = specs[function]
            return handlers[function](event, LocalLambdaContext(function, spec.timeout_s, spec.memory_mb))

        sqs = boto3.client("sqs", endpoint_url=description["moto_url"], region_name=description["region"],
                           **{k.lower(): v for k, v in _DUMMY_CREDENTIALS.items()})
        return cls(invoke=invoke, sqs=sqs, resources=resources, template=template)

    # ----------------------------------------------------------------------------- commands
    def run(self, job: str, project_id: str, target: date) -> dict[str, Any]:
        """Backfill: one ``JobRequest`` to the worker handler in an SQS event; returns the
        request and the worker's partial batch response."""
        request = job_request(job, project_id, target)
        queue = self._resources[QUEUE]
        body = json.dumps(request)
        key = f"{job}#{project_id}#{request['date']}"
        record = sqs_record(
            body,
            queue_arn=queue.arn,
            message_attributes={
                "job": {"DataType": "String", "StringValue": job},
                "job_key": {"DataType": "String", "StringValue": key},
            },
        )
        response = self._invoke(WORKER, sqs_event([record]))
        return {"request": request, "response": response}

    def dispatch(self, job: str, run_date: date | None = None, project_id: str | None = None) -> dict[str, Any]:
        """A scheduled run: the dispatcher with the schedule's Input, then the queue delivered to
        the worker. Returns the payload, the dispatch report and the delivery counts."""
        payload = schedule_input(job, self._template)
        if run_date is not None:
            payload["date"] = run_date.isoformat()
        if project_id is not None:
            payload["project_id"] = project_id
        report = self._invoke(DISPATCHER, payload)
        delivery = self.deliver()
        return {"payload": payload, "dispatch": report, "delivery": delivery.__dict__}

    def deliver(self) -> Delivery:
        """Deliver the job queue's messages to the worker until the queue is empty."""
        queue = self._resources[QUEUE]
        return deliver(self._sqs, queue.ref, queue.arn, lambda event: self._invoke(WORKER, event),
                       batch_size=self._batch_size)

    def dead_letters(self) -> int:
        """Messages waiting in the job DLQ (approximate, as SQS reports it)."""
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self._resources["JobDLQ"].ref, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])


def _import_handler(spec: FunctionSpec) -> Callable[[dict[str, Any], Any], Any]:
    from infra.local.functions import load_handler_module

    try:
        module = load_handler_module(spec, f"local_fn_{spec.logical_id}")
    except ImportError as exc:
        raise JobsCliError(str(exc)) from None
    handler: Callable[[dict[str, Any], Any], Any] = getattr(module, spec.handler.rpartition(".")[2])
    return handler


def local_description(endpoint: str | None = None, stack_file: Path = STACK_FILE) -> dict[str, Any]:
    """How to reach the running local stack: from ``endpoint`` (its moto URL) or ``stack_file``.

    Raises:
        JobsCliError: neither is available (start ``make run`` first).
    """
    if endpoint:
        return _description_from_endpoint(endpoint.rstrip("/"))
    try:
        description = dict(json.loads(stack_file.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise JobsCliError(
            f"no running local stack: {stack_file} is missing. Start it with `make run` "
            "(or pass --endpoint / LOCAL_ENDPOINT = the moto URL of a stack started with MOTO_PORT)"
        ) from None
    pid = int(description.get("pid") or 0)
    if pid and not _alive(pid):
        raise JobsCliError(f"{stack_file} is stale (its server, pid {pid}, is gone). Start `make run` again")
    return description


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _description_from_endpoint(endpoint: str) -> dict[str, Any]:
    """The description of a local stack whose moto is at ``endpoint``: the local stack names
    tables, queues and topics after their logical ids (no prefix)."""
    import boto3

    template = load_template()
    region = "eu-west-1"
    tables = {spec.logical_id: spec.logical_id for spec in table_specs(template)}
    credentials = {k.lower(): v for k, v in _DUMMY_CREDENTIALS.items()}
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name=region, **credentials)
    sns = boto3.client("sns", endpoint_url=endpoint, region_name=region, **credentials)
    resources = {**create_queues(sqs, template), **create_topics(sns, template)}  # idempotent: finds them
    overrides = {"LLM_PROVIDER": os.environ.get("LLM_PROVIDER", "offline"), "POWERTOOLS_TRACE_DISABLED": "true"}
    env: dict[str, str] = {}
    for spec in function_specs(template, tables, overrides, resources):
        env.update(spec.environment)
    env.update({**_DUMMY_CREDENTIALS, "AWS_ENDPOINT_URL": endpoint, "AWS_REGION": region, "AWS_DEFAULT_REGION": region})
    return {
        "moto_url": endpoint,
        "region": region,
        "table_names": tables,
        "resources": {k: {"type": r.type, "ref": r.ref, "arn": r.arn, "name": r.name} for k, r in resources.items()},
        "env": env,
    }


# -------------------------------------------------------------------------------------------- aws
def stack_name_for(stage: str) -> str:
    """The CloudFormation stack of ``stage`` in ``samconfig.toml``."""
    config = tomllib.loads((REPO_ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    try:
        return str(config[stage]["deploy"]["parameters"]["stack_name"])
    except KeyError:
        raise JobsCliError(f"samconfig.toml has no [{stage}.deploy.parameters] stack_name") from None


def stack_outputs(cloudformation: Any, stack_name: str) -> tuple[dict[str, str], dict[str, str]]:
    """``(outputs, parameters)`` of a deployed stack."""
    stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    parameters = {p["ParameterKey"]: p.get("ParameterValue", "") for p in stack.get("Parameters", [])}
    return outputs, parameters


def aws_run(session: Any, stack_name: str, job: str, project_id: str, target: date) -> dict[str, Any]:
    """Send the backfill ``JobRequest`` to the deployed JobQueue."""
    outputs, _ = stack_outputs(session.client("cloudformation"), stack_name)
    request = job_request(job, project_id, target)
    sent = session.client("sqs").send_message(
        QueueUrl=outputs["JobQueueUrl"],
        MessageBody=json.dumps(request),
        MessageAttributes={
            "job": {"DataType": "String", "StringValue": job},
            "job_key": {"DataType": "String", "StringValue": f"{job}#{project_id}#{request['date']}"},
        },
    )
    return {"request": request, "message_id": sent["MessageId"], "queue_url": outputs["JobQueueUrl"]}


def aws_dispatch(
    session: Any, stack_name: str, job: str, run_date: date | None, project_id: str | None
) -> dict[str, Any]:
    """Invoke the deployed dispatcher asynchronously with the schedule's payload (the stack's time zone)."""
    outputs, parameters = stack_outputs(session.client("cloudformation"), stack_name)
    payload = schedule_input(job)
    if parameters.get("ProjectTimeZone"):
        payload["time_zone"] = parameters["ProjectTimeZone"]
    if run_date is not None:
        payload["date"] = run_date.isoformat()
    if project_id is not None:
        payload["project_id"] = project_id
    response = session.client("lambda").invoke(
        FunctionName=outputs["JobDispatcherFunctionName"], InvocationType="Event", Payload=json.dumps(payload).encode()
    )
    return {"payload": payload, "status": response["StatusCode"]}


# -------------------------------------------------------------------------------------------- cli
def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    jobs = scheduled_jobs()
    parser = argparse.ArgumentParser(prog="python -m infra.jobs", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="backfill: run a job for one project and a date (the period it names)")
    run.add_argument("--job", choices=jobs, required=True)
    run.add_argument("--project", required=True)
    run.add_argument("--date", type=date.fromisoformat, required=True,
                     help="distill: that local day; archive: the ISO week containing it; prune: as of it")
    dispatch = sub.add_parser("dispatch", help="a scheduled run (the schedule's Input payload), then the worker")
    dispatch.add_argument("--job", choices=jobs, required=True)
    dispatch.add_argument("--date", type=date.fromisoformat, default=None,
                          help="the RUN date (local); default: today in the project time zone")
    dispatch.add_argument("--project", default=None, help="only this project (a backfill through the dispatcher)")
    for p in (run, dispatch):
        p.add_argument("--aws", action="store_true", help="the deployed stack instead of the local one")
        p.add_argument("--stage", default=os.environ.get("STAGE", "dev"), help="samconfig.toml stage (with --aws)")
        p.add_argument("--stack-name", default=None, help="CloudFormation stack (with --aws; default from samconfig)")
        p.add_argument("--region", default=os.environ.get("AWS_REGION"), help="AWS region (with --aws)")
        p.add_argument("--endpoint", default=os.environ.get("LOCAL_ENDPOINT"),
                       help="moto URL of the local stack (default: .local/stack.json of `make run`)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    try:
        if args.aws:
            import boto3

            session = boto3.Session(region_name=args.region)
            stack_name = args.stack_name or stack_name_for(args.stage)
            if args.command == "run":
                result = aws_run(session, stack_name, args.job, args.project, args.date)
            else:
                result = aws_dispatch(session, stack_name, args.job, args.date, args.project)
        else:
            jobs = LocalJobs.attach(local_description(args.endpoint))
            if args.command == "run":
                result = jobs.run(args.job, args.project, args.date)
            else:
                result = jobs.dispatch(args.job, args.date, args.project)
            result["dead_letters"] = jobs.dead_letters()
    except JobsCliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    failures = (result.get("response") or {}).get("batchItemFailures") or []
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
