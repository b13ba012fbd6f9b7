"""The identifier firewall (agent_memory.identifiers.firewall): each project's index read at most
once per refresh interval, a failed read retried later without failing the caller, the project's
policy (redact / reject, HTTP 422 with the kinds and never the values)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from agent_memory.domain.clinical import ClinicalSourceUnavailable, IdentifierValue
from agent_memory.domain.errors import IdentifiersRejected
from agent_memory.domain.models import ClinicalDataSource, Project
from agent_memory.http.errors import register_error_handlers
from agent_memory.http.powertools import APIGatewayHttpResolver
from agent_memory.identifiers import IdentifierFirewall
from infra.local.events import build_http_api_event
from tests.fakes import InMemorySubjectIdentifiers

SOURCE = ClinicalDataSource(source="redcap", api_url="https://redcap.example.org/api/",
                            token_secret="agent-memory/redcap/iit")


def _project(policy: str = "redact", project_id: str = "iit") -> Project:
    return Project(project_id=project_id, name="IIT", clinical_data=SOURCE, identifiers=policy,
                   created_at=datetime(2026, 3, 1, tzinfo=UTC))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def source() -> InMemorySubjectIdentifiers:
    return InMemorySubjectIdentifiers({"iit": [IdentifierValue("P004", "name", "刘桂兰"),
                                               IdentifierValue("P004", "phone", "13912340004")]})


def test_a_subjects_name_and_phone_are_withheld_naming_the_subject(source: InMemorySubjectIdentifiers) -> None:
    firewall = IdentifierFirewall(source, clock=Clock())
    result = firewall.screen(_project(), "刘桂兰的家属电话 13912340004，明天复查")
    assert result.text == "[P004 的姓名已隐去]的家属电话 [P004 的电话已隐去]，明天复查"
    assert result.counts == {"name": 1, "phone": 1}
    english = firewall.screen(_project(), "Please call Liu Guilan's daughter")
    assert english.text == "Please call [P004's name withheld]'s daughter"


def test_the_index_is_read_once_per_refresh_interval(source: InMemorySubjectIdentifiers) -> None:
    # Given: a firewall refreshing every 300 s
    clock = Clock()
    firewall = IdentifierFirewall(source, max_age_s=300.0, clock=clock)
    # When: texts arrive over 299 s, then one after 300 s
    firewall.screen(_project(), "a")
    clock.now += 299.0
    firewall.screen(_project(), "b")
    assert len(source.reads) == 1
    source.values["iit"].append(IdentifierValue("P005", "name", "陈海涛"))
    assert firewall.screen(_project(), "陈海涛来了").counts == {}  # not known until the refresh
    clock.now += 1.0
    # Then: the next text reads the values again and knows the new subject
    assert firewall.screen(_project(), "陈海涛来了").counts == {"name": 1}
    assert len(source.reads) == 2


def test_each_project_has_its_own_index(source: InMemorySubjectIdentifiers) -> None:
    firewall = IdentifierFirewall(source, clock=Clock())
    assert firewall.screen(_project(project_id="other"), "刘桂兰来了").counts == {}
    assert firewall.screen(_project(), "刘桂兰来了").counts == {"name": 1}
    assert [r[0] for r in source.reads] == ["other", "iit"]


def test_a_failed_read_keeps_the_last_index_and_is_retried_after_the_retry_interval(
    source: InMemorySubjectIdentifiers,
) -> None:
    # Given: an index read once, then the source goes down
    clock = Clock()
    firewall = IdentifierFirewall(source, max_age_s=300.0, retry_after_s=60.0, clock=clock)
    firewall.screen(_project(), "x")
    source.fail = ClinicalSourceUnavailable("down")
    clock.now += 300.0
    # When / Then: the failed refresh does not fail the text; the last index still withholds
    assert firewall.screen(_project(), "刘桂兰来了").counts == {"name": 1}
    clock.now += 59.0
    firewall.screen(_project(), "y")
    assert len(source.reads) == 2  # no new read within the retry interval
    source.fail = None
    clock.now += 1.0
    firewall.screen(_project(), "z")
    assert len(source.reads) == 3


def test_without_any_index_the_patterns_still_apply(source: InMemorySubjectIdentifiers) -> None:
    source.fail = ClinicalSourceUnavailable("down")
    firewall = IdentifierFirewall(source, clock=Clock())
    result = firewall.screen(_project(), "刘桂兰 13912340004")
    assert result.text == "刘桂兰 [电话已隐去]"
    assert IdentifierFirewall(None).screen(_project(), "电话 13912340004").counts == {"phone": 1}


def test_the_read_has_its_own_timeout_within_the_callers_deadline(source: InMemorySubjectIdentifiers) -> None:
    clock = Clock()
    IdentifierFirewall(source, clock=clock).screen(_project(), "a", deadline=1002.0)
    IdentifierFirewall(source, clock=clock).screen(_project(), "a")
    assert [r[1] for r in source.reads] == [1002.0, 1005.0]


# ----------------------------------------------------------------------------------- policy
def test_reject_refuses_a_text_with_identifiers_naming_only_the_kinds(source: InMemorySubjectIdentifiers) -> None:
    firewall = IdentifierFirewall(source, clock=Clock())
    with pytest.raises(IdentifiersRejected) as caught:
        firewall.screen(_project("reject"), "刘桂兰 的邮箱 liu@example.org")
    assert caught.value.kinds == ("email", "name")
    assert "刘桂兰" not in caught.value.reason and "liu@example.org" not in caught.value.reason
    # a clean text passes unchanged
    assert firewall.screen(_project("reject"), "P004 入组了吗？").text == "P004 入组了吗？"


def test_reject_refuses_the_whole_request_when_one_of_its_texts_holds_identifiers(
    source: InMemorySubjectIdentifiers,
) -> None:
    firewall = IdentifierFirewall(source, clock=Clock())
    texts = ["医生：今天感觉怎么样？", "患者：还行，电话 13800001111 换了"]
    with pytest.raises(IdentifiersRejected) as caught:
        firewall.screen_all(_project("reject"), texts)
    assert caught.value.kinds == ("phone",)
    assert [r.text for r in firewall.screen_all(_project("redact"), texts)] == [
        "医生：今天感觉怎么样？", "患者：还行，电话 [电话已隐去] 换了"]


def test_scrub_redacts_whatever_the_policy(source: InMemorySubjectIdentifiers) -> None:
    firewall = IdentifierFirewall(source, clock=Clock())
    assert firewall.scrub(_project("reject"), "刘桂兰来了", lang="en").text == "[P004's name withheld]来了"


def test_the_policy_defaults_to_redact_and_accepts_nothing_else() -> None:
    assert Project(project_id="p", name="P", created_at=datetime(2026, 3, 1, tzinfo=UTC)).identifiers == "redact"
    with pytest.raises(ValidationError):
        Project(project_id="p", name="P", identifiers="mask", created_at=datetime(2026, 3, 1, tzinfo=UTC))


def test_a_rejected_text_answers_422_with_the_kinds_and_no_value() -> None:
    # Given: a route whose firewall refused a text
    app = APIGatewayHttpResolver()
    register_error_handlers(app)

    @app.get("/v1/boom")
    def boom() -> dict[str, str]:
        raise IdentifiersRejected(("name", "phone"))

    event = build_http_api_event("GET", "/v1/boom", {}, "", b"", "GET /v1/boom", None, None, request_id="req-9")
    # When
    response: dict[str, Any] = app.resolve(event, LambdaContext())
    # Then
    body = json.loads(response["body"])
    assert response["statusCode"] == 422
    assert body["error"] == "identifiers_rejected" and body["kinds"] == ["name", "phone"]
    assert body["retryable"] is False and body["request_id"] == "req-9"
