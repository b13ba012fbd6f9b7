"""DNS for the egress policy (port :class:`~agent_memory.ports.HostResolver`): its own module so
that a function checking URLs when they are configured (the admin function) imports neither
``requests`` nor ``urllib3`` (``agent_memory.adapters.egress`` does).

- :class:`SystemResolver`: the operating system's resolver (Lambda);
- :class:`StaticResolver`: a fixed table, for the local runtime, which has no network: ``localhost``
  and the names the operator lists in ``EGRESS_LOCAL_HOSTS``; every other name does not resolve, so
  no URL an admin types there ever makes a DNS query.
"""

from __future__ import annotations

import ipaddress
import socket


class SystemResolver:
    """:class:`~agent_memory.ports.HostResolver` on the operating system's resolver."""

    def resolve(self, host: str, port: int) -> list[str]:
        """The distinct addresses of ``getaddrinfo(host, port, SOCK_STREAM)``; ``[]`` when it fails."""
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            return []
        return list(dict.fromkeys(str(info[4][0]).split("%")[0] for info in infos))


class StaticResolver:
    """:class:`~agent_memory.ports.HostResolver` on a fixed table (see the module docstring).

    Args:
        hosts: ``{"name": ["address", ...]}`` (lower-case names); ``localhost`` is 127.0.0.1 and ::1
            unless the table names it.
    """

    def __init__(self, hosts: dict[str, list[str]] | None = None) -> None:
        self._hosts = {"localhost": ["127.0.0.1", "::1"], **(hosts or {})}

    @classmethod
    def parse(cls, table: str) -> StaticResolver:
        """The table of ``EGRESS_LOCAL_HOSTS``: ``name=address`` pairs separated by commas (a name
        given twice has each address), e.g. ``redcap.test=127.0.0.1,redcap.test=::1``.

        Raises:
            ValueError: an entry that is not ``name=address`` with an IP address.
        """
        hosts: dict[str, list[str]] = {}
        for raw in table.split(","):
            entry = raw.strip()
            if not entry:
                continue
            name, _, address = entry.partition("=")
            try:
                ipaddress.ip_address(address.strip())
            except ValueError:
                raise ValueError(f"EGRESS_LOCAL_HOSTS: {entry!r} is not name=address") from None
            hosts.setdefault(name.strip().lower().rstrip("."), []).append(address.strip())
        return cls(hosts)

    def resolve(self, host: str, port: int) -> list[str]:
        """The table's addresses of ``host``; ``[]`` for a name it does not list."""
        return list(self._hosts.get(host.lower().rstrip("."), []))


__all__ = ["StaticResolver", "SystemResolver"]
