"""The team console's static files, served by the admin function (``GET /console/...``).

The console (``functions/admin/static/console/``: README.md there) is static: HTML, CSS, ES modules,
the language files and the vendored libraries, no build step and no CDN at run time. The function
answers each file from its own folder with its type, an ``ETag`` (a ``304`` when the browser has it)
and the page's Content-Security-Policy: only the console's own scripts and styles, no inline script,
no eval, Trusted Types required, and the API on the same origin (plus the Cognito Hosted UI's
origin when the deployment has one, whose token endpoint the page calls).

``config.json`` is not a file: it says how to sign in, from the function's settings: the Hosted
UI's domain and app client id when the stack names one (``ConsoleHostedUiDomain``), else ``null``
(token sign-in only).

Only the file types the console is made of are served (:data:`CONTENT_TYPES`); a path outside the
folder can never be named (the path gate admits ids only, and a resolved path must stay inside).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from agent_memory.domain.errors import NotFound
from agent_memory.http.powertools import Response

#: The file types of the console, by suffix.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json; charset=utf-8",
}
#: Where ``/console`` and ``/admin`` (the editor the console replaced) send the browser: relative,
#: so a stage or base path in front of the API is kept.
CONSOLE_PAGE = "console/index.html"
CONFIG_FILE = "config.json"


def content_security_policy(hosted_ui_domain: str | None) -> str:
    """The console page's Content-Security-Policy (the Hosted UI's origin allowed for ``fetch``
    when the deployment has one)."""
    connect = "'self'" + (f" https://{hosted_ui_domain}" if hosted_ui_domain else "")
    return (
        f"default-src 'none'; script-src 'self'; style-src 'self'; connect-src {connect}; img-src 'self' data:; "
        "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
        "require-trusted-types-for 'script'; trusted-types console"
    )


@dataclass
class ConsoleSite:
    """The console's files under ``folder``, read once each and kept for the container's life.

    Args:
        folder: ``functions/admin/static/console``.
        hosted_ui_domain: the Cognito Hosted UI's domain (``<prefix>.auth.<region>.amazoncognito.com``)
            or None (token sign-in only).
        client_id: the Hosted UI's app client id (the JWT audience the API checks).
    """

    folder: Path
    hosted_ui_domain: str | None = None
    client_id: str | None = None
    _files: dict[str, tuple[bytes, str]] = field(default_factory=dict, repr=False)

    def config(self) -> dict[str, object]:
        """``config.json``: ``{"cognito": {"domain", "client_id"} | null}``."""
        cognito = (
            {"domain": self.hosted_ui_domain, "client_id": self.client_id}
            if self.hosted_ui_domain and self.client_id else None
        )
        return {"cognito": cognito}

    def headers(self, content_type: str, etag: str) -> dict[str, str]:
        """The headers of every console answer."""
        return {
            "Content-Type": content_type,
            "Content-Security-Policy": content_security_policy(self.hosted_ui_domain if self.client_id else None),
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cache-Control": "no-cache",
            "ETag": etag,
        }

    def _read(self, relative: str) -> tuple[bytes, str]:
        if relative == CONFIG_FILE:
            body = json.dumps(self.config(), separators=(",", ":")).encode("utf-8")
        else:
            root = self.folder.resolve()
            path = (root / relative).resolve()
            if path.suffix not in CONTENT_TYPES or not path.is_relative_to(root) or not path.is_file():
                raise NotFound(f"the console has no file {relative}")
            body = path.read_bytes()
        return body, f'"{hashlib.sha256(body).hexdigest()[:32]}"'

    def answer(self, relative: str, if_none_match: str | None) -> Response[str]:
        """The file at ``relative`` (``js/views/memory.js``), or 304 when ``if_none_match`` names
        its ETag.

        Raises:
            NotFound (404): no such console file, or not a type the console serves.
        """
        if relative not in self._files:
            self._files[relative] = self._read(relative)
        body, etag = self._files[relative]
        content_type = CONTENT_TYPES[Path(relative).suffix]
        if if_none_match and etag in {tag.strip() for tag in if_none_match.split(",")}:
            return Response(status_code=304, body="", headers=self.headers(content_type, etag))
        return Response(status_code=200, body=body.decode("utf-8"), headers=self.headers(content_type, etag),
                        compress=True)


def redirect(location: str) -> Response[str]:
    """A ``302`` to ``location`` (relative to the request's URL)."""
    return Response(status_code=302, body="", headers={"Location": location, "Cache-Control": "no-cache"})


__all__ = ["CONFIG_FILE", "CONSOLE_PAGE", "CONTENT_TYPES", "ConsoleSite", "content_security_policy", "redirect"]
