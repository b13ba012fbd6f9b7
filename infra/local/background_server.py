"""A stdlib ``ThreadingHTTPServer`` serving from a daemon thread, as a context manager: the local
stand-ins for outside services (the WeCom emulator; tests' own endpoints). Local only."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

#: How often ``serve_forever`` looks for a shutdown (seconds): a stop takes at most this long.
POLL_INTERVAL_S = 0.05


class BackgroundServer:
    """Serves ``handler`` on ``host:port`` (0: a free port) from a thread while started.

    Usage::

        with BackgroundServer(Handler, name="sink") as server:
            requests.get(server.origin + "/path")
    """

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], *, name: str, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self._name = name
        self._thread: threading.Thread | None = None

    @property
    def origin(self) -> str:
        """``http://host:port`` of the listening socket."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL_S},
                                        name=self._name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
