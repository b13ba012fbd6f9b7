"""The reminder webhook as an admin sets it (agent_memory/reminders/webhook.py): the URL under the
egress policy, a signing key the service generates, stores and shows once; DELETE removes both; a
firing reads the key from the project's own secret only, and an unusable webhook fails it before
anything is sent."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agent_memory.adapters.reminder_channel import SnsWebhookChannel
from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.errors import EgressRefused, ExternalServiceError, NotFound, SecretNotSet, SecretUnreadable
from agent_memory.domain.reminders import ReminderDelivery
from agent_memory.domain.secrets import SecretNaming
from agent_memory.reminders.webhook import WebhookDeps, delete_reminder_webhook, put_reminder_webhook, webhook_key
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


# ------------------------------------------------------------------------------ the delivery
def test_the_key_is_read_only_from_the_projects_own_secret(deps: WebhookDeps) -> None:
    put_reminder_webhook(deps, "team-a", "https://hooks.example.org/a", now=NOW)
    put_reminder_webhook(deps, "team-b", "https://hooks.example.org/b", now=NOW)
    secrets: Any = deps.secrets
    own = "agent-memory/reminder-webhook/team-b"
    assert webhook_key(secrets, deps.naming, "team-b", own) == secrets.current(own)
    # a record of team-b naming team-a's key (a raw item, a forgery) is refused: team-a's key is never read
    before = list(secrets.log)
    with pytest.raises(SecretNotSet, match="must be set again"):
        webhook_key(secrets, deps.naming, "team-b", "agent-memory/reminder-webhook/team-a")
    assert secrets.log == before


def _delivery(project_id: str) -> ReminderDelivery:
    return ReminderDelivery(project_id=project_id, reminder_id="r1", user_id="u1", text="回电话", recurring=False,
                            fired_at=NOW, scheduled_local="2026-03-02T17:00")


class _Sns:
    def __init__(self) -> None:
        self.published: list[dict[str, Any]] = []

    def publish(self, **kwargs: Any) -> None:
        self.published.append(kwargs)


@pytest.mark.parametrize(("hook", "key_error", "code"), [
    (("https://hooks.example.org/a", "agent-memory/reminder-webhook/team-a"), None, "WebhookKeyNotSet"),
    (("https://hooks.example.org/b", "agent-memory/reminder-webhook/team-b"), SecretUnreadable("x"),
     "WebhookKeyUnreadable"),
    (("http://hooks.example.org/b", "agent-memory/reminder-webhook/team-b"), None, "EgressRefused"),
])
def test_an_unusable_webhook_fails_the_firing_before_anything_is_sent(
    deps: WebhookDeps, hook: tuple[str, str], key_error: Exception | None, code: str
) -> None:
    # Given team-b's webhook record naming another project's key, an unreadable key, or a URL whose
    # form the policy refuses (its addresses: on connection, tests/integration/test_egress_http.py)
    put_reminder_webhook(deps, "team-b", "https://hooks.example.org/b", now=NOW)
    secrets: Any = deps.secrets
    if key_error is not None:
        secrets.unreadable.add("agent-memory/reminder-webhook/team-b")
    sns = _Sns()
    channel = SnsWebhookChannel("arn:aws:sns:eu-west-1:1:t", webhook_of=lambda _p: hook, sns_client=sns,
                                key_of=lambda p, n: webhook_key(secrets, deps.naming, p, n), policy=deps.policy)
    # When a reminder of team-b fires, Then it fails with a code that is not retried, before the topic
    with pytest.raises(ExternalServiceError) as failed:
        channel.deliver(_delivery("team-b"))
    assert (failed.value.code, failed.value.retryable) == (code, False)
    assert sns.published == []
