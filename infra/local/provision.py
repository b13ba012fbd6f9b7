"""What the local stack puts into its AWS (moto) before it serves: the template's tables, queues,
topic and schedule group (through :mod:`infra.template_model`); secrets as the functions read them
in AWS (the Anthropic key; demo-iit's REDCap token, stored as the admin function stores a token:
the project's own secret, bound to the local REDCap server's URL); the demo projects on a first
start, or on a restart (the stored data is the truth) demo-iit's demo token moved to the local
REDCap server's URL if its port changed, and the patients' diagnosis references backfilled.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from infra.template_model import LocalResource, create_queues, create_schedule_groups, create_tables, create_topics

#: The local REDCap server's port for ``make run`` (``REDCAP_PORT`` overrides it): fixed, so a project
#: pointed at it keeps working after a restart.
DEFAULT_REDCAP_PORT = 3001
#: The secret name demo-iit's record named before the service owned the tokens (a data directory
#: of an older version): such a record is given the project's own token at start.
LEGACY_DEMO_SECRET = "agent-memory/redcap/demo-iit"

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


def start_demo_redcap(port: int) -> Any:
    """Start the local REDCap server with the demo project on ``port`` (0: a free one).

    Raises:
        OSError: the port is taken (the message says which and how to choose another).
    """
    from infra.local.redcap_server import demo_server

    try:
        return demo_server(port=port).start()
    except OSError as exc:
        raise OSError(f"the local REDCap server cannot listen on port {port} ({exc.strerror}); "
                      "set REDCAP_PORT to another port") from None


def demo_redcap_info(server: Any) -> dict[str, str]:
    """The local REDCap server's API URL and demo-iit's demo token (a fictional project, local only)."""
    from infra.local.demo.redcap_project import DEMO_TOKEN

    return {"api_url": server.api_url, "token": DEMO_TOKEN}


def store_demo_token(secrets: Any, naming: Any, project_id: str, api_url: str) -> Any:
    """Store the demo token as ``project_id``'s own REDCap token bound to ``api_url`` (as the admin
    function does); the project's ``ClinicalDataSource``. ``secrets``: a ``SecretsManagerProjectSecrets``,
    ``naming``: the stack's ``SecretNaming``."""
    from pydantic import SecretStr

    from agent_memory.domain.models import ClinicalDataSource
    from agent_memory.domain.secrets import RedcapTokenSecret
    from infra.local.demo.redcap_project import DEMO_TOKEN

    secrets.put(naming.redcap_token(project_id), RedcapTokenSecret(token=SecretStr(DEMO_TOKEN), api_url=api_url)
                .to_secret())
    return ClinicalDataSource(source="redcap", api_url=api_url, token_set=True, token_updated_at=datetime.now(UTC))


def holds_demo_token(secrets: Any, naming: Any, project_id: str) -> bool:
    """Whether ``project_id``'s own REDCap token is the demo token (not one an admin set)."""
    from agent_memory.domain.errors import SecretNotSet, SecretUnreadable
    from agent_memory.domain.secrets import RedcapTokenSecret
    from infra.local.demo.redcap_project import DEMO_TOKEN

    try:
        stored = RedcapTokenSecret.from_secret(secrets.read(naming.redcap_token(project_id), fresh=True))
    except (SecretNotSet, SecretUnreadable):
        return False
    return stored.token.get_secret_value() == DEMO_TOKEN


def seed(repo: Any, members: Any, secrets: Any, naming: Any, redcap_url: str, *, now: datetime,
         restarted: bool) -> None:
    """The demo projects on a first start (``repo``: a ``ProjectRepository``; demo-iit's demo token
    stored for ``redcap_url``); on a restart, demo-iit moved to ``redcap_url`` while it still uses
    the demo token (a project an admin pointed elsewhere, or removed, stays; a legacy record naming
    the demo secret is given the project's own token)."""
    from agent_memory.domain.errors import ProjectNotFound
    from infra.local.demo.hot_memory import DEMO_IIT_PROJECT_ID
    from infra.local.demo.seed import seed_demo

    if not restarted:
        clinical_data = store_demo_token(secrets, naming, DEMO_IIT_PROJECT_ID, redcap_url)
        seed_demo(repo, now=now, clinical_data=clinical_data, members=members)
        return
    try:
        project = repo.get_project(DEMO_IIT_PROJECT_ID)
    except ProjectNotFound:
        return
    current = project.clinical_data
    legacy_demo = current is not None and current.token_secret == LEGACY_DEMO_SECRET
    if current is None or (current.api_url == redcap_url and current.token_set):
        return
    if legacy_demo or (current.token_set and holds_demo_token(secrets, naming, DEMO_IIT_PROJECT_ID)):
        repo.put_project(project.model_copy(update={
            "clinical_data": store_demo_token(secrets, naming, DEMO_IIT_PROJECT_ID, redcap_url)}))


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
