"""An HTTP(S) listener on 127.0.0.1 that records every request: a webhook receiver, or a server
posing as REDCap to see which tokens reach it."""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs


class Listener:
    """Records every POST (``seen``: host header, path, body) and answers ``status`` with ``headers``
    and a ``{}`` body; ``tls`` wraps it in TLS. Use ``close()`` when done."""

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

    @property
    def api_url(self) -> str:
        """The listener as a REDCap API URL (plain http to loopback: the local runtime's policy)."""
        return f"http://127.0.0.1:{self.port}/api/"

    def tokens(self) -> list[str]:
        """The ``token`` form fields of the requests seen (what a REDCap API call carries)."""
        return [token for request in self.seen
                for token in parse_qs(request["body"].decode("utf-8", "replace")).get("token", [])]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


__all__ = ["Listener"]
