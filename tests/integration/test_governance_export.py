"""The project export over HTTP (local stack) and its round trip into an empty stack.

The demo project (hot memory with provenance, revisions, a year of weekly reports, sessions with
messages and diagnoses) is exported, the file is loaded with ``infra.data_import`` into a fresh
set of the template's tables, and the hot memory, the reports and the sessions there compare
equal to the originals, item by item.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
from boto3.dynamodb.types import TypeDeserializer

from agent_memory.domain.models import Project
from infra.data_import import ImportError_, import_records, parse_export
from infra.local.stack import LocalStack
from infra.template_model import create_tables, load_template
from tests.support.auth import bearer

DEMO = "demo-iit"
_DESERIALIZE = TypeDeserializer().deserialize


def _export(stack: LocalStack, project_id: str, role: str = "admin", **params: str) -> requests.Response:
    user = "export-admin" if role == "admin" else f"export-{role}"
    return requests.get(f"{stack.base_url}/v1/projects/{project_id}/export", params=params or None,
                        headers=bearer(f"{project_id}:{role}", user), timeout=60)


def _project_items(client: Any, tables: dict[str, str], project_id: str) -> dict[str, dict[tuple[str, str], Any]]:
    """The project's items per logical table, keyed by (pk, sk), deserialised."""
    out: dict[str, dict[tuple[str, str], Any]] = {}
    for logical in ("MemoryTable", "SessionsTable", "FlowLogTable"):
        items: dict[tuple[str, str], Any] = {}
        for page in client.get_paginator("scan").paginate(TableName=tables[logical]):
            for raw in page["Items"]:
                item = {k: _DESERIALIZE(v) for k, v in raw.items()}
                pk, sk = str(item["pk"]), str(item["sk"])
                if pk == project_id or pk.startswith(f"{project_id}#"):
                    items[(pk, sk)] = item
        out[logical] = items
    return out


@pytest.fixture(scope="module")
def demo(local_stack: LocalStack) -> str:
    """The demo project with, besides its seeded hot memory and reports, a consultation: a chat
    turn, a transcript and a diagnosis in a new session."""
    base = f"{local_stack.base_url}/v1/projects/{DEMO}/sessions/exp-{uuid.uuid4().hex[:8]}"
    headers = bearer(f"{DEMO}:admin", "export-admin")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("messages", {"content": "P009 头痛两天", "patient_id": "P009"}),
        ("transcript", {"turns": [{"role": "doctor", "content": "发烧吗？"}, {"role": "patient", "content": "没有"}]}),
        ("diagnoses", {"report": {"impression": "tension headache"}}),
    ]
    for path, body in calls:
        r = requests.post(f"{base}/{path}", json=body, headers=headers, timeout=60)
        assert r.status_code in (200, 201), r.text
    return DEMO


def test_export_is_json_lines_with_a_manifest_and_a_kind_per_line(local_stack: LocalStack, demo: str) -> None:
    r = _export(local_stack, DEMO)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in r.text.splitlines()]
    manifest, records = lines[0], lines[1:]
    assert manifest["kind"] == "manifest" and manifest["project_id"] == DEMO and manifest["include"] == []
    counts: dict[str, int] = {}
    for record in records:
        counts[record["kind"]] = counts.get(record["kind"], 0) + 1
    assert counts == manifest["counts"]
    assert {"project", "hot_memory", "weekly_report", "session", "message", "diagnosis"} <= set(counts)
    assert "flow_log" not in counts
    hot = next(rec["item"] for rec in records if rec["kind"] == "hot_memory")
    assert all({"source", "created_by", "created_at", "evidence"} <= set(line) for line in json.loads(hot["lines"]))


def test_flow_log_is_exported_only_when_asked_and_members_get_403(local_stack: LocalStack) -> None:
    project_id = f"exp-{uuid.uuid4().hex[:8]}"
    local_stack.repo.projects.put_project(Project(project_id=project_id, name=project_id, time_zone="Asia/Shanghai",
                                         created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    sent = requests.post(f"{local_stack.base_url}/v1/projects/{project_id}/sessions/s-1/messages",
                         json={"content": "flow log line to export"},
                         headers=bearer(f"{project_id}:admin", "export-admin"), timeout=60)
    assert sent.status_code == 200, sent.text
    without = _export(local_stack, project_id).text
    with_flow = _export(local_stack, project_id, include="flow_log").text
    flow = [json.loads(line) for line in with_flow.splitlines() if '"kind": "flow_log"' in line]
    assert len(flow) == 2 and {f["item"]["role"] for f in flow} == {"user", "assistant"}
    assert json.loads(with_flow.splitlines()[0])["counts"]["flow_log"] == 2
    assert '"kind": "flow_log"' not in without
    assert _export(local_stack, project_id, role="member").status_code == 403
    assert _export(local_stack, project_id, include="everything").status_code == 422


def test_demo_export_round_trips_into_an_empty_stack(local_stack: LocalStack, demo: str) -> None:
    # Given the demo project's export
    r = _export(local_stack, DEMO)
    assert r.status_code == 200
    manifest, records = parse_export(r.text.splitlines())
    # When it is imported into a fresh, empty set of the template's tables
    client = local_stack.aws_client("dynamodb")
    empty = create_tables(client, load_template(), name_prefix=f"rt-{uuid.uuid4().hex[:6]}-")
    assert all(client.scan(TableName=t, Limit=1)["Count"] == 0 for t in empty.values())
    written = import_records(client, empty, records)
    assert written == manifest["counts"]
    # Then hot memory, revisions, reports and sessions (with messages and diagnoses) compare equal
    source = _project_items(client, local_stack.table_names, DEMO)
    copy = _project_items(client, empty, DEMO)
    operational = ("ACTIVE#", "JOBRUN#", "ALERT#")
    memory = {k: v for k, v in source["MemoryTable"].items() if not k[1].startswith(operational)}
    # (derived data is left out: the patients' diagnosis references items and the project
    # record's mark that they are complete, which a backfill rebuilds)
    assert "patient_refs_since" in memory[(DEMO, "PROJECT")]
    memory[(DEMO, "PROJECT")] = {k: v for k, v in memory[(DEMO, "PROJECT")].items() if k != "patient_refs_since"}
    assert copy["MemoryTable"] == memory
    derived = {k for k in source["SessionsTable"] if k[0].startswith(f"{DEMO}#PATIENT#")}
    assert {k[0] for k in derived} == {f"{DEMO}#PATIENT#P009"}
    assert copy["SessionsTable"] == {k: v for k, v in source["SessionsTable"].items() if k not in derived}
    assert ("demo-iit", "HOT") in copy["MemoryTable"]
    assert sum(1 for k in copy["MemoryTable"] if k[1].startswith("REPORT#")) >= 40
    assert any(k[1].startswith("MSG#") for k in copy["SessionsTable"])
    assert any(k[1].startswith("DIAG#") for k in copy["SessionsTable"])
    assert copy["FlowLogTable"] == {}  # not asked for


def test_import_refuses_a_file_whose_counts_differ_from_its_manifest() -> None:
    manifest = {"kind": "manifest", "format": "agent-memory-export/1", "counts": {"session": 2}}
    line = {"kind": "session", "table": "sessions", "item": {"pk": "p#s", "sk": "SESSION"}}
    with pytest.raises(ImportError_, match="differ"):
        parse_export([json.dumps(manifest), json.dumps(line)])
    with pytest.raises(ImportError_, match="manifest"):
        parse_export([json.dumps(line)])
