"""The reminder webhook as an admin sets it (agent_memory/reminders/webhook.py): the URL under the
egress policy, a signing key the service generates, stores and shows once; DELETE removes both."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.errors import EgressRefused, NotFound
from agent_memory.domain.secrets import SecretNaming
from agent_memory.reminders.webhook import WebhookDeps, delete_reminder_webhook, put_reminder_webhook
from tests.fakes import FakeResolver, InMemorySecrets, InMemoryWebhooks

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SECRET = "agent-memory/reminder-webhook/p1"


@pytest.fixture
def deps() -> WebhookDeps:
    return WebhookDeps(store=InMemoryWebhooks(), secrets=InMemorySecrets(), naming=SecretNaming(),
                       policy=EgressPolicy(), resolver=FakeResolver({"hooks.example.org": [["93.184.216.34"]]}))


def test_put_stores_a_generated_key_and_shows_it_once(deps: WebhookDeps) -> None:
    first = put_reminder_webhook(deps, "p1", "https://Hooks.Example.org/reminders?team=a", now=NOW)
    key = first.signing_key.get_secret_value()
    assert len(key) >= 43 and key not in repr(first) and key not in first.model_dump_json()
    assert first.shown_once()["signing_key"] == key and first.url == "https://hooks.example.org/reminders?team=a"
    assert deps.secrets.current(SECRET) == key  # type: ignore[attr-defined]
    assert deps.store.webhook("p1") == ("https://hooks.example.org/reminders?team=a", SECRET)
    # a new PUT makes a new key (the old one is never shown or reused)
    second = put_reminder_webhook(deps, "p1", "https://hooks.example.org/reminders", now=NOW)
    assert second.signing_key.get_secret_value() != key
    assert deps.secrets.current(SECRET) == second.signing_key.get_secret_value()  # type: ignore[attr-defined]


@pytest.mark.parametrize("url", ["http://hooks.example.org/", "https://169.254.169.254/", "https://u@hooks.example.org/",
                                 "https://127.0.0.1:9001/", "https://0x7f000001/"])
def test_a_url_the_policy_refuses_stores_nothing(deps: WebhookDeps, url: str) -> None:
    with pytest.raises(EgressRefused) as refused:
        put_reminder_webhook(deps, "p1", url, now=NOW)
    assert refused.value.reason.startswith("url: ")
    assert deps.store.webhook("p1") is None and deps.secrets.log == []  # type: ignore[attr-defined]


def test_delete_removes_the_record_then_the_key(deps: WebhookDeps) -> None:
    put_reminder_webhook(deps, "p1", "https://hooks.example.org/r", now=NOW)
    delete_reminder_webhook(deps, "p1")
    assert deps.store.webhook("p1") is None and deps.secrets.current(SECRET) is None  # type: ignore[attr-defined]
    with pytest.raises(NotFound):
        delete_reminder_webhook(deps, "p1")


def test_one_projects_webhook_never_touches_anothers(deps: WebhookDeps) -> None:
    put_reminder_webhook(deps, "team-a", "https://hooks.example.org/a", now=NOW)
    with pytest.raises(NotFound):
        delete_reminder_webhook(deps, "team-b")
    assert deps.store.webhook("team-a") == ("https://hooks.example.org/a", "agent-memory/reminder-webhook/team-a")
