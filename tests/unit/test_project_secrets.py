"""Service-owned project secrets (agent_memory/domain/secrets.py; docs/architecture.md, "Project
secrets"): derived names, prefixes that cannot cover each other, values that never show, and the
REDCap adapter reading a token only for the URL it was given for (in-memory secrets)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr

from agent_memory.adapters.clinical.redcap import RedcapSources
from agent_memory.domain.clinical import (
    ClinicalSourceAuthError,
    ClinicalSourceEgressRefused,
    ClinicalSourceTokenMissing,
    ClinicalSourceTokenUnreadable,
)
from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.errors import InvalidInput, SecretUnreadable
from agent_memory.domain.models import ClinicalDataSource
from agent_memory.domain.secrets import RedcapTokenSecret, SecretNaming
from agent_memory.projects.clinical_source import ClinicalDataPatch
from agent_memory.reminders.webhook import ReminderWebhookSet
from tests.fakes import FakeResolver, InMemorySecrets

TOKEN = "0123456789ABCDEF0123456789ABCDEF"
URL = "https://redcap.example.org/api/"
NAMING = SecretNaming()


def test_names_derive_from_the_project_id_and_purpose() -> None:
    assert NAMING.redcap_token("demo-iit").name == "agent-memory/redcap/demo-iit"
    assert NAMING.reminder_webhook("demo-iit").name == "agent-memory/reminder-webhook/demo-iit"
    assert NAMING.channel("demo-iit", "wecom").name == "agent-memory/channel/demo-iit/wecom"
    ref = NAMING.redcap_token("p.1_x")
    assert (ref.project_id, ref.purpose) == ("p.1_x", "redcap_token")
    assert [r.purpose for r in NAMING.all_for("p1")] == ["redcap_token", "reminder_webhook", "channel"]


@pytest.mark.parametrize("project_id", ["../anthropic-api-key", "a/b", "", "-x", "x" * 129, "p 1", "p*"])
def test_a_project_id_never_reaches_outside_its_prefix(project_id: str) -> None:
    with pytest.raises(InvalidInput):
        NAMING.redcap_token(project_id)


@pytest.mark.parametrize(("kwargs", "covered"), [
    ({"redcap_token_prefix": "agent-memory/"}, "agent-memory/reminder-webhook/"),
    ({"channel_prefix": "agent-memory/redcap/"}, "agent-memory/redcap/"),
    ({"redcap_token_prefix": "agent-memory/", "reminder_webhook_prefix": "hooks/", "channel_prefix": "ch/",
      "reserved_names": ("agent-memory/anthropic-api-key",)}, "agent-memory/anthropic-api-key"),
])
def test_a_prefix_covering_another_or_the_api_key_is_refused(kwargs: dict[str, object], covered: str) -> None:
    with pytest.raises(ValueError, match="covers") as refused:
        SecretNaming(**kwargs)  # type: ignore[arg-type]
    assert covered in str(refused.value)


def test_a_prefix_must_end_with_a_slash() -> None:
    with pytest.raises(ValueError, match="ending with"):
        SecretNaming(redcap_token_prefix="agent-memory/redcap")


def test_secret_values_never_show_in_repr_str_or_dumps(caplog: pytest.LogCaptureFixture) -> None:
    stored = RedcapTokenSecret(token=SecretStr(TOKEN), api_url=URL)
    patch = ClinicalDataPatch(api_url=URL, token=SecretStr(TOKEN))
    hook = ReminderWebhookSet(project_id="p1", url=URL, signing_key=SecretStr("k" * 43),
                              set_at=datetime(2026, 1, 1, tzinfo=UTC))
    with caplog.at_level(logging.INFO):
        logging.getLogger("test").info("values %s %r %s", stored, patch, hook)
    for shown in (repr(stored), str(stored), stored.model_dump_json(), json.dumps(stored.model_dump(mode="json")),
                  repr(patch), patch.model_dump_json(), repr(hook), hook.model_dump_json(), caplog.text):
        assert TOKEN not in shown and "k" * 43 not in shown
    # only the adapter writing it sees the value
    assert json.loads(stored.to_secret().get_secret_value()) == {"token": TOKEN, "api_url": URL}
    assert hook.shown_once()["signing_key"] == "k" * 43


@pytest.mark.parametrize("raw", ["not json", '{"api_url": "x"}', json.dumps({"token": "short", "api_url": URL}),
                                 json.dumps([TOKEN])])
def test_a_stored_value_not_in_the_service_format_is_unreadable_without_quoting_it(raw: str) -> None:
    with pytest.raises(SecretUnreadable) as caught:
        RedcapTokenSecret.from_secret(SecretStr(raw))
    assert "short" not in str(caught.value)


# ------------------------------------------------------------------ the REDCap adapter's token
def _sources(secrets: InMemorySecrets, **kwargs: object) -> RedcapSources:
    return RedcapSources(token_secret_prefix="agent-memory/redcap/", secrets=secrets, naming=NAMING, **kwargs)  # type: ignore[arg-type]


def _owned(url: str = URL) -> ClinicalDataSource:
    return ClinicalDataSource(source="redcap", api_url=url, token_set=True,
                              token_updated_at=datetime(2026, 1, 1, tzinfo=UTC))


def _store(secrets: InMemorySecrets, project_id: str, url: str) -> None:
    secrets.put(NAMING.redcap_token(project_id), RedcapTokenSecret(token=SecretStr(TOKEN), api_url=url).to_secret())


def test_the_owned_token_is_read_for_the_url_it_was_given_for() -> None:
    secrets = InMemorySecrets()
    _store(secrets, "p1", URL)
    records = _sources(secrets).open(_owned(), deadline=None, project_id="p1")
    assert records._project._token == TOKEN  # noqa: SLF001 - what PyCap would send
    assert secrets.log == [("put", "agent-memory/redcap/p1"), ("read", "agent-memory/redcap/p1")]


def test_a_token_for_another_url_is_never_used_even_after_a_fresh_read() -> None:
    secrets = InMemorySecrets()
    _store(secrets, "p1", "https://old.example.org/api/")
    with pytest.raises(ClinicalSourceTokenMissing, match="not set for this API URL"):
        _sources(secrets).open(_owned(), deadline=None, project_id="p1")
    assert [op for op, _ in secrets.log].count("read") == 2  # the cache was bypassed once


def test_another_projects_token_is_never_read() -> None:
    secrets = InMemorySecrets()
    _store(secrets, "demo-iit", URL)
    with pytest.raises(ClinicalSourceTokenMissing, match="not set"):
        _sources(secrets).open(_owned(), deadline=None, project_id="attacker")
    assert ("read", "agent-memory/redcap/attacker") in secrets.log
    assert ("read", "agent-memory/redcap/demo-iit") not in secrets.log


def test_missing_and_unreadable_tokens_are_their_own_errors_never_credentials_refused() -> None:
    secrets = InMemorySecrets(unreadable={"agent-memory/redcap/p2"})
    with pytest.raises(ClinicalSourceTokenMissing) as missing:
        _sources(secrets).open(_owned(), deadline=None, project_id="p1")
    with pytest.raises(ClinicalSourceTokenUnreadable) as unreadable:
        _sources(secrets).open(_owned(), deadline=None, project_id="p2")
    for error in (missing.value, unreadable.value):
        assert not isinstance(error, ClinicalSourceAuthError)
    secrets.values["agent-memory/redcap/p3"] = "plain-not-json"
    with pytest.raises(ClinicalSourceTokenUnreadable):
        _sources(secrets).open(_owned(), deadline=None, project_id="p3")


def test_a_source_with_neither_token_nor_legacy_secret_is_not_set() -> None:
    source = ClinicalDataSource(source="redcap", api_url=URL)
    with pytest.raises(ClinicalSourceTokenMissing):
        _sources(InMemorySecrets()).open(source, deadline=None, project_id="p1")


def test_with_the_egress_policy_a_refused_url_is_an_egress_error_before_the_token_is_read() -> None:
    secrets = InMemorySecrets()
    sources = _sources(secrets, egress=EgressPolicy(), resolver=FakeResolver())
    for url, rule in (("http://redcap.example.org/api/", "https"), ("https://2852039166/api/", "a.b.c.d")):
        with pytest.raises(ClinicalSourceEgressRefused, match="refused by the egress policy") as refused:
            sources.open(_owned(url), deadline=None, project_id="p1")
        assert rule in str(refused.value)
    assert secrets.log == []  # no token was read for a refused URL
