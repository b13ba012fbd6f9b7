"""The PynamoDB models' registration and binding (``agent_memory.adapters.dynamo.tables``): every
model is registered once under its table, and a module of models imported after the cold start's
``bind_tables`` is bound as it registers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pynamodb.models import Model

from agent_memory.adapters.dynamo import conversation_tables, record_tables, tables  # noqa: F401 - registered

REPO = Path(__file__).resolve().parents[2]

#: The table of every model (template.yaml: MemoryTable, SessionsTable, FlowLogTable).
EXPECTED = {
    "memory": {
        "ProjectItem", "MemberItem", "HotMemoryItem", "HotMemoryRevisionItem", "WeeklyReportItem", "YearSummaryItem",
        "ActivityItem", "ReportRevisionItem", "ReviewQueueItem", "JobRunItem", "AlertSentItem", "AuditItem",
        "ErasureItem", "ReminderItem", "WebhookItem", "WeComUserItem", "WeComChannelItem",
    },
    "sessions": {"SessionItem", "MessageItem", "DiagnosisItem", "FeedbackItem", "PatientRefsItem"},
    "flow_log": {"FlowLogItem"},
}


def _subclasses(cls: type[Model]) -> set[type[Model]]:
    direct = set(cls.__subclasses__())
    return direct.union(*(_subclasses(c) for c in direct))


def test_every_model_is_registered_once_under_its_table() -> None:
    # Given the three modules of models imported (above)
    registered = {table: [m.__name__ for m in models] for table, models in tables.TABLE_MODELS.items()}
    # Then each model is listed once, under its table, and no model of the package is missing
    assert {table: set(names) for table, names in registered.items()} == EXPECTED
    assert sum(len(names) for names in registered.values()) == sum(len(names) for names in EXPECTED.values())
    assert {m.__name__ for m in _subclasses(tables.BaseItem)} == set().union(*EXPECTED.values())


def test_a_model_imported_after_the_binding_is_bound_as_it_registers() -> None:
    # Given the tables bound at cold start before the conversation and record models are imported
    code = (
        "import json\n"
        "from agent_memory.adapters.dynamo import tables\n"
        "tables.bind_tables(memory_table='M', sessions_table='S', flow_log_table='F')\n"
        "from agent_memory.adapters.dynamo import conversation_tables as c, record_tables as r\n"
        "print(json.dumps([m.Meta.table_name for m in (tables.ProjectItem, c.SessionItem, c.MessageItem,\n"
        "                  c.FlowLogItem, r.ReviewQueueItem, r.ErasureItem)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "layers" / "shared"), "AWS_DEFAULT_REGION": "eu-west-1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    # Then every one points at its bound table
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["M", "S", "S", "F", "M", "M"]


def test_register_refuses_a_model_twice_and_an_unknown_table() -> None:
    with pytest.raises(ValueError, match="registered already"):
        tables.register("sessions", tables.ProjectItem)
    with pytest.raises(ValueError, match="unknown table"):
        tables.register("archive", tables.ProjectItem)
