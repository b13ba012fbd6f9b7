"""The guarded HTTP transport (agent_memory/adapters/egress.py) refuses before any socket opens:
these tests run with sockets disabled (tests/unit/conftest.py), so a connection attempt would fail
the test with pytest-socket's error instead of the policy's. Also guards the library internals the
transport and the PyCap subclass rely on (urllib3 and PyCap are pinned in requirements.txt)."""

from __future__ import annotations

import inspect

import pytest
import requests

from agent_memory.adapters.egress import GuardedHTTPAdapter, guarded_session
from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.errors import EgressBlocked
from tests.fakes import FakeResolver

TOKEN = "0123456789ABCDEF0123456789ABCDEF"


def _post(session: requests.Session, url: str) -> None:
    session.post(url, data={"token": TOKEN}, timeout=2, allow_redirects=False)


def test_dns_rebinding_to_the_metadata_address_is_blocked_before_a_socket_opens() -> None:
    # Given a host that answered a public address when it was configured and answers the metadata address now,
    resolver = FakeResolver({"redcap.example.org": [["169.254.169.254"]]})
    session = guarded_session(EgressPolicy(), resolver)
    # When the token is posted to it, the connection is refused on the fresh answer: nothing is sent.
    with pytest.raises(EgressBlocked) as blocked:
        _post(session, "https://redcap.example.org/api/")
    assert (blocked.value.rule, blocked.value.host) == ("metadata", "redcap.example.org")
    assert resolver.lookups == ["redcap.example.org"]  # resolved once, by the policy's resolver


@pytest.mark.parametrize(("url", "answers", "rule"), [
    ("https://169.254.169.254/latest/meta-data/", None, "metadata"),
    ("https://[::ffff:169.254.169.254]/", None, "metadata"),
    ("https://127.0.0.1:9001/2018-06-01/runtime/invocation/next", None, "loopback"),  # the Lambda runtime API
    ("https://10.0.0.8/api/", None, "private"),
    ("https://mixed.example/api/", ["93.184.216.34", "10.0.0.8"], "private"),
    ("http://redcap.example.org/api/", ["93.184.216.34"], "plain_http"),
])
def test_each_refused_peer_is_blocked_with_its_rule(url: str, answers: list[str] | None, rule: str) -> None:
    host = url.split("/")[2].split(":")[0] if answers else ""
    resolver = FakeResolver({host: [answers]} if answers else {})
    with pytest.raises(EgressBlocked) as blocked:
        _post(guarded_session(EgressPolicy(), resolver), url)
    assert blocked.value.rule == rule


def test_a_name_that_does_not_resolve_is_a_connection_error_not_a_policy_refusal() -> None:
    with pytest.raises(requests.ConnectionError):
        _post(guarded_session(EgressPolicy(), FakeResolver()), "https://nowhere.example/api/")


def test_proxies_are_refused_and_the_environment_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    session = guarded_session(EgressPolicy(), FakeResolver({"redcap.example.org": [["169.254.169.254"]]}))
    assert session.trust_env is False  # neither HTTPS_PROXY nor .netrc credentials apply
    with pytest.raises(EgressBlocked, match="metadata"):  # no proxy taken: the host itself was checked
        _post(session, "https://redcap.example.org/api/")
    with pytest.raises(EgressBlocked) as blocked:
        session.post("https://redcap.example.org/api/", proxies={"https": "http://proxy.example:3128"}, timeout=2)
    assert blocked.value.rule == "proxy"


def test_both_schemes_are_mounted_on_the_guarded_adapter() -> None:
    session = guarded_session(EgressPolicy(), FakeResolver())
    assert isinstance(session.get_adapter("https://x.example/"), GuardedHTTPAdapter)
    assert isinstance(session.get_adapter("http://x.example/"), GuardedHTTPAdapter)


def test_the_urllib3_internals_the_transport_overrides_are_still_there() -> None:
    # urllib3 opens every connection in HTTPConnection._new_conn and takes SNI / Host from `host`;
    # the guarded classes replace _new_conn only (agent_memory/adapters/egress.py).
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.poolmanager import PoolManager

    source = inspect.getsource(HTTPConnection._new_conn)
    assert "create_connection(" in source and "self._dns_host" in source
    assert "server_hostname: str = self.host" in inspect.getsource(HTTPSConnection.connect)
    assert "pool_classes_by_scheme" in inspect.getsource(PoolManager.__init__)


def test_the_pycap_internals_the_guarded_project_repeats_are_still_there() -> None:
    # PyCap 2.7 posts through _RCRequest(url, payload, config, session=<module session>) in Base._call_api;
    # agent_memory.adapters.clinical.redcap._project_on repeats that call with our session.
    from redcap.methods.base import Base
    from redcap.request import _RCRequest

    assert "session" in inspect.signature(_RCRequest.__init__).parameters
    source = inspect.getsource(Base._call_api)
    assert "_RCRequest(url=self.url, payload=payload, config=config)" in source
    assert "rcr.execute(" in source and "**self._request_kwargs" in source
