"""The operator's migration of legacy ``token_secret`` sources (``python -m infra.migrate_clinical_tokens``),
run as an operator runs it against the local stack: a project whose record names its own secret is
migrated (its chat then reads its REDCap again); a project naming demo-iit's secret (the issue's
exploit, stored before the API refused it) is left for its admin and demo-iit's secret never moves.
The report holds no token; without ``--apply`` nothing is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import requests

from agent_memory.domain.models import ClinicalDataSource
from infra.local.demo.redcap_project import DEMO_TOKEN
from infra.local.stack import REPO_ROOT, LocalStack
from infra.local.token import mint_token
from tests.support.auth import team_project


def _project(stack: LocalStack, project_id: str, admin: str, token_secret: str) -> None:
    """A project made through the API, then given a legacy source as the old API stored it."""
    team_project(stack.base_url, project_id, admin)
    members = stack.members
    project = members.get_project(project_id)
    members.update_project(project.model_copy(update={"clinical_data": ClinicalDataSource(
        source="redcap", api_url=stack.redcap.api_url, token_secret=token_secret)}))


def _ask(stack: LocalStack, project_id: str, admin: str) -> str:
    answer = requests.post(f"{stack.base_url}/v1/projects/{project_id}/sessions/s-{uuid.uuid4().hex[:6]}/messages",
                           headers={"Authorization": f"Bearer {mint_token(admin)}"},
                           json={"content": "P001 入组了吗？"}, timeout=60)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["reply"])


def _migrate(stack_file: Path, *args: str) -> tuple[int, dict[str, dict[str, Any]], str]:
    run = subprocess.run([sys.executable, "-m", "infra.migrate_clinical_tokens", *args], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, "LOCAL_STACK_FILE": str(stack_file)})
    assert run.returncode in (0, 1), run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    return run.returncode, {line["project_id"]: line for line in lines}, run.stdout + run.stderr


def test_own_secrets_are_migrated_and_a_record_naming_another_projects_secret_is_left(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    own, attacker = f"legacy-{suffix}", f"legacy-attacker-{suffix}"
    sm = local_stack.aws_client("secretsmanager")
    demo_secret = sm.get_secret_value(SecretId="agent-memory/redcap/demo-iit")["SecretString"]
    # Given a legacy project whose record names its own secret (the token itself, as operators stored it)
    sm.create_secret(Name=f"agent-memory/redcap/{own}", SecretString=DEMO_TOKEN)
    _project(local_stack, own, f"u-{own}", f"agent-memory/redcap/{own}")
    # and one whose record names demo-iit's secret
    _project(local_stack, attacker, f"u-{attacker}", "agent-memory/redcap/demo-iit")
    assert "2026-02-05" not in _ask(local_stack, own, f"u-{own}")  # the chat refuses a legacy source
    stack_file = tmp_path / "stack.json"
    stack_file.write_text(json.dumps(local_stack.describe()), encoding="utf-8")
    # When the operator asks for the report, Then it says what it would do and writes nothing
    status, report, output = _migrate(stack_file)
    assert status == 1 and report[own]["status"] == "would_migrate" and report[attacker]["status"] == "set_again"
    assert "not the project's own" in report[attacker]["reason"]
    assert sm.get_secret_value(SecretId=f"agent-memory/redcap/{own}")["SecretString"] == DEMO_TOKEN
    # When it applies the migration
    status, report, output = _migrate(stack_file, "--apply")
    # Then the own secret now binds the token to the project's URL, and its chat reads REDCap again
    assert (status, report[own]["status"], report[own]["api_url"]) == (1, "migrated", local_stack.redcap.api_url)
    assert json.loads(sm.get_secret_value(SecretId=f"agent-memory/redcap/{own}")["SecretString"]) == {
        "token": DEMO_TOKEN, "api_url": local_stack.redcap.api_url}
    source = local_stack.members.get_project(own).clinical_data
    assert source is not None and (source.token_set, source.token_secret) == (True, None)
    assert "2026-02-05" in _ask(local_stack, own, f"u-{own}")
    # and the other stays refused, demo-iit's secret unchanged, no token in any report
    assert report[attacker]["status"] == "set_again"
    assert "2026-02-05" not in _ask(local_stack, attacker, f"u-{attacker}")
    assert sm.get_secret_value(SecretId="agent-memory/redcap/demo-iit")["SecretString"] == demo_secret
    assert DEMO_TOKEN not in output and DEMO_TOKEN.lower() not in output
    # and a second run has nothing more to do for the migrated project
    assert own not in _migrate(stack_file, "--apply")[1]
