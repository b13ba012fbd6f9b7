"""DNS for the egress policy (port :class:`~agent_memory.ports.HostResolver`): its own module so
that a function checking URLs when they are configured (the admin function) imports neither
``requests`` nor ``urllib3`` (``agent_memory.adapters.egress`` does)."""

from __future__ import annotations

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


__all__ = ["SystemResolver"]
