"""Clinical data from a JSON file (the demo source; REDCap later).

The file maps project ids to ``{"target_enrolment": int, "subjects": {id: record}}``; the local
runtime points ``CLINICAL_DATA_FILE`` at ``infra/local/demo/clinical_data.json``. Every lookup is
scoped by project id (tenancy).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class DemoClinicalData:
    """Clinical data for the demo projects, loaded from the packaged JSON file."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def read(self, project_id: str, subject_id: str | None = None) -> dict[str, Any]:
        """See :meth:`ClinicalDataPort.read`."""
        project = self._data.get(project_id)
        if project is None:
            return {"error": f"no clinical data for project {project_id}"}
        subjects: dict[str, Any] = project.get("subjects", {})
        if subject_id:
            key = subject_id.strip().upper()
            if key not in subjects:
                return {"error": f"subject {key} not found"}
            return {"subject": {"subject_id": key, **subjects[key]}}
        enrolled = [s for s, v in subjects.items() if v.get("status") == "enrolled"]
        return {
            "summary": {
                "subjects": len(subjects),
                "enrolled": len(enrolled),
                "target": project.get("target_enrolment"),
            },
            "subjects": sorted(subjects),
        }


def load_clinical_file(path: str) -> dict[str, Any]:
    """Read the clinical-data JSON at ``path``; ``{}`` when ``path`` is empty or missing."""
    if not path:
        return {}
    try:
        text = Path(path).read_text("utf-8")
    except FileNotFoundError:
        return {}
    data: dict[str, Any] = json.loads(text)
    return data
