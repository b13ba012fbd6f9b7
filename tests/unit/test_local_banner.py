"""The local server's banner names the demo projects that are still stored."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agent_memory.domain.errors import ProjectNotFound
from infra.local.server import _demo_projects


class _Repo:
    def __init__(self, projects: dict[str, int]) -> None:
        self.projects = projects  # project id -> weekly reports

    def get_project(self, project_id: str) -> Any:
        if project_id not in self.projects:
            raise ProjectNotFound(project_id)
        return project_id

    def load_history(self, project_id: str, *, limit_weeks: int) -> list[int]:
        return list(range(min(self.projects[project_id], limit_weeks)))


def test_the_banner_names_only_the_demo_projects_still_stored() -> None:
    # stand-ins for the LocalStack (only its ``repo`` is read)
    both: Any = SimpleNamespace(repo=_Repo({"demo-iit": 47, "demo-clinic": 0}))
    assert _demo_projects(both) == "project demo-iit (hot memory, 47 weekly reports), project demo-clinic"
    one: Any = SimpleNamespace(repo=_Repo({"demo-iit": 47}))
    assert _demo_projects(one) == "project demo-iit (hot memory, 47 weekly reports)"
    none: Any = SimpleNamespace(repo=_Repo({}))
    assert _demo_projects(none).startswith("none (the demo projects were removed")
