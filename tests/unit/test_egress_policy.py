"""The egress policy's rules (agent_memory/domain/egress.py; docs/architecture.md, "Egress policy"):
every URL form and address class, the operator's allow-list, the local runtime, and the same
answer at configuration and connection time. Resolution is a fake: no DNS, no sockets."""

from __future__ import annotations

import ipaddress

import pytest

from agent_memory.domain.egress import METADATA_ADDRESSES, EgressPolicy, address_class
from agent_memory.domain.errors import EgressBlocked, EgressRefused, InvalidInput
from tests.fakes import FakeResolver

PUBLIC = "93.184.216.34"
STRICT = EgressPolicy()
HOSPITAL = EgressPolicy.parse("redcap.hospital.local, 10.20.0.0/16, fd12:3456::/48")
LOCAL = EgressPolicy(local_runtime=True)


def _resolver(**answers: list[str]) -> FakeResolver:
    return FakeResolver({host.replace("_", "."): [list(a)] for host, a in answers.items()})


def _refused(policy: EgressPolicy, url: str, resolver: FakeResolver | None = None) -> EgressRefused:
    with pytest.raises(EgressRefused) as caught:
        policy.check_url(url, (resolver or FakeResolver()).resolve, field="api_url")
    assert caught.value.reason.startswith("api_url: ")
    assert isinstance(caught.value, InvalidInput)  # HTTP 422 through the one error map
    return caught.value


@pytest.mark.parametrize(("url", "rule"), [
    ("http://redcap.example.org/api/", "scheme"),
    ("ftp://redcap.example.org/api/", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("https://good.example.org@evil.example/api/", "userinfo"),
    ("https://user:pw@redcap.example.org/api/", "userinfo"),
    ("https://evil.example\\@good.example.org/", "form"),
    ("https://redcap.example.org/api/ x", "form"),
    ("https://redcap.example.org/api/#top", "fragment"),
    ("https://redcap.example.org:0/api/", "port"),
    ("https://redcap.example.org:65536/api/", "port"),
    ("https://redcap.example.org:http/api/", "port"),
    ("https://2852039166/", "ipv4_spelling"),          # 169.254.169.254 in decimal
    ("https://0xa9fea9fe/", "ipv4_spelling"),          # ... in hexadecimal
    ("https://0251.0376.0251.0376/", "ipv4_spelling"),  # ... in octal
    ("https://0xa9.0xfe.0xa9.0xfe/", "ipv4_spelling"),
    ("https://169.254.43518/", "ipv4_spelling"),       # the two-part form
    ("https://127.1/", "ipv4_spelling"),
    ("https://010.0.0.1/", "ipv4_spelling"),            # a leading zero reads as octal elsewhere
    ("https://[fe80::1%25eth0]/", "host"),
    ("https://[not-an-ip]/", "host"),
    ("https://例子.测试/api/", "host"),
    ("https://bad_-.example..org/", "host"),
    ("https://metadata.google.internal/computeMetadata/v1/", "metadata"),
])
def test_url_forms_that_are_refused_before_any_lookup(url: str, rule: str) -> None:
    resolver = FakeResolver()
    assert _refused(STRICT, url, resolver).rule == rule
    assert resolver.lookups == []  # refused on its form: nothing resolved


@pytest.mark.parametrize(("host", "rule"), [
    ("169.254.169.254", "metadata"), ("[fd00:ec2::254]", "metadata"), ("100.100.100.200", "metadata"),
    ("192.0.0.192", "metadata"), ("168.63.129.16", "metadata"), ("169.254.170.2", "metadata"),
    ("[::ffff:169.254.169.254]", "metadata"), ("[::ffff:a9fe:a9fe]", "metadata"),
    ("[64:ff9b::a9fe:a9fe]", "metadata"),           # NAT64 to the metadata address
    ("[2002:a9fe:a9fe::1]", "metadata"),             # 6to4 carrying it
    ("169.254.1.1", "link_local"), ("[fe80::1]", "link_local"), ("[::ffff:169.254.1.1]", "link_local"),
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("[::1]", "loopback"), ("[::ffff:127.0.0.1]", "loopback"),
    ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"), ("[::]", "unspecified"),
    ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("[ff02::1]", "multicast"),
    ("240.0.0.1", "reserved"), ("255.255.255.255", "reserved"), ("[fec0::1]", "reserved"),
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("172.31.255.254", "private"), ("192.168.1.1", "private"),
    ("100.64.0.1", "private"), ("[fc00::1]", "private"), ("[fd12:3456::1]", "private"), ("198.18.0.1", "private"),
    ("[::ffff:10.0.0.1]", "private"),
])
def test_address_literals_of_each_refused_class(host: str, rule: str) -> None:
    assert _refused(STRICT, f"https://{host}/api/").rule == rule


@pytest.mark.parametrize("address", [*METADATA_ADDRESSES, "::ffff:169.254.169.254"])
def test_every_metadata_address_is_its_own_class(address: str) -> None:
    assert address_class(ipaddress.ip_address(address)) == "metadata"


@pytest.mark.parametrize("address", [PUBLIC, "8.8.8.8", "2606:4700::1111", "64:ff9b::5db8:d822",
                                     "::ffff:93.184.216.34"])
def test_public_addresses_have_no_class(address: str) -> None:
    assert address_class(ipaddress.ip_address(address)) is None


def test_a_public_https_url_is_accepted_and_normalised() -> None:
    resolver = _resolver(redcap_example_org=[PUBLIC])
    target = STRICT.check_url("HTTPS://Redcap.Example.ORG.:8443/api/?a=1", resolver.resolve)
    assert (target.url, target.host, target.port, target.addresses) == (
        "https://redcap.example.org:8443/api/?a=1", "redcap.example.org", 8443, (PUBLIC,))
    assert resolver.lookups == ["redcap.example.org"]


@pytest.mark.parametrize("port", [443, 8443, 22, 25, 65535])
def test_any_port_is_allowed_over_tls(port: int) -> None:
    resolver = _resolver(redcap_example_org=[PUBLIC])
    assert STRICT.check_url(f"https://redcap.example.org:{port}/api/", resolver.resolve).port == port


def test_a_name_resolving_to_a_refused_address_is_refused_without_quoting_the_address() -> None:
    refused = _refused(STRICT, "https://evil.example/api/", _resolver(evil_example=["169.254.169.254"]))
    assert refused.rule == "metadata" and "169.254" not in refused.reason  # no map of the operator's network


def test_one_refused_answer_among_public_ones_refuses_the_host() -> None:
    resolver = _resolver(mixed_example=[PUBLIC, "::ffff:169.254.169.254", "10.0.0.5"])
    assert _refused(STRICT, "https://mixed.example/", resolver).rule == "metadata"  # the strictest class


def test_a_name_that_does_not_resolve_is_refused() -> None:
    assert _refused(STRICT, "https://nowhere.example/api/").rule == "unresolvable"


def test_private_addresses_open_only_for_listed_hosts_and_networks() -> None:
    resolver = _resolver(intranet_example=["10.20.3.4"], other_example=["10.30.3.4"], v6_example=["fd12:3456::9"])
    assert HOSPITAL.check_url("https://intranet.example/api/", resolver.resolve).addresses == ("10.20.3.4",)
    assert HOSPITAL.check_url("https://v6.example/api/", resolver.resolve).addresses == ("fd12:3456::9",)
    assert HOSPITAL.check_url("https://10.20.250.1/api/", resolver.resolve).host == "10.20.250.1"
    assert _refused(HOSPITAL, "https://other.example/api/", resolver).rule == "private"
    assert _refused(HOSPITAL, "https://172.16.0.1/api/", resolver).rule == "private"


def test_a_listed_host_name_opens_its_private_answers_and_may_be_unresolvable_here() -> None:
    resolver = _resolver(redcap_hospital_local=["192.168.7.7"])
    assert HOSPITAL.check_url("https://redcap.hospital.local/api/", resolver.resolve).addresses == ("192.168.7.7",)
    # only resolvable inside the functions' VPC: accepted, checked again on every connection
    assert HOSPITAL.check_url("https://redcap.hospital.local/api/", FakeResolver().resolve).addresses == ()


def test_a_listed_host_never_opens_metadata_link_local_or_loopback() -> None:
    for address, rule in (("169.254.169.254", "metadata"), ("169.254.3.3", "link_local"), ("127.0.0.1", "loopback")):
        resolver = _resolver(redcap_hospital_local=[address])
        assert _refused(HOSPITAL, "https://redcap.hospital.local/api/", resolver).rule == rule
    assert _refused(HOSPITAL, "https://100.100.100.200/").rule == "metadata"  # inside 100.64/10, still refused


@pytest.mark.parametrize("entry", ["169.254.0.0/16", "0.0.0.0/0", "127.0.0.0/8", "8.8.8.0/24", "::/0", "bad host!",
                                   "fe80::/10", "224.0.0.0/4"])
def test_the_allow_list_refuses_entries_that_are_not_private_networks_or_host_names(entry: str) -> None:
    with pytest.raises(ValueError, match="EgressAllowPrivate"):
        EgressPolicy.parse(f"redcap.hospital.local,{entry}")


def test_the_allow_list_reads_hosts_and_cidrs_ignoring_blanks_and_case() -> None:
    policy = EgressPolicy.parse(" Redcap.Hospital.Local. , ,10.20.0.0/16,100.64.0.0/10 ")
    assert policy.allow_private_hosts == frozenset({"redcap.hospital.local"})
    assert [str(n) for n in policy.allow_private_networks] == ["10.20.0.0/16", "100.64.0.0/10"]


def test_the_local_runtime_opens_loopback_and_plain_http_to_it_only() -> None:
    resolver = _resolver(localhost=["127.0.0.1", "::1"], redcap_example_org=[PUBLIC])
    assert LOCAL.check_url("http://127.0.0.1:5000/api/", resolver.resolve).url == "http://127.0.0.1:5000/api/"
    assert LOCAL.check_url("http://localhost:5000/api/", resolver.resolve).addresses == ("127.0.0.1", "::1")
    assert LOCAL.check_url("https://[::1]:5000/api/", resolver.resolve).host == "::1"
    assert _refused(LOCAL, "http://redcap.example.org/api/", resolver).rule == "plain_http"
    assert _refused(LOCAL, "https://169.254.169.254/", resolver).rule == "metadata"
    assert _refused(LOCAL, "https://10.0.0.1/", resolver).rule == "private"


def test_dns_rebinding_passes_configuration_and_is_blocked_at_connection() -> None:
    # Given a resolver answering a public address when the URL is set, then the metadata address,
    resolver = FakeResolver({"rebind.example": [[PUBLIC], ["169.254.169.254"]]})
    target = STRICT.check_url("https://rebind.example/api/", resolver.resolve)
    assert target.addresses == (PUBLIC,)
    # when the connection resolves again, it is refused with the same rule, naming the host.
    with pytest.raises(EgressBlocked) as blocked:
        STRICT.check_addresses(target.host, resolver.resolve(target.host, target.port))
    assert (blocked.value.rule, blocked.value.host) == ("metadata", "rebind.example")


def test_connection_time_checks_the_peer_and_plain_http() -> None:
    STRICT.check_addresses("redcap.example.org", [PUBLIC])
    with pytest.raises(EgressBlocked, match="loopback"):
        STRICT.check_addresses("redcap.example.org", ["127.0.0.1"])
    LOCAL.check_addresses("localhost", ["127.0.0.1"], scheme="http")
    with pytest.raises(EgressBlocked) as blocked:
        LOCAL.check_addresses("redcap.example.org", [PUBLIC], scheme="http")
    assert blocked.value.rule == "plain_http"
    with pytest.raises(EgressBlocked) as metadata:
        LOCAL.check_addresses("metadata.google.internal", [PUBLIC])
    assert metadata.value.rule == "metadata"
