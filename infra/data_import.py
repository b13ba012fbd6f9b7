"""Load a project export (``GET /v1/projects/{project_id}/export``, JSON Lines) into a stack.

The export's first line is its manifest (``kind: "manifest"``, ``format``, ``counts``); every
other line is ``{"kind", "table", "item"}`` with the item's attributes as stored, keys included
(``agent_memory.governance.export``). Each item is written to the table its ``table`` names
(``memory``, ``sessions``, ``flow_log``) with ``BatchWriteItem`` (25 per call, unprocessed items
sent again). The target should be empty for that project: an item with the same key is replaced.
The patients' diagnosis references are derived data and not in an export: until the imported
project is backfilled (``PatientRefsRepository.backfill_patient_refs``; the local stack does it at
its next start), the first turn of a patient's new session reads their diagnoses with a Query.

    python -m infra.data_import export.jsonl                 # into the running `make run` stack
    python -m infra.data_import export.jsonl --aws --stage dev   # into a deployed stack (its outputs)

docs/architecture.md, "Data governance".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

EXPORT_FORMAT = "agent-memory-export/1"
#: The export's table names -> the template's logical ids.
TABLES = {"memory": "MemoryTable", "sessions": "SessionsTable", "flow_log": "FlowLogTable"}
_BATCH = 25


class ImportError_(ValueError):
    """The file is not an export this tool can load (names the line)."""


def _dynamo_value(value: Any) -> Any:
    """A JSON value as boto3's serializer takes it (numbers as Decimal)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if isinstance(value, list):
        return [_dynamo_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _dynamo_value(v) for k, v in value.items()}
    raise ImportError_(f"unsupported value type {type(value).__name__}")


def parse_export(lines: Iterable[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(manifest, records)`` of an export's lines.

    Raises:
        ImportError_: no manifest first, another format, a record without kind/table/item, or
            counts that differ from the manifest's.
    """
    manifest: dict[str, Any] | None = None
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = json.loads(line)
        if manifest is None:
            if record.get("kind") != "manifest" or record.get("format") != EXPORT_FORMAT:
                raise ImportError_(f"line {number}: the first line must be a {EXPORT_FORMAT} manifest")
            manifest = record
            continue
        if record.get("table") not in TABLES or not isinstance(record.get("item"), dict) or not record.get("kind"):
            raise ImportError_(f"line {number}: not an export record")
        records.append(record)
    if manifest is None:
        raise ImportError_("empty file: no manifest")
    counts = Counter(r["kind"] for r in records)
    if dict(counts) != manifest.get("counts", {}):
        raise ImportError_(f"the records ({dict(counts)}) differ from the manifest's counts ({manifest.get('counts')})")
    return manifest, records


def import_records(dynamodb: Any, table_names: Mapping[str, str], records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Write ``records`` to the tables (``table_names``: logical id -> name); items per kind."""
    from boto3.dynamodb.types import TypeSerializer

    serializer = TypeSerializer()
    by_table: dict[str, list[dict[str, Any]]] = {}
    written: Counter[str] = Counter()
    for record in records:
        item = {k: serializer.serialize(_dynamo_value(v)) for k, v in record["item"].items()}
        by_table.setdefault(table_names[TABLES[record["table"]]], []).append(item)
        written[record["kind"]] += 1
    for table, items in by_table.items():
        for start in range(0, len(items), _BATCH):
            pending: dict[str, Any] = {table: [{"PutRequest": {"Item": i}} for i in items[start:start + _BATCH]]}
            while pending:
                pending = dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
    return dict(written)


def main(argv: list[str] | None = None) -> int:
    """CLI (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m infra.data_import", description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="the export (JSON Lines)")
    parser.add_argument("--aws", action="store_true", help="import into the deployed stack of --stage")
    parser.add_argument("--stage", default="dev")
    parser.add_argument("--endpoint", help="moto URL of a local stack (default: .local/stack.json)")
    args = parser.parse_args(argv)
    import boto3

    from infra.jobs import local_description, stack_name_for, stack_outputs

    with args.file.open(encoding="utf-8") as handle:
        manifest, records = parse_export(handle)
    if args.aws:
        session = boto3.Session()
        outputs, _ = stack_outputs(session.client("cloudformation"), stack_name_for(args.stage))
        tables = {logical: outputs[f"{logical}Name"] for logical in TABLES.values()}
        client = session.client("dynamodb")
    else:
        description = local_description(args.endpoint)
        tables = dict(description["table_names"])
        env = description["env"]
        client = boto3.client(
            "dynamodb", endpoint_url=description["moto_url"], region_name=description["region"],
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
            aws_session_token=env.get("AWS_SESSION_TOKEN"),
        )
    written = import_records(client, tables, records)
    json.dump({"project_id": manifest.get("project_id"), "written": written}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
