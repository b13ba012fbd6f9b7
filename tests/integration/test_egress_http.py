"""The egress policy on real connections (agent_memory/adapters/egress.py; docs/architecture.md,
"Egress policy"): a connection goes to the address the policy's resolver answered and checked, with
the URL's host kept for the Host header, TLS SNI and the certificate; a host that rebinds to a
listener posing as REDCap never gets the token; redirects are never followed; the reminder
webhook's POST goes through the same transport. Listeners run on 127.0.0.1; names resolve
through a fake resolver, never DNS."""

from __future__ import annotations

import datetime as dt
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests
from pydantic import SecretStr

from agent_memory.adapters.clinical.redcap import RedcapSources
from agent_memory.adapters.egress import guarded_session
from agent_memory.adapters.reminder_channel import SnsWebhookChannel
from agent_memory.domain.clinical import ClinicalSourceEgressRefused, ClinicalSourceRejected
from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.errors import EgressBlocked, ExternalServiceError
from agent_memory.domain.models import ClinicalDataSource
from agent_memory.domain.reminders import ReminderDelivery
from agent_memory.domain.secrets import RedcapTokenSecret, SecretNaming
from infra.local.demo.redcap_project import DEMO_TOKEN
from infra.local.redcap_server import demo_server
from tests.fakes import FakeResolver, InMemorySecrets

LOCAL = EgressPolicy(local_runtime=True)
NAMING = SecretNaming()


class _Listener:
    """An HTTP(S) listener on 127.0.0.1 that records every request (headers and body) and answers
    ``status`` with ``headers``."""

    def __init__(self, *, status: int = 200, headers: dict[str, str] | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.seen: list[dict[str, Any]] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                listener.seen.append({"host": self.headers["Host"], "body": body, "path": self.path})
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def listener() -> Iterator[_Listener]:
    server = _Listener()
    yield server
    server.close()


def test_the_connection_goes_to_the_checked_address_with_the_urls_host_kept(listener: _Listener) -> None:
    resolver = FakeResolver({"redcap.test": [["127.0.0.1"]]})
    session = guarded_session(LOCAL, resolver)
    response = session.post(f"http://redcap.test:{listener.port}/api/", data={"a": "1"}, timeout=5)
    assert response.status_code == 200
    assert listener.seen[0]["host"] == f"redcap.test:{listener.port}"  # the name, not the pinned address
    assert resolver.lookups == ["redcap.test"]


def test_a_host_rebinding_to_a_listener_posing_as_redcap_never_gets_the_token(listener: _Listener) -> None:
    # Given a name that resolved to a public address when the URL was set and now answers the listener,
    resolver = FakeResolver({"redcap.example.org": [["93.184.216.34"], ["127.0.0.1"]]})
    policy = EgressPolicy()
    assert policy.check_url("https://redcap.example.org/api/", resolver.resolve).addresses == ("93.184.216.34",)
    # when the token is posted (outside the local runtime),
    with pytest.raises(EgressBlocked) as blocked:
        guarded_session(policy, resolver).post(f"https://redcap.example.org:{listener.port}/api/",
                                               data={"token": DEMO_TOKEN}, timeout=5)
    # the connection is refused and the listener received nothing.
    assert blocked.value.rule == "loopback"
    assert listener.seen == []


def _self_signed(tmp_path: Path, name: str) -> tuple[ssl.SSLContext, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=1))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file


def test_tls_checks_the_certificate_against_the_urls_host_while_connecting_to_the_pinned_address(
    tmp_path: Path,
) -> None:
    context, ca = _self_signed(tmp_path, "redcap.test")
    server = _Listener(tls=context)
    try:
        resolver = FakeResolver({"redcap.test": [["127.0.0.1"]], "other.test": [["127.0.0.1"]]})
        session = guarded_session(LOCAL, resolver)
        ok = session.post(f"https://redcap.test:{server.port}/api/", data={"a": "1"}, verify=str(ca), timeout=5)
        assert ok.status_code == 200 and server.seen[0]["host"] == f"redcap.test:{server.port}"
        # the same address under another name fails the certificate check: SNI / hostname are the URL's
        with pytest.raises(requests.exceptions.SSLError):
            session.post(f"https://other.test:{server.port}/api/", data={"a": "1"}, verify=str(ca), timeout=5)
        assert len(server.seen) == 1
    finally:
        server.close()


def test_redcap_through_the_guarded_transport_with_a_service_owned_token() -> None:
    secrets = InMemorySecrets()
    with demo_server() as server:
        url = server.api_url.replace("127.0.0.1", "redcap.test")
        secrets.put(NAMING.redcap_token("p1"), RedcapTokenSecret(token=SecretStr(DEMO_TOKEN), api_url=url).to_secret())
        sources = RedcapSources(egress=LOCAL, resolver=FakeResolver({"redcap.test": [["127.0.0.1"]]}),
                                secrets=secrets, naming=NAMING)
        source = ClinicalDataSource(source="redcap", api_url=url, token_set=True)
        dd = sources.open(source, deadline=None, project_id="p1").dictionary()
        assert dd.fields and server.requests  # PyCap's calls went through the guarded session


def test_redcap_refused_by_the_policy_at_connection_is_an_egress_error_and_sends_nothing() -> None:
    secrets = InMemorySecrets()
    with demo_server() as server:
        url = server.api_url.replace("127.0.0.1", "redcap.example.org").replace("http:", "https:")
        secrets.put(NAMING.redcap_token("p1"), RedcapTokenSecret(token=SecretStr(DEMO_TOKEN), api_url=url).to_secret())
        sources = RedcapSources(egress=EgressPolicy(), resolver=FakeResolver({"redcap.example.org": [["127.0.0.1"]]}),
                                secrets=secrets, naming=NAMING)
        records = sources.open(ClinicalDataSource(source="redcap", api_url=url, token_set=True),
                               deadline=None, project_id="p1")
        with pytest.raises(ClinicalSourceEgressRefused, match="refused by the egress policy"):
            records.dictionary()
        assert server.requests == []


def test_a_redirect_is_never_followed_with_the_token() -> None:
    target = _Listener()
    try:
        redirecting = _Listener(status=307, headers={"Location": f"http://127.0.0.1:{target.port}/api/"})
        try:
            sources = RedcapSources(token_loader=lambda _name: DEMO_TOKEN, token_secret_prefix="agent-memory/redcap/")
            source = ClinicalDataSource(source="redcap", api_url=f"http://127.0.0.1:{redirecting.port}/api/",
                                        token_secret="agent-memory/redcap/p1")
            with pytest.raises(ClinicalSourceRejected, match="redirect"):
                sources.open(source, deadline=None).dictionary()
            assert len(redirecting.seen) == 1 and target.seen == []
        finally:
            redirecting.close()
    finally:
        target.close()


def test_the_reminder_webhook_posts_through_the_guarded_transport(listener: _Listener) -> None:
    delivery = ReminderDelivery(project_id="p1", reminder_id="r1", user_id="u1", text="call P005", recurring=False,
                                fired_at=dt.datetime(2026, 3, 2, tzinfo=dt.UTC), scheduled_local="2026-03-02T10:00")
    url = f"http://hooks.test:{listener.port}/r"

    def channel(policy: EgressPolicy) -> SnsWebhookChannel:
        return SnsWebhookChannel("", webhook_of=lambda _p: (url, "agent-memory/reminder-webhook/p1"),
                                 secret_of=lambda _n: "key", http=guarded_session(
                                     policy, FakeResolver({"hooks.test": [["127.0.0.1"]]})))

    assert channel(LOCAL).deliver(delivery) == ["webhook"]
    assert listener.seen[0]["host"] == f"hooks.test:{listener.port}"
    with pytest.raises(ExternalServiceError) as refused:
        channel(EgressPolicy()).deliver(delivery)
    assert (refused.value.code, refused.value.retryable) == ("EgressRefused", False)
    assert len(listener.seen) == 1



def test_the_system_resolver_answers_loopback_for_localhost() -> None:
    from agent_memory.adapters.resolver import SystemResolver

    answers = SystemResolver().resolve("localhost", 443)  # /etc/hosts: no DNS query leaves the machine
    assert answers and {"127.0.0.1", "::1"} & set(answers)
    assert len(answers) == len(set(answers))  # distinct addresses, one per family at most
