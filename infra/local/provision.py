"""What the local stack puts into its AWS (moto) before it serves: the template's tables, queues,
topic and schedule group (through :mod:`infra.template_model`); secrets as the functions read them
in AWS (the Anthropic key; the demo REDCap token of the local REDCap server, started on a new port at
every start); the demo projects on a first start, or on a restart (the stored data is the truth)
demo-iit pointed at the new REDCap port and the patients' diagnosis references backfilled.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime
from typing import Any

from infra.template_model import LocalResource, create_queues, create_schedule_groups, create_tables, create_topics

#: demo-iit's REDCap token secret (under the template's ClinicalTokenSecretPrefix).
DEMO_REDCAP_SECRET = "agent-memory/redcap/demo-iit"

log = logging.getLogger("infra.local")


def create_resources(aws_client: Any, template: Any) -> tuple[dict[str, str], dict[str, LocalResource], bool]:
    """Create what the template declares; (table names, queues and topics, by logical id; whether the
    memory table held data: a restart). ``make job`` delivers the job queue; the reminder clock fires
    the schedules."""
    dynamodb = aws_client("dynamodb")
    table_names = create_tables(dynamodb, template)
    restarted = bool(dynamodb.scan(TableName=table_names["MemoryTable"], Limit=1)["Items"])
    resources = {**create_queues(aws_client("sqs"), template), **create_topics(aws_client("sns"), template)}
    create_schedule_groups(aws_client("scheduler"), template)
    return table_names, resources, restarted


def put_secret(secrets: Any, name: str, value: str) -> None:
    """Create or update the secret ``name`` (``secrets``: a boto3 Secrets Manager client)."""
    try:
        secrets.create_secret(Name=name, SecretString=value)
    except secrets.exceptions.ResourceExistsException:
        secrets.put_secret_value(SecretId=name, SecretString=value)


def start_demo_redcap(secrets: Any) -> tuple[Any, Any]:
    """Start the local REDCap server with the demo project (port ``REDCAP_PORT``, default a free
    one) and store its token; (the server, demo-iit's ``ClinicalDataSource``)."""
    from agent_memory.domain.models import ClinicalDataSource
    from infra.local.demo.redcap_project import DEMO_TOKEN
    from infra.local.redcap_server import demo_server

    server = demo_server(port=int(os.environ.get("REDCAP_PORT") or 0)).start()
    put_secret(secrets, DEMO_REDCAP_SECRET, DEMO_TOKEN)
    return server, ClinicalDataSource(source="redcap", api_url=server.api_url, token_secret=DEMO_REDCAP_SECRET)


def demo_redcap_info(server: Any) -> dict[str, str]:
    """The local REDCap server's API URL, demo-iit's demo token and its secret's name."""
    from infra.local.demo.redcap_project import DEMO_TOKEN
    return {"api_url": server.api_url, "token": DEMO_TOKEN, "token_secret": DEMO_REDCAP_SECRET}


def seed(repo: Any, members: Any, clinical_data: Any, *, now: datetime, restarted: bool) -> None:
    """The demo projects on a first start (``repo``: a ``ProjectRepository``); on a restart, demo-iit
    pointed at the new REDCap server while it still reads the demo secret (a project an admin
    pointed elsewhere, or removed, stays)."""
    from agent_memory.domain.errors import ProjectNotFound
    from infra.local.demo.hot_memory import DEMO_IIT_PROJECT_ID
    from infra.local.demo.seed import seed_demo

    if not restarted:
        seed_demo(repo, now=now, clinical_data=clinical_data, members=members)
        return
    try:
        project = repo.get_project(DEMO_IIT_PROJECT_ID)
    except ProjectNotFound:
        return
    current = project.clinical_data
    if current is not None and current.token_secret == clinical_data.token_secret and current != clinical_data:
        repo.put_project(project.model_copy(update={"clinical_data": clinical_data}))


def backfill_patient_refs(dynamodb: Any, memory_table: str, *, now: datetime) -> None:
    """Every project stored before the patients' diagnosis references existed gets them
    (``PatientRefsRepository.backfill_patient_refs``: its patient turns then read them in the turn's
    one BatchGetItem); marked projects are skipped, one being erased waits for the next start."""
    from agent_memory.adapters.dynamo.patient_refs_upkeep import PatientRefsRepository
    from agent_memory.domain.errors import VersionConflict

    repo = PatientRefsRepository()
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=memory_table, ProjectionExpression="pk",
        FilterExpression="sk = :p AND attribute_not_exists(patient_refs_since)",
        ExpressionAttributeValues={":p": {"S": "PROJECT"}},
    ):
        for raw in page["Items"]:
            try:
                repo.backfill_patient_refs(raw["pk"]["S"], now=now)
            except VersionConflict:
                log.warning("patient references of %s not backfilled", raw["pk"]["S"])
