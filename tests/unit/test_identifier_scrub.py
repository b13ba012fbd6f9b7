"""The pieces of the identifier scrub: a value read after its label, every string of stored data
(JSON text inside it too, ids and times left alone), and the scrub use case's retry of a text a
concurrent writer changed (on a fake store; the DynamoDB store: tests/integration/test_scrub_job.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

from agent_memory.domain.models import Project
from agent_memory.domain.redaction import scrub_data, scrub_value
from agent_memory.domain.scrub import ScrubRecord, StoredText
from agent_memory.governance.scrub import ScrubDeps, run_scrub
from agent_memory.identifiers import IdentifierFirewall

PHONE = "13912345678"


def test_a_bare_number_is_withheld_when_its_label_names_a_record_number_and_kept_otherwise() -> None:
    assert scrub_value("88123456", label="住院号").text == "[病历号已隐去]"
    assert scrub_value("00123456", label="mrn", lang="en").text == "[record number withheld]"
    assert scrub_value("88123456", label="样本编号").text == "88123456"
    assert scrub_value("132", label="肌酐 μmol/L").text == "132"
    # the label is never changed or counted, only the value
    assert scrub_value(PHONE, label="Contact").counts == {"phone": 1}


def test_every_string_of_stored_data_is_scrubbed_ids_and_times_left_alone() -> None:
    data = {
        "message_id": "m17731080020001391234567", "at": "2026-03-10T02:00:00+00:00",
        "content": f"家属电话 {PHONE}", "tool_calls": [{"result": json.dumps({"住院号": "88123456", "crea": "132"},
                                                                         ensure_ascii=False)}],
        "count": 13912345678,
    }
    clean, counts = scrub_data(data, lambda value, label: scrub_value(value, label=label))
    assert clean["content"] == "家属电话 [电话已隐去]"
    assert json.loads(clean["tool_calls"][0]["result"]) == {"住院号": "[病历号已隐去]", "crea": "132"}
    assert (clean["message_id"], clean["at"], clean["count"]) == (data["message_id"], data["at"], 13912345678)
    assert dict(counts) == {"phone": 1, "record_number": 1}
    # nothing withheld: the very same data back
    same, none = scrub_data({"content": "P003 C3D1"}, lambda value, label: scrub_value(value, label=label))
    assert none == {} and same == {"content": "P003 C3D1"}


class _Store:
    """A ``ScrubStore`` with one text that a concurrent writer changes before the first rewrite."""

    def __init__(self) -> None:
        self.text = StoredText(area="message", table="sessions", key={"pk": "p1#s1", "sk": "MSG#m1"},
                               attribute="content", value=f"电话 {PHONE}")
        self.rewrites: list[Any] = []
        self.record: ScrubRecord | None = None

    def get_project(self, project_id: str) -> Project:
        return Project(project_id=project_id, name="P", created_at=datetime(2026, 3, 1, tzinfo=UTC))

    def start_scrub(self, record: ScrubRecord) -> ScrubRecord:
        self.record = self.record or record
        return self.record

    def finish_scrub(self, record: ScrubRecord, *, at: datetime) -> ScrubRecord:
        self.record = record.model_copy(update={"status": "done", "finished_at": at})
        return self.record

    def stored_texts(self, project_id: str, *, since: date, until: date) -> Iterator[StoredText]:
        yield self.text

    def reread(self, text: StoredText) -> StoredText | None:
        return self.text

    def rewrite(self, record: ScrubRecord, text: StoredText, value: Any, withheld: dict[str, int]) -> bool:
        if not self.rewrites:  # a turn changed it after it was read
            self.rewrites.append(None)
            self.text = text.model_copy(update={"value": f"电话 {PHONE}，邮箱 a.b@example.com"})
            return False
        self.rewrites.append((text.value, value, withheld))
        return True


def test_a_text_changed_meanwhile_is_read_again_and_scrubbed_as_it_is_now() -> None:
    store = _Store()
    deps = ScrubDeps(store=store, firewall=IdentifierFirewall(None), clock=lambda: datetime(2026, 3, 11, tzinfo=UTC))
    record = run_scrub(deps, project_id="p1", run_date=date(2026, 3, 11), actor="operator")
    assert store.rewrites[1] == (f"电话 {PHONE}，邮箱 a.b@example.com", "电话 [电话已隐去]，邮箱 [邮箱已隐去]",
                                 {"email": 1, "phone": 1})
    assert record.status == "done" and record.run_key == "2026-03-11"
    # a finished run answers its record without reading again
    assert run_scrub(deps, project_id="p1", run_date=date(2026, 3, 11), actor="operator") == record
    assert len(store.rewrites) == 2
