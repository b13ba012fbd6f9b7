"""schemathesis over the served OpenAPI document, against the local stack, as an admin and as a member,
with ALL of schemathesis' checks (``--checks all``).

For every operation of ``GET /v1/openapi.json`` schemathesis generates requests from the document
(valid ones, and invalid ones where the document constrains something) and every answer must pass
every check: no server error (502/503/504 only where documented: the offline LLM never fails), a
status and a content type the document states, bodies and headers matching their schemas, valid
data accepted (2xx, or 401 / 403 / 404 / 409 / 429), invalid data refused with a 4xx, no
authentication ignored.

The one allowance is the document's own: a rule an operation applies that no JSON Schema can state
(a week that does not exist, ``from`` after ``to``, a continuation token the listing did not issue,
a limit in UTF-8 bytes) is stated in its ``x-rules-beyond-schema`` with its status, and for that
operation that status also counts as an answer to valid data (and a 413 as a refusal of invalid
data). Nothing else is configured.

The generated path parameters are kept inside one project made for this run (``project_id`` is
fixed to it), so the requests reach the routes' logic instead of the membership check, and the demo
projects other tests read stay untouched. Bounded: :data:`MAX_EXAMPLES` per operation and mode,
derandomized (the same requests every run), no shrinking, no stateful phase.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Ok

from agent_memory.domain.models import Project
from infra.local.stack import LocalStack
from tests.support.auth import bearer

#: Examples per operation: valid requests, and requests that break the document's constraints.
MAX_EXAMPLES = {"positive": 10, "negative": 5}
load_all_checks()
#: Every check schemathesis has (what ``--checks all`` runs).
ALL_CHECKS = list(CHECKS.get_all())
#: Where an operation states the rules it applies beyond its schema (``agent_memory.http.routing``).
RULES = "x-rules-beyond-schema"


@dataclass
class Run:
    """What one schemathesis pass did: operations, examples sent, statuses seen, failures."""

    role: str
    operations: int = 0
    examples: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        seen = ", ".join(f"{code}: {n}" for code, n in sorted(self.statuses.items()))
        return (f"schemathesis ({self.role}): {self.operations} operations, {self.examples} examples, "
                f"{len(self.failures)} failures; statuses {seen}")


@pytest.fixture(scope="module")
def fuzz_project(local_stack: LocalStack) -> str:
    """A project of its own for this run (nothing else in the suite reads it)."""
    project_id = f"fuzz-{uuid.uuid4().hex[:8]}"
    local_stack.repo.projects.put_project(Project(project_id=project_id, name="schemathesis",
                                                  created_at=datetime.now(UTC)))
    return project_id


def checks_config(document: dict[str, Any]) -> SchemathesisConfig:
    """The configuration of the run: for each operation with rules beyond its schema, their
    statuses count as answers to valid data, and a 413 as a refusal of invalid data."""
    defaults = SchemathesisConfig().projects.default.checks
    accepted = defaults.positive_data_acceptance.expected_statuses
    refused = defaults.negative_data_rejection.expected_statuses
    operations = []
    for item in document["paths"].values():
        for operation in item.values():
            rules = sorted(int(status) for status in (operation.get(RULES) or {}))
            if not rules:
                continue
            operations.append({
                "include-operation-id": operation["operationId"],
                "checks": {
                    "positive_data_acceptance": {
                        "expected-statuses": [*accepted, *map(str, rules)],
                    },
                    "negative_data_rejection": {
                        "expected-statuses": [*refused, *(["413"] if 413 in rules else [])],
                    },
                },
            })
    return SchemathesisConfig.from_dict({"operations": operations})


def _fuzz(local_stack: LocalStack, project_id: str, role: str) -> Run:
    url = f"{local_stack.base_url}/v1/openapi.json"
    schema = schemathesis.openapi.from_url(url, timeout=30, config=checks_config(requests.get(url, timeout=30).json()))
    auth = bearer(f"{project_id}:{role}", user=f"fuzz-{role}")
    run = Run(role=role)
    http = requests.Session()
    for result in schema.get_all_operations():
        if not isinstance(result, Ok):
            run.failures.append(f"the document has an operation schemathesis cannot read: {result.err()}"[:400])
            continue
        operation = result.ok()
        run.operations += 1
        fixed = {"project_id": project_id} if "{project_id}" in operation.path else None
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            # the role's token is fixed: schemathesis neither drops nor mangles it (ignored_auth
            # still checks the routes without it)
            strategy = operation.as_strategy(generation_mode=mode, path_parameters=fixed, headers=auth)
            label = f"{operation.label} [{mode.value}]"
            try:
                _examples(strategy, MAX_EXAMPLES[mode.value], label, local_stack.base_url, http, auth, run)
            except Unsatisfiable:
                if mode is schemathesis.GenerationMode.POSITIVE:
                    raise
                # nothing to make invalid (no parameters, no body): no negative examples
            except Exception as exc:  # noqa: BLE001 - a strategy that cannot generate is a finding too
                run.failures.append(f"{label}: {type(exc).__name__}: {exc}"[:400])
    return run


def _examples(
    strategy: Any, examples: int, label: str, base_url: str, http: requests.Session, auth: dict[str, str], run: Run
) -> None:
    """Send ``examples`` cases of ``strategy`` (derandomized, never shrunk); failures go to ``run``."""

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def send(case: Any) -> None:
        # the role's token always (the document's bearer scheme would otherwise be filled at random)
        headers = {**(case.headers or {}), **auth}
        response = case.call(base_url=base_url, session=http, headers=headers, timeout=60)
        run.examples += 1
        run.statuses[response.status_code] += 1
        try:
            case.validate_response(response, checks=ALL_CHECKS, headers=headers)
        except FailureGroup as group:  # collected, reported all at once by the test (never shrunk)
            for failure in group.exceptions:
                title = getattr(failure, "title", type(failure).__name__)
                detail = " ".join(str(getattr(failure, "message", "")).split())[:300]
                run.failures.append(f"{label} -> {response.status_code}: {title}: {detail}")

    send()


@pytest.mark.parametrize("role", ["admin", "member"])
def test_schemathesis_with_all_checks_finds_nothing_the_document_does_not_state(
    local_stack: LocalStack, fuzz_project: str, role: str, record_property: Any
) -> None:
    # When: schemathesis sends every operation its generated requests with this role's token
    run = _fuzz(local_stack, fuzz_project, role)
    record_property("summary", run.summary())

    # Then: it covered every operation with examples, and no answer broke a check
    assert run.operations >= 25 and run.examples >= run.operations * 2
    # and the requests reached the routes' logic: at least one success per operation on average,
    # not only refusals of the token or the membership
    assert sum(n for code, n in run.statuses.items() if 200 <= code < 300) >= run.operations, run.summary()
    assert not run.failures, run.summary() + "\n" + "\n".join(sorted(set(run.failures)))
