"""The egress policy: which URLs a project admin may make the service call, and which addresses a
connection to them may reach (docs/architecture.md, "Egress policy").

One policy for every URL a project admin can set (the REDCap ``api_url``, the reminder webhook, a
messenger's endpoint). It is applied twice:

- when the URL is configured (:meth:`EgressPolicy.check_url`: the URL's form, then every address
  its host resolves to) -> :class:`~agent_memory.domain.errors.EgressRefused` (HTTP 422);
- on every new connection (:meth:`EgressPolicy.check_addresses`, called by the HTTP transport of
  ``agent_memory.adapters.egress`` with the addresses it is about to connect to and then with the
  peer it reached) -> :class:`~agent_memory.domain.errors.EgressBlocked`, so a DNS answer that
  changed since (DNS rebinding) reaches nothing.

Address classes (Python's :mod:`ipaddress`, which follows the IANA IPv4 / IPv6 Special-Purpose
Address Registries, RFC 6890), strictest first; IPv4-mapped (``::ffff:a.b.c.d``, RFC 4291 2.5.5.2),
NAT64 (``64:ff9b::/96``, RFC 6052) and 6to4 (``2002::/16``, RFC 3056) IPv6 addresses are judged by
the IPv4 address they carry:

- ``metadata`` (:data:`METADATA_ADDRESSES`, :data:`METADATA_HOSTS`): never;
- ``link_local`` 169.254.0.0/16, fe80::/10; ``unspecified`` 0.0.0.0/8, ::; ``multicast``
  224.0.0.0/4, ff00::/8; ``reserved`` 240.0.0.0/4, 255.255.255.255, ::/8 and the other reserved
  IPv6 blocks, fec0::/10 (deprecated site-local): never;
- ``loopback`` 127.0.0.0/8, ::1: only in the local runtime (``local_runtime``);
- ``private`` every other address that is not globally reachable (10/8, 172.16/12, 192.168/16,
  100.64/10 shared / CGNAT, fc00::/7, documentation and benchmarking blocks, ...): only when the
  operator lists the address (a CIDR) or the URL's host name in ``allow_private``.

URL form: ``https`` only (plain ``http`` only in the local runtime and only to loopback); no
userinfo (``https://good@evil/``); no fragment; a port is allowed (1-65535: hospital servers run on
8443 and the like; the connection is TLS with the certificate checked against the host name before
any byte of the request is sent, so a port reaches nothing a TLS handshake does not); the host is a
canonical dotted-quad IPv4, a bracketed IPv6 or an ASCII host name: decimal, octal and hexadecimal
IPv4 spellings (``https://2852039166/``, ``0xa9.0xfe.0xa9.0xfe``, ``0251.0376.0251.0376``) are
refused rather than guessed.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from agent_memory.domain.errors import EgressBlocked, EgressRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: ``resolve(host, port) -> addresses`` (IP address strings; ``[]`` = the name does not resolve).
Resolve = Callable[[str, int], Sequence[str]]

#: Instance-metadata and cloud host-agent addresses, refused by name of their class even where
#: another class would refuse them too (the reason is clearer). Sources: AWS EC2 User Guide,
#: "Access instance metadata" (169.254.169.254, [fd00:ec2::254] on Nitro); Amazon ECS Developer
#: Guide, "Task IAM role" (169.254.170.2); Amazon EKS User Guide, "Pod Identity" (169.254.170.23,
#: [fd00:ec2::23]); Google Compute Engine, "About VM metadata" (169.254.169.254,
#: metadata.google.internal, [fd20:ce::254]); Microsoft Azure, "What is IP address 168.63.129.16"
#: (WireServer, a public address); Alibaba Cloud ECS, "Instance metadata" (100.100.100.200);
#: Oracle Cloud Infrastructure, "Getting instance metadata" (169.254.169.254; 192.0.0.192 on
#: older images); Tencent Cloud CVM, "Instance metadata" (169.254.0.23).
METADATA_ADDRESSES: dict[str, str] = {
    "169.254.169.254": "instance metadata (AWS, GCP, Azure, OCI, OpenStack, DigitalOcean)",
    "169.254.170.2": "Amazon ECS task metadata and credentials",
    "169.254.170.23": "Amazon EKS Pod Identity agent",
    "169.254.0.23": "Tencent Cloud instance metadata",
    "fd00:ec2::254": "AWS instance metadata over IPv6",
    "fd00:ec2::23": "Amazon EKS Pod Identity agent over IPv6",
    "fd20:ce::254": "Google Compute Engine metadata over IPv6",
    "168.63.129.16": "Azure WireServer",
    "100.100.100.200": "Alibaba Cloud instance metadata",
    "192.0.0.192": "Oracle Cloud instance metadata",
}
#: Host names of metadata services (refused before any resolution).
METADATA_HOSTS = frozenset({
    "metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal",
    "metadata.tencentyun.com", "metadata.azure.com",
})
_METADATA = frozenset(ipaddress.ip_address(a) for a in METADATA_ADDRESSES)
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")  # RFC 1122 3.2.1.3: "this host on this network"
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix

#: Address classes the policy refuses, strictest first; ``loopback`` and ``private`` may be opened
#: (local runtime; the operator's allow-list), the others never.
CLASSES = ("metadata", "link_local", "unspecified", "multicast", "loopback", "reserved", "private")
_DESCRIBED = {
    "metadata": "an instance-metadata address",
    "link_local": "a link-local address",
    "unspecified": "an unspecified address",
    "multicast": "a multicast address",
    "reserved": "a reserved address",
    "loopback": "a loopback address",
    "private": "a private address not in the operator's allow-list (EgressAllowPrivate)",
}
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
MAX_URL_CHARS = 2048


def address_class(address: IPAddress) -> str | None:
    """The class (one of :data:`CLASSES`) of an address the policy restricts; None for a public one.

    IPv4-mapped, NAT64 and 6to4 IPv6 addresses are judged by the IPv4 address they carry (a 6to4
    address is at least ``private``: the relay is not ours to trust)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or (ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
                                           if address in _NAT64 else None)
        if embedded is not None:
            return address_class(embedded)
        if address.sixtofour is not None:
            return address_class(address.sixtofour) or "private"
        if address.scope_id:
            address = ipaddress.IPv6Address(address.compressed.split("%")[0])
    if address in _METADATA:
        return "metadata"
    if address.is_link_local:
        return "link_local"
    if address.is_unspecified or address in _THIS_NETWORK:
        return "unspecified"
    if address.is_multicast:
        return "multicast"
    if address.is_loopback:
        return "loopback"
    if address.is_reserved or (isinstance(address, ipaddress.IPv6Address) and address.is_site_local):
        return "reserved"
    if not address.is_global:
        return "private"
    return None


@dataclass(frozen=True)
class EgressTarget:
    """A URL the policy accepted: ``url`` normalised (lower-case scheme and host, the port only when
    the URL names one, path and query kept), ``host`` (IPv6 without brackets), ``port`` and the
    addresses it resolved to when checked (empty for an allow-listed name that did not resolve)."""

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]


@dataclass(frozen=True)
class EgressPolicy:
    """The operator's egress policy.

    Attributes:
        allow_private_hosts: host names (lower-case, exact) whose ``private`` addresses are allowed.
        allow_private_networks: networks whose ``private`` addresses are allowed.
        local_runtime: the local runtime (``make run``): loopback allowed, plain http to it too.
    """

    allow_private_hosts: frozenset[str] = frozenset()
    allow_private_networks: tuple[IPNetwork, ...] = ()
    local_runtime: bool = False

    @classmethod
    def parse(cls, allow_private: str, *, local_runtime: bool = False) -> EgressPolicy:
        """The policy from the ``EgressAllowPrivate`` template parameter: comma-separated host names
        and CIDRs (``redcap.hospital.local, 10.20.0.0/16``); blanks ignored.

        Raises:
            ValueError: an entry that is neither a host name nor a network, or a network holding a
                class that can never be opened (e.g. ``169.254.0.0/16``, ``0.0.0.0/0``).
        """
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        for raw in allow_private.split(","):
            entry = raw.strip().lower().rstrip(".")
            if not entry:
                continue
            try:
                network = ipaddress.ip_network(entry, strict=False)
            except ValueError:
                if not all(_LABEL.match(label) for label in entry.split(".")) or len(entry) > 253:
                    raise ValueError(f"EgressAllowPrivate: {raw.strip()!r} is neither a host name nor a CIDR") from None
                hosts.add(entry)
                continue
            if not all(address_class(a) == "private" for a in (network[0], network[-1])):
                raise ValueError(f"EgressAllowPrivate: {raw.strip()!r} is not a private network")
            networks.append(network)
        return cls(frozenset(hosts), tuple(networks), local_runtime)

    # ------------------------------------------------------------ configuration time
    def check_url(self, url: str, resolve: Resolve, *, field: str = "url") -> EgressTarget:
        """Check a URL when a project admin sets it: its form, then every address its host resolves
        to (all must pass). An allow-listed host name that does not resolve here is accepted (it
        may resolve only inside the functions' VPC); it is checked again on every connection.

        Raises:
            EgressRefused: the rule broken, in a reason prefixed with ``field`` (HTTP 422).
        """
        scheme, host, port, normalised = self.check_form(url, field=field)
        literal = _literal(host)
        if literal is not None:
            addresses: tuple[str, ...] = (str(literal),)
        else:
            addresses = tuple(dict.fromkeys(resolve(host, port)))
            if not addresses and host not in self.allow_private_hosts:
                raise EgressRefused(f"{field}: the host {host} does not resolve", "unresolvable")
        try:
            self.check_addresses(host, addresses, scheme=scheme)
        except EgressBlocked as exc:
            raise EgressRefused(f"{field}: {exc.reason}", exc.rule) from None
        return EgressTarget(url=normalised, scheme=scheme, host=host, port=port, addresses=addresses)

    def check_form(self, url: str, *, field: str = "url") -> tuple[str, str, int, str]:
        """The rules that need no DNS: ``(scheme, host, port, normalised url)``.

        Raises:
            EgressRefused: scheme, userinfo, fragment, port, host form (HTTP 422).
        """
        def refuse(why: str, rule: str) -> EgressRefused:
            return EgressRefused(f"{field}: {why}", rule)

        if len(url) > MAX_URL_CHARS or any(c.isspace() or ord(c) < 0x20 or c in "\\\x7f" for c in url):
            raise refuse("must be a URL without spaces, control characters or backslashes", "form")
        try:
            parts = urlsplit(url)
        except ValueError:  # e.g. a bracketed host that is no IPv6 address
            raise refuse("has an invalid host", "host") from None
        scheme = parts.scheme.lower()
        if scheme not in ("https", "http"):
            raise refuse("must be an https URL", "scheme")
        if "@" in parts.netloc:
            raise refuse("must not carry a user name or password (user@host)", "userinfo")
        if parts.fragment or url.endswith("#"):
            raise refuse("must not carry a fragment (#...)", "fragment")
        try:
            port = parts.port if parts.port is not None else (443 if scheme == "https" else 80)
        except ValueError:
            raise refuse("has an invalid port", "port") from None
        if not 1 <= port <= 65535:
            raise refuse("has an invalid port", "port")
        host = _host(parts.netloc, parts.hostname or "", refuse)
        if host in METADATA_HOSTS:
            raise refuse(f"the host {host} is an instance-metadata service", "metadata")
        if scheme == "http" and not self.local_runtime:
            raise refuse("must be an https URL (plain http only to loopback in the local runtime)", "scheme")
        shown = f"[{host}]" if ":" in host else host
        netloc = shown if parts.port is None else f"{shown}:{port}"
        normalised = f"{scheme}://{netloc}{parts.path or '/'}" + (f"?{parts.query}" if parts.query else "")
        return scheme, host, port, normalised

    # ------------------------------------------------------------ connection time
    def check_addresses(self, host: str, addresses: Iterable[str], *, scheme: str = "https") -> None:
        """Check the addresses a connection to ``host`` would reach (every DNS answer before
        connecting; the peer's address once connected). All must pass; plain ``http`` needs every
        one of them to be loopback (local runtime only).

        Raises:
            EgressBlocked: the strictest refused class among them (nothing may be sent).
        """
        host = host.lower().rstrip(".")
        if host in METADATA_HOSTS:
            raise EgressBlocked(f"the host {host} is an instance-metadata service", "metadata", host)
        parsed = [ipaddress.ip_address(text) for text in addresses]
        refused = [k for k in (self._refused_class(host, a) for a in parsed) if k is not None]
        if refused:
            worst = min(refused, key=CLASSES.index)
            raise EgressBlocked(f"the host {host} is or resolves to {_DESCRIBED[worst]}", worst, host)
        if scheme != "https" and not (parsed and all(address_class(a) == "loopback" for a in parsed)):
            raise EgressBlocked(f"plain http is allowed only to loopback, and {host} is not", "plain_http", host)

    def _refused_class(self, host: str, address: IPAddress) -> str | None:
        klass = address_class(address)
        if klass == "loopback" and self.local_runtime:
            return None
        if klass == "private" and (host in self.allow_private_hosts
                                   or any(address in n for n in self.allow_private_networks
                                          if n.version == address.version)):
            return None
        return klass


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _host(netloc: str, hostname: str, refuse: Callable[[str, str], EgressRefused]) -> str:
    """The URL's host, lower-case, without a trailing dot (IPv6 without brackets)."""
    if netloc.startswith("["):
        literal = _literal(hostname)
        if literal is None or "%" in hostname or literal.version != 6:
            raise refuse("has an invalid IPv6 address", "host")
        return str(literal)
    host = hostname.rstrip(".")
    if not host or not host.isascii():
        raise refuse("must name its host in ASCII (an internationalised name in its xn-- form)", "host")
    labels = host.split(".")
    if _NUMERIC_LABEL.match(labels[-1]):  # the WHATWG URL standard reads such a host as IPv4
        if not isinstance(_literal(host), ipaddress.IPv4Address):  # ipaddress takes a.b.c.d only
            raise refuse("writes an IPv4 address in a decimal, octal or hexadecimal form; use a.b.c.d", "ipv4_spelling")
        return host
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise refuse("has an invalid host name", "host")
    return host


__all__ = [
    "CLASSES", "METADATA_ADDRESSES", "METADATA_HOSTS", "EgressPolicy", "EgressTarget", "Resolve", "address_class",
]
