"""The one reader of ``template.yaml`` for the local runtime and the tests.

``template.yaml`` is the single source of truth for the tables (keys, indexes, TTL), the functions
(code folder, handler, timeout, memory, environment) and the HTTP routes. The local stack and the
tests build their world from this module instead of repeating any of it.

Only what a local run needs is resolved: ``Ref`` to a parameter (its ``Default``), to a table
(its local name), to a queue (its URL) or a topic (its ARN), a few pseudo parameters, ``Fn::Sub``,
``Fn::GetAtt <table>.Arn`` / ``<queue>.Arn`` / ``<queue>.QueueName``, ``Fn::If`` over the
template's conditions. Anything else raises :class:`UnresolvableValue` naming the value.

Queues and topics (the job fan-out, the admin alerts) resolve to the names the local stack gives
them (:func:`create_queues`, :func:`create_topics`: the logical id, plus a prefix) or, when none
were created, to placeholders of the same shape (so the template can be read without moto).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TEMPLATE_PATH = REPO_ROOT / "template.yaml"

TABLE_TYPE = "AWS::DynamoDB::Table"
FUNCTION_TYPE = "AWS::Serverless::Function"
HTTP_API_TYPE = "AWS::Serverless::HttpApi"
QUEUE_TYPE = "AWS::SQS::Queue"
TOPIC_TYPE = "AWS::SNS::Topic"
SCHEDULE_EVENT_TYPE = "ScheduleV2"
SQS_EVENT_TYPE = "SQS"

# Stand-ins for the pseudo parameters when the template is read outside CloudFormation.
LOCAL_PSEUDO_PARAMETERS: dict[str, str] = {
    "AWS::Region": "eu-west-1",
    "AWS::AccountId": "123456789012",
    "AWS::Partition": "aws",
    "AWS::StackName": "agent-memory-local",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::NoValue": "",
}


class UnresolvableValue(ValueError):
    """A template value that cannot be turned into a local string (names the value)."""


# ---------------------------------------------------------------------------------------------- YAML


class CloudFormationLoader(yaml.SafeLoader):
    """SafeLoader that accepts the CloudFormation short-form tags (``!Ref``, ``!Sub``, ...).

    Each tag becomes its long form: ``!Ref X`` -> ``{"Ref": "X"}``, ``!GetAtt A.B`` ->
    ``{"Fn::GetAtt": ["A", "B"]}``, ``!Condition C`` -> ``{"Condition": "C"}``, and any other
    ``!Name v`` -> ``{"Fn::Name": v}``.
    """


def _construct_short_form(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    elif isinstance(node, yaml.MappingNode):
        value = loader.construct_mapping(node, deep=True)
    else:  # pragma: no cover - yaml has only these three node kinds
        raise yaml.constructor.ConstructorError(None, None, f"unexpected node for !{tag_suffix}", node.start_mark)
    if tag_suffix in ("Ref", "Condition"):
        return {tag_suffix: value}
    if tag_suffix == "GetAtt" and isinstance(value, str):
        logical_id, _, attribute = value.partition(".")
        value = [logical_id, attribute]
    return {f"Fn::{tag_suffix}": value}


CloudFormationLoader.add_multi_constructor("!", _construct_short_form)


def load_template(path: Path | None = None) -> dict[str, Any]:
    """Parse ``template.yaml`` (default: the repository's) into plain dicts with long-form intrinsics."""
    template_path = path if path is not None else DEFAULT_TEMPLATE_PATH
    with template_path.open(encoding="utf-8") as handle:
        document = yaml.load(handle, Loader=CloudFormationLoader)  # noqa: S506 - SafeLoader subclass
    if not isinstance(document, dict) or "Resources" not in document:
        raise ValueError(f"{template_path} is not a CloudFormation template (no Resources)")
    return document


def resources_of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    """``{logical_id: resource}`` for every resource of ``resource_type``, in template order."""
    return {
        logical_id: resource
        for logical_id, resource in template.get("Resources", {}).items()
        if resource.get("Type") == resource_type
    }


def parameter_defaults(template: Mapping[str, Any]) -> dict[str, str]:
    """``{parameter: str(Default)}`` for every parameter that has a default."""
    defaults: dict[str, str] = {}
    for name, parameter in (template.get("Parameters") or {}).items():
        if "Default" in parameter:
            defaults[name] = _scalar_to_str(parameter["Default"])
    return defaults


# -------------------------------------------------------------------------------------------- tables


@dataclass
class TableSpec:
    """A table as boto3 ``create_table`` kwargs, plus its TTL attribute (None if no TTL)."""

    logical_id: str
    create_kwargs: dict[str, Any]
    ttl_attribute: str | None


def table_specs(template: Mapping[str, Any], name_prefix: str = "") -> list[TableSpec]:
    """Every ``AWS::DynamoDB::Table`` as ``create_table`` kwargs; ``TableName`` = prefix + logical id."""
    specs: list[TableSpec] = []
    for logical_id, resource in resources_of_type(template, TABLE_TYPE).items():
        props = resource.get("Properties", {})
        kwargs: dict[str, Any] = {
            "TableName": f"{name_prefix}{logical_id}",
            "KeySchema": [dict(key) for key in props["KeySchema"]],
            "AttributeDefinitions": [dict(attribute) for attribute in props["AttributeDefinitions"]],
            "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
        }
        indexes = props.get("GlobalSecondaryIndexes") or []
        if indexes:
            kwargs["GlobalSecondaryIndexes"] = [
                {
                    "IndexName": index["IndexName"],
                    "KeySchema": [dict(key) for key in index["KeySchema"]],
                    "Projection": dict(index["Projection"]),
                }
                for index in indexes
            ]
        ttl = props.get("TimeToLiveSpecification") or {}
        ttl_attribute = ttl.get("AttributeName") if ttl.get("Enabled") is True else None
        specs.append(TableSpec(logical_id=logical_id, create_kwargs=kwargs, ttl_attribute=ttl_attribute))
    return specs


def create_tables(dynamodb_client: Any, template: Mapping[str, Any], name_prefix: str = "") -> dict[str, str]:
    """Create every table of the template (and its TTL); return ``{logical_id: table_name}``.

    A table that already exists (e.g. a restarted local server) is left as it is.
    """
    names: dict[str, str] = {}
    for spec in table_specs(template, name_prefix):
        table_name = spec.create_kwargs["TableName"]
        try:
            dynamodb_client.create_table(**spec.create_kwargs)
        except dynamodb_client.exceptions.ResourceInUseException:
            names[spec.logical_id] = table_name
            continue
        dynamodb_client.get_waiter("table_exists").wait(
            TableName=table_name, WaiterConfig={"Delay": 1, "MaxAttempts": 60}
        )
        if spec.ttl_attribute:
            dynamodb_client.update_time_to_live(
                TableName=table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
            )
        names[spec.logical_id] = table_name
    return names


# ------------------------------------------------------------------------------- queues and topics


@dataclass(frozen=True)
class LocalResource:
    """A queue or topic as the functions see it: ``ref`` (``!Ref``: queue URL / topic ARN),
    ``arn`` and ``name`` (``QueueName`` / ``TopicName``)."""

    logical_id: str
    type: str
    ref: str
    arn: str
    name: str


def placeholder_resources(template: Mapping[str, Any], name_prefix: str = "") -> dict[str, LocalResource]:
    """Every queue and topic of the template with the URL / ARN it would have in the local
    account (:data:`LOCAL_PSEUDO_PARAMETERS`), named ``prefix + logical id``; nothing is created."""
    region = LOCAL_PSEUDO_PARAMETERS["AWS::Region"]
    account = LOCAL_PSEUDO_PARAMETERS["AWS::AccountId"]
    out: dict[str, LocalResource] = {}
    for logical_id, queue in resources_of_type(template, QUEUE_TYPE).items():
        name = queue_name(logical_id, queue, name_prefix)
        out[logical_id] = LocalResource(
            logical_id, QUEUE_TYPE, f"https://sqs.{region}.amazonaws.com/{account}/{name}",
            f"arn:aws:sqs:{region}:{account}:{name}", name,
        )
    for logical_id in resources_of_type(template, TOPIC_TYPE):
        name = f"{name_prefix}{logical_id}"
        arn = f"arn:aws:sns:{region}:{account}:{name}"
        out[logical_id] = LocalResource(logical_id, TOPIC_TYPE, arn, arn, name)
    return out


def is_fifo(queue: Mapping[str, Any]) -> bool:
    """Whether the ``AWS::SQS::Queue`` resource is a FIFO queue (``FifoQueue: true``)."""
    return str((queue.get("Properties") or {}).get("FifoQueue", "")).lower() == "true"


def queue_name(logical_id: str, queue: Mapping[str, Any], name_prefix: str = "") -> str:
    """The local name of a queue: ``prefix + logical id``, with the ``.fifo`` suffix SQS requires of
    a FIFO queue's name (CloudFormation adds it to the names it generates)."""
    return f"{name_prefix}{logical_id}" + (".fifo" if is_fifo(queue) else "")


def create_queues(sqs_client: Any, template: Mapping[str, Any], name_prefix: str = "") -> dict[str, LocalResource]:
    """Create every ``AWS::SQS::Queue`` (dead-letter targets first) with its visibility timeout,
    retention, redrive policy and FIFO attributes; return ``{logical_id: LocalResource}``. Idempotent."""
    queues = resources_of_type(template, QUEUE_TYPE)
    created: dict[str, LocalResource] = {}

    def create(logical_id: str) -> None:
        if logical_id in created:
            return
        props = queues[logical_id].get("Properties") or {}
        attributes: dict[str, str] = {}
        for key in ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds",
                    "FifoQueue", "ContentBasedDeduplication"):
            if key in props:
                attributes[key] = _scalar_to_str(props[key])
        redrive = props.get("RedrivePolicy")
        if redrive:
            target = redrive["deadLetterTargetArn"]
            if not (isinstance(target, dict) and "Fn::GetAtt" in target and target["Fn::GetAtt"][0] in queues):
                raise UnresolvableValue(
                    f"{logical_id}.RedrivePolicy: dead-letter target {target!r} is not a queue here"
                )
            create(target["Fn::GetAtt"][0])
            attributes["RedrivePolicy"] = json.dumps({
                "deadLetterTargetArn": created[target["Fn::GetAtt"][0]].arn,
                "maxReceiveCount": int(redrive["maxReceiveCount"]),
            })
        name = queue_name(logical_id, queues[logical_id], name_prefix)
        url = sqs_client.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        arn = sqs_client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        created[logical_id] = LocalResource(logical_id, QUEUE_TYPE, url, arn, name)

    for logical_id in queues:
        create(logical_id)
    return created


def create_topics(sns_client: Any, template: Mapping[str, Any], name_prefix: str = "") -> dict[str, LocalResource]:
    """Create every ``AWS::SNS::Topic``; return ``{logical_id: LocalResource}``. Idempotent."""
    out: dict[str, LocalResource] = {}
    for logical_id in resources_of_type(template, TOPIC_TYPE):
        name = f"{name_prefix}{logical_id}"
        arn = sns_client.create_topic(Name=name)["TopicArn"]
        out[logical_id] = LocalResource(logical_id, TOPIC_TYPE, arn, arn, name)
    return out


def create_schedule_groups(scheduler_client: Any, template: Mapping[str, Any]) -> list[str]:
    """Create every ``AWS::Scheduler::ScheduleGroup`` (its ``Name`` resolved; an existing one is
    kept); return their names."""
    resolver = _Resolver(template, {})
    names: list[str] = []
    # (moto answers CreateScheduleGroup for an existing name by replacing it, schedules and all,
    # where AWS answers ConflictException: a group restored from the local data is looked up first)
    existing = {g["Name"] for page in scheduler_client.get_paginator("list_schedule_groups").paginate()
                for g in page["ScheduleGroups"]}
    for logical_id, resource in resources_of_type(template, "AWS::Scheduler::ScheduleGroup").items():
        name = resolver.resolve((resource.get("Properties") or {}).get("Name", logical_id), logical_id)
        if name not in existing:
            with contextlib.suppress(scheduler_client.exceptions.ConflictException):
                scheduler_client.create_schedule_group(Name=name)
        names.append(name)
    return names


# ------------------------------------------------------------------------- schedules, queue events


@dataclass
class ScheduleSpec:
    """A ``ScheduleV2`` event of a function, with its ``Input`` resolved to the local string."""

    function: str
    event: str
    expression: str
    time_zone: str
    input: str
    retry_policy: dict[str, Any]
    dead_letter_arn: str | None


@dataclass
class QueueEventSpec:
    """An ``SQS`` event source of a function."""

    function: str
    event: str
    queue: str
    batch_size: int
    report_batch_item_failures: bool


def schedule_specs(
    template: Mapping[str, Any], resources: Mapping[str, LocalResource] | None = None
) -> list[ScheduleSpec]:
    """Every ``ScheduleV2`` event (``Input`` and time zone resolved with the parameter defaults)."""
    resolver = _Resolver(template, {}, resources)
    out: list[ScheduleSpec] = []
    for function, resource in resources_of_type(template, FUNCTION_TYPE).items():
        for event_name, event in ((resource.get("Properties") or {}).get("Events") or {}).items():
            if event.get("Type") != SCHEDULE_EVENT_TYPE:
                continue
            props = event.get("Properties") or {}
            where = f"{function}.{event_name}"
            dlq = (props.get("DeadLetterConfig") or {}).get("Arn")
            out.append(
                ScheduleSpec(
                    function=function,
                    event=event_name,
                    expression=resolver.resolve(props["ScheduleExpression"], where),
                    time_zone=resolver.resolve(props.get("ScheduleExpressionTimezone", "UTC"), where),
                    input=resolver.resolve(props.get("Input", "{}"), where),
                    retry_policy=dict(props.get("RetryPolicy") or {}),
                    dead_letter_arn=resolver.resolve(dlq, where) if dlq is not None else None,
                )
            )
    return out


def queue_event_specs(template: Mapping[str, Any]) -> list[QueueEventSpec]:
    """Every ``SQS`` event source (the queue's logical id, batch size, partial batch responses)."""
    out: list[QueueEventSpec] = []
    for function, resource in resources_of_type(template, FUNCTION_TYPE).items():
        for event_name, event in ((resource.get("Properties") or {}).get("Events") or {}).items():
            if event.get("Type") != SQS_EVENT_TYPE:
                continue
            props = event.get("Properties") or {}
            queue = props["Queue"]
            if not (isinstance(queue, dict) and "Fn::GetAtt" in queue):
                raise UnresolvableValue(f"{function}.{event_name}: Queue {queue!r} is not a GetAtt of a queue")
            out.append(
                QueueEventSpec(
                    function=function,
                    event=event_name,
                    queue=queue["Fn::GetAtt"][0],
                    batch_size=int(props.get("BatchSize", 10)),
                    report_batch_item_failures="ReportBatchItemFailures" in (props.get("FunctionResponseTypes") or []),
                )
            )
    return out


# ----------------------------------------------------------------------------------------- functions


@dataclass
class RouteSpec:
    """One HTTP API route; ``auth`` is False only where the route opts out of the authorizer."""

    method: str
    path: str
    auth: bool


@dataclass
class FunctionSpec:
    """A function with Globals merged in and its environment resolved to local strings."""

    logical_id: str
    code_uri: str
    handler: str
    timeout_s: int
    memory_mb: int
    environment: dict[str, str]
    routes: list[RouteSpec] = field(default_factory=list)


def function_specs(
    template: Mapping[str, Any],
    table_names: Mapping[str, str],
    overrides: Mapping[str, str] | None = None,
    resources: Mapping[str, LocalResource] | None = None,
) -> list[FunctionSpec]:
    """Every ``AWS::Serverless::Function`` with ``Globals.Function`` merged under its own properties.

    Environment values: ``Ref`` to a table -> ``table_names[logical_id]``; ``Ref`` to a parameter ->
    its ``Default``; ``Ref`` to a queue / topic -> its URL / ARN from ``resources`` (default:
    :func:`placeholder_resources`); literals -> ``str``. ``overrides`` (keyed by env variable name)
    win over the template and may add variables the template does not set (e.g.
    ``ANTHROPIC_BASE_URL`` locally).
    """
    resolver = _Resolver(template, table_names, resources)
    globals_function = (template.get("Globals") or {}).get("Function") or {}
    specs: list[FunctionSpec] = []
    for logical_id, resource in resources_of_type(template, FUNCTION_TYPE).items():
        props = resource.get("Properties", {})
        merged = {**globals_function, **props}
        variables = {
            **((globals_function.get("Environment") or {}).get("Variables") or {}),
            **((props.get("Environment") or {}).get("Variables") or {}),
        }
        environment = {name: resolver.resolve(value, where=f"{logical_id}.{name}") for name, value in variables.items()}
        environment.update(overrides or {})
        specs.append(
            FunctionSpec(
                logical_id=logical_id,
                code_uri=resolver.resolve(merged["CodeUri"], where=f"{logical_id}.CodeUri").rstrip("/"),
                handler=resolver.resolve(merged["Handler"], where=f"{logical_id}.Handler"),
                timeout_s=int(resolver.resolve(merged.get("Timeout", 3), where=f"{logical_id}.Timeout")),
                memory_mb=int(resolver.resolve(merged.get("MemorySize", 128), where=f"{logical_id}.MemorySize")),
                environment=environment,
                routes=_routes(template, props),
            )
        )
    return specs


def _routes(template: Mapping[str, Any], props: Mapping[str, Any]) -> list[RouteSpec]:
    routes: list[RouteSpec] = []
    for event in (props.get("Events") or {}).values():
        if event.get("Type") != "HttpApi":
            continue
        event_props = event.get("Properties") or {}
        authorizer = (event_props.get("Auth") or {}).get("Authorizer")
        if authorizer is None:
            authorizer = _default_authorizer(template, event_props.get("ApiId"))
        routes.append(
            RouteSpec(
                method=str(event_props.get("Method", "ANY")).upper(),
                path=str(event_props.get("Path", "$default")),
                auth=authorizer not in (None, "NONE"),
            )
        )
    return routes


def _default_authorizer(template: Mapping[str, Any], api_id: Any) -> str | None:
    """The DefaultAuthorizer of the event's API (an explicit HttpApi, else Globals.HttpApi)."""
    api_props: Mapping[str, Any] = {}
    if isinstance(api_id, dict) and "Ref" in api_id:
        api = template.get("Resources", {}).get(api_id["Ref"], {})
        if api.get("Type") == HTTP_API_TYPE:
            api_props = api.get("Properties") or {}
    else:
        api_props = (template.get("Globals") or {}).get("HttpApi") or {}
    authorizer = (api_props.get("Auth") or {}).get("DefaultAuthorizer")
    return str(authorizer) if authorizer is not None else None


# ------------------------------------------------------------------------------------------- resolve

_SUB_VARIABLE = re.compile(r"\$\{([^}]+)\}")


def _scalar_to_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise UnresolvableValue(f"not a scalar: {value!r}")


class _Resolver:
    """Turns template values into the strings a local run uses."""

    def __init__(
        self,
        template: Mapping[str, Any],
        table_names: Mapping[str, str],
        resources: Mapping[str, LocalResource] | None = None,
    ) -> None:
        self._template = template
        self._tables = dict(table_names)
        self._resources = dict(resources) if resources is not None else placeholder_resources(template)
        self._parameters = parameter_defaults(template)
        self._conditions: Mapping[str, Any] = template.get("Conditions") or {}

    def resolve(self, value: Any, where: str) -> str:
        if isinstance(value, bool | int | float | str):
            return _scalar_to_str(value)
        if isinstance(value, dict) and len(value) == 1:
            ((function, argument),) = value.items()
            if function == "Ref":
                return self._ref(argument, where)
            if function == "Fn::Sub":
                return self._sub(argument, where)
            if function == "Fn::GetAtt":
                return self._get_att(argument, where)
            if function == "Fn::If":
                condition, when_true, when_false = argument
                chosen = when_true if self._condition(condition, where) else when_false
                return self.resolve(chosen, where)
            if function == "Fn::Join":
                delimiter, parts = argument
                return str(delimiter).join(self.resolve(part, where) for part in parts)
        raise UnresolvableValue(f"{where}: cannot resolve {value!r} locally")

    def _ref(self, name: Any, where: str) -> str:
        if name in self._tables:
            return self._tables[name]
        if name in self._resources:
            return self._resources[name].ref
        if name in self._parameters:
            return self._parameters[name]
        if name in LOCAL_PSEUDO_PARAMETERS:
            return LOCAL_PSEUDO_PARAMETERS[name]
        resource = (self._template.get("Resources") or {}).get(name) or {}
        if resource.get("Type") == "AWS::Scheduler::ScheduleGroup":  # Ref = the group's name
            return self.resolve((resource.get("Properties") or {}).get("Name", name), where)
        raise UnresolvableValue(f"{where}: Ref {name!r} is neither a table, a queue, a topic, a parameter "
                                "with a default, nor a pseudo parameter")

    def _get_att(self, argument: Any, where: str) -> str:
        logical_id, attribute = argument
        if logical_id in self._tables and attribute == "Arn":
            region = LOCAL_PSEUDO_PARAMETERS["AWS::Region"]
            account = LOCAL_PSEUDO_PARAMETERS["AWS::AccountId"]
            return f"arn:aws:dynamodb:{region}:{account}:table/{self._tables[logical_id]}"
        if logical_id in self._resources and attribute in ("Arn", "QueueName", "TopicName"):
            resource = self._resources[logical_id]
            return resource.arn if attribute == "Arn" else resource.name
        # A function's or role's ARN in the local account (locally, schedules invoke functions by id).
        kind = ((self._template.get("Resources") or {}).get(logical_id) or {}).get("Type")
        region = LOCAL_PSEUDO_PARAMETERS["AWS::Region"]
        account = LOCAL_PSEUDO_PARAMETERS["AWS::AccountId"]
        if attribute == "Arn" and kind == FUNCTION_TYPE:
            return f"arn:aws:lambda:{region}:{account}:function:{logical_id}"
        if attribute == "Arn" and kind == "AWS::IAM::Role":
            return f"arn:aws:iam::{account}:role/{logical_id}"
        raise UnresolvableValue(f"{where}: cannot resolve GetAtt {logical_id}.{attribute} locally")

    def _sub(self, argument: Any, where: str) -> str:
        if isinstance(argument, str):
            text, variables = argument, {}
        else:
            text, variables = argument[0], argument[1]

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return self.resolve(variables[name], where)
            if "." in name:
                logical_id, _, attribute = name.partition(".")
                return self._get_att([logical_id, attribute], where)
            return self._ref(name, where)

        return _SUB_VARIABLE.sub(replace, text)

    def _condition(self, value: Any, where: str) -> bool:
        if isinstance(value, str):
            if value not in self._conditions:
                raise UnresolvableValue(f"{where}: unknown condition {value!r}")
            return self._condition(self._conditions[value], where)
        if isinstance(value, dict) and len(value) == 1:
            ((function, argument),) = value.items()
            if function == "Condition":
                return self._condition(argument, where)
            if function == "Fn::Equals":
                left, right = argument
                return self.resolve(left, where) == self.resolve(right, where)
            if function == "Fn::Not":
                return not self._condition(argument[0], where)
            if function == "Fn::And":
                return all(self._condition(item, where) for item in argument)
            if function == "Fn::Or":
                return any(self._condition(item, where) for item in argument)
        raise UnresolvableValue(f"{where}: cannot evaluate condition {value!r} locally")
