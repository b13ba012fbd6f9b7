"""The team console in a real browser, for its tests and `make console-screenshots`.

Until the AdminFunction serves the console (``GET /console/...``), the browser gets its static
files from ``functions/admin/static/console/`` through Playwright's request routing, ON THE LOCAL
STACK'S ORIGIN: the page at ``{base_url}/console/`` calls the real API of the running local stack
as the served page will (same origin, bearer token), under the Content-Security-Policy below
(only its own scripts and styles; no inline script, no eval; Trusted Types required with one
policy, ``console``, that admits only the vendored scripts: no code of the page can turn a string
into HTML or script). Every other request goes to the local stack untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

CONSOLE_DIR = Path(__file__).resolve().parents[2] / "functions" / "admin" / "static" / "console"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json; charset=utf-8",
}
#: The views in navigation order, and those a member sees (agent_memory/http/routes.py).
VIEWS = ("memory", "review", "history", "reminders", "patients", "sessions", "members", "feedback", "audit")
MEMBER_VIEWS = ("history", "reminders", "patients", "sessions", "members")


def console_csp(connect_extra: tuple[str, ...] = ()) -> str:
    """The console page's Content-Security-Policy; ``connect_extra``: e.g. the hosted-UI origin
    (its token endpoint is called from the page)."""
    connect = " ".join(("'self'", *connect_extra))
    return (
        f"default-src 'none'; script-src 'self'; style-src 'self'; connect-src {connect}; img-src 'self' data:; "
        "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
        "require-trusted-types-for 'script'; trusted-types console"
    )


def console_headers(path: Path, csp: str) -> dict[str, str]:
    """The response headers of one console file."""
    return {
        "Content-Type": CONTENT_TYPES.get(path.suffix, "application/octet-stream"),
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }


def serve_console(context: Any, base_url: str, *, config: dict[str, Any] | None = None,
                  connect_extra: tuple[str, ...] = ()) -> None:
    """Answer ``{base_url}/console/...`` in the browser ``context`` from :data:`CONSOLE_DIR`
    (``config``: the page's config.json instead of the file's)."""
    csp = console_csp(connect_extra)
    root = CONSOLE_DIR.resolve()

    def handler(route: Any) -> None:
        relative = urlparse(route.request.url).path.removeprefix("/console/") or "index.html"
        file = (root / relative).resolve()
        if relative == "config.json" and config is not None:
            body = json.dumps(config).encode()
        elif file.is_relative_to(root) and file.is_file():
            body = file.read_bytes()
        else:
            route.fulfill(status=404, body=b"not found", headers={"Content-Type": "text/plain"})
            return
        route.fulfill(status=200, body=body, headers=console_headers(file, csp))

    context.route(f"{base_url}/console/**", handler)


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium under Playwright (its own browser download is never used)."""
    if not CHROMIUM.exists():
        raise RuntimeError(
            f"{CHROMIUM} is missing: install Debian's chromium (make system-deps, from .ci/apt-packages)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_console(browser: Any, base_url: str, *, locale: str, timezone_id: str = "America/New_York",
                 config: dict[str, Any] | None = None, connect_extra: tuple[str, ...] = ()) -> tuple[Any, Any]:
    """A new browser context (``locale``: what navigator.languages says; the browser's zone is
    deliberately not the project's) with the console served, and a page on it. Returns
    ``(context, page)``; the page's errors and CSP violations are collected in ``page.problems``."""
    context = browser.new_context(locale=locale, timezone_id=timezone_id, viewport={"width": 1280, "height": 900})
    serve_console(context, base_url, config=config, connect_extra=connect_extra)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.problems = problems
    return context, page


def sign_in(page: Any, base_url: str, project_id: str, token: str) -> None:
    """Open the console and sign in with a token; waits for the navigation."""
    page.goto(f"{base_url}/console/")
    page.fill("#project", project_id)
    page.fill("#token", token)
    page.click("#signin")
    page.wait_for_selector("nav.views a[data-view]")


def show_view(page: Any, view: str, arg: str = "") -> None:
    """Go to a view (#/<view>[/<arg>]) and wait until it has loaded."""
    page.evaluate("(hash) => { location.hash = hash; }", f"#/{view}" + (f"/{arg}" if arg else ""))
    from playwright.sync_api import expect

    page.wait_for_selector(f'main[data-view="{view}"]')
    expect(page.locator("main .loading")).to_have_count(0, timeout=30_000)
