"""``python -m infra.local.webhook_sink``: a local receiver of reminder webhooks that checks each
POST's HMAC signature and prints it. Run it, then ``REMINDER_WEBHOOK_URL=http://127.0.0.1:8799/hook
make run`` (``PORT`` / ``REMINDER_WEBHOOK_KEY`` as on the server side; key default ``local-dev-key``)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = os.environ.get("REMINDER_WEBHOOK_KEY", "local-dev-key").encode("utf-8")


class Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        timestamp = self.headers.get("X-Reminder-Timestamp", "")
        expected = "sha256=" + hmac.new(KEY, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(expected, self.headers.get("X-Reminder-Signature", ""))
        print(f"webhook {'signature ok' if ok else 'BAD SIGNATURE'}: {body.decode('utf-8', 'replace')}", flush=True)
        self.send_response(204 if ok else 401)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


def main() -> int:
    port = int(os.environ.get("PORT", "8799"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Sink)
    print(f"reminder webhook sink on http://127.0.0.1:{port}/hook", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
