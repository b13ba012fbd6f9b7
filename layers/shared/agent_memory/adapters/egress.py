"""The HTTP transport of every call to a URL a project admin set (docs/architecture.md, "Egress
policy"): a ``requests`` session whose connections check the egress policy on the address they
are about to reach and on the peer they reached.

How the check binds to the connection: urllib3 (under ``requests``) opens every TCP connection in
``HTTPConnection._new_conn``. :class:`GuardedHTTPAdapter` mounts connection classes whose
``_new_conn`` resolves the host ONCE through the :class:`~agent_memory.ports.HostResolver`, checks
every answer (:meth:`EgressPolicy.check_addresses`), connects to a checked address itself (no
second lookup a rebinding DNS could answer differently), and checks the socket's peer address
before returning it. Host header, TLS SNI and the certificate check still use the URL's host name
(urllib3 takes them from ``self.host``, which is left alone). A refusal raises
:class:`~agent_memory.domain.errors.EgressBlocked` before a byte is sent; it is not an ``OSError``,
so urllib3 and requests neither retry nor wrap it.

This is the design of the Advocate library (a ``requests`` wrapper against SSRF, which validated
addresses in its own ``_new_conn``); Advocate itself is unmaintained since 2020 and requires
urllib3 < 2, so the subclass is ours, on the pinned urllib3 (``tests/unit/test_egress_transport.py``
guards the urllib3 internals it relies on). The session also ignores the environment's proxies and
``.netrc`` (``trust_env = False``) and refuses proxies outright: a proxy would be the peer instead of
the host the policy checked.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import TYPE_CHECKING, Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util.connection import create_connection

from agent_memory.domain.egress import EgressPolicy
from agent_memory.domain.errors import EgressBlocked

if TYPE_CHECKING:
    from agent_memory.ports import HostResolver

# Imported by the functions that call admin-set URLs only (the chat's REDCap client, the reminder
# webhook): requests and urllib3 stay out of the other functions' cold start.


def guarded_session(policy: EgressPolicy, resolver: HostResolver) -> requests.Session:
    """A ``requests`` session whose every connection obeys ``policy`` (see module docstring).

    Redirects are the caller's to refuse (``allow_redirects=False``): a redirect to another host
    would reach an address this policy allows but the configured URL never named.
    """
    session = requests.Session()
    session.trust_env = False
    adapter = GuardedHTTPAdapter(policy, resolver)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


class GuardedHTTPAdapter(HTTPAdapter):
    """A ``requests`` transport adapter whose urllib3 pools open only guarded connections."""

    def __init__(self, policy: EgressPolicy, resolver: HostResolver, **kwargs: Any) -> None:
        self._policy = policy
        self._resolver = resolver
        super().__init__(**kwargs)  # calls init_poolmanager

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        """requests' pool manager, its pools making the guarded connections of :func:`_pool_classes`."""
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)
        self.poolmanager.pool_classes_by_scheme = _pool_classes(self._policy, self._resolver)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        """Refused: through a proxy, the peer would be the proxy and not the host the policy checks."""
        raise EgressBlocked("calls through a proxy are refused by the egress policy", "proxy", proxy)


def _pool_classes(policy: EgressPolicy, resolver: HostResolver) -> dict[str, type[Any]]:
    """urllib3 pool classes (http, https) whose ``ConnectionCls`` checks ``policy``."""

    class _Http(_GuardedConnection, HTTPConnection):
        _policy, _resolver, _scheme = policy, resolver, "http"

    class _Https(_GuardedConnection, HTTPSConnection):
        _policy, _resolver, _scheme = policy, resolver, "https"

    class _HttpPool(HTTPConnectionPool):
        ConnectionCls = _Http

    class _HttpsPool(HTTPSConnectionPool):
        ConnectionCls = _Https

    return {"http": _HttpPool, "https": _HttpsPool}


class _GuardedConnection:
    """Mixin before urllib3's ``HTTPConnection`` / ``HTTPSConnection`` (see module docstring)."""

    _policy: EgressPolicy
    _resolver: HostResolver
    _scheme: str
    host: str
    port: int
    timeout: Any
    source_address: Any
    socket_options: Any

    def _new_conn(self) -> socket.socket:
        """Resolve once, check every answer, connect to a checked address, check the peer.

        Raises:
            EgressBlocked: an answer or the peer is refused (nothing was sent).
            urllib3 ``NameResolutionError`` / ``ConnectTimeoutError`` / ``NewConnectionError``: as
                urllib3's own ``_new_conn`` (requests turns them into ``ConnectionError`` / ``Timeout``).
        """
        host = self.host
        addresses = [host] if _is_address(host) else self._resolver.resolve(host, self.port)
        if not addresses:
            raise NameResolutionError(host, self, socket.gaierror(socket.EAI_NONAME, "does not resolve"))  # type: ignore[arg-type]
        self._policy.check_addresses(host, addresses, scheme=self._scheme)
        failure: OSError | None = None
        for address in addresses:
            try:
                sock = create_connection((address, self.port), self.timeout, source_address=self.source_address,
                                         socket_options=self.socket_options)
            except TimeoutError as exc:
                raise ConnectTimeoutError(self, f"Connection to {host} timed out ({self.timeout})") from exc
            except OSError as exc:
                failure = exc
                continue
            try:
                self._policy.check_addresses(host, [str(sock.getpeername()[0]).split("%")[0]], scheme=self._scheme)
            except EgressBlocked:
                sock.close()
                raise
            return sock
        raise NewConnectionError(self, f"Failed to establish a new connection: {failure}")  # type: ignore[arg-type]


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


__all__ = ["GuardedHTTPAdapter", "guarded_session"]
